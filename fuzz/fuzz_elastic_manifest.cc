// libFuzzer target for the elastic manifest validator and the slicer
// (formats 1.1, 1.2: groups, segments, product dimensions "A*B"; seeds
// v2_product*.pb): a hostile boltpack.v1.ElasticManifest (protobuf wire
// bytes) against a fixed two-layer MoE. Whatever the validator accepts must
// give consistent slices for every budget, each slice's manifest must itself
// be valid (fuzz/elastic_fuzz_model.h), and cutting the model's real bytes
// in place must give what the gathering cutter gives: the source cells the
// plan names (fuzz/elastic_fuzz_slicer.h).
#include <cstddef>
#include <cstdint>

#include "boltpack_proto/boltpack.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "format/elastic_manifest.h"
#include "fuzz/elastic_fuzz_model.h"
#include "fuzz/elastic_fuzz_slicer.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Invalid UTF-8 in a string field is a parse failure, not news.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace boltpack;
  static const std::vector<TensorInfo> tensors = fuzz::ElasticFuzzTensors();
  v1::ElasticManifest proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  ElasticManifest m = format::ElasticFromProto(proto);
  if (!format::ValidateElastic(m, fuzz::RefsOf(tensors), "fuzz").ok()) return 0;
  fuzz::CheckEverySlice(m, tensors);
  fuzz::CheckEveryCut(m, tensors);
  return 0;
}
