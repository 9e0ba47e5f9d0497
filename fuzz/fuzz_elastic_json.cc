// libFuzzer target for the elastic authoring JSON (io/elastic_json.h):
// parse against a fixed two-layer MoE; an accepted file that also passes
// validation must survive the proto round trip unchanged and give
// consistent slices for every budget (fuzz/elastic_fuzz_model.h), and its
// permutation maps must be permutations.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "boltpack_proto/boltpack.pb.h"
#include "format/elastic_manifest.h"
#include "fuzz/elastic_fuzz_model.h"
#include "io/elastic_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace boltpack;
  static const std::vector<TensorInfo> tensors = fuzz::ElasticFuzzTensors();
  std::vector<io::ElasticTensorShape> shapes;
  for (const auto& t : tensors) shapes.push_back({t.name, t.shape});
  auto a = io::ParseElasticJson(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json", shapes);
  if (!a.ok()) return 0;
  for (const auto& t : tensors) {
    // Over the tensor's shape, or a flat binding's one dimension (format 1.4).
    auto perm = a->PermutationFor(t.name, t.shape);
    const auto& maps = perm.maps;
    const auto& grid = perm.grid;
    if (maps.size() != grid.size()) __builtin_trap();
    for (size_t d = 0; d < maps.size(); ++d) {
      if (maps[d].empty()) continue;
      if (maps[d].size() != grid[d]) __builtin_trap();
      std::vector<bool> hit(grid[d], false);
      for (uint64_t v : maps[d]) {
        if (v >= grid[d] || hit[v]) __builtin_trap();
        hit[v] = true;
      }
    }
  }
  if (!format::ValidateElastic(a->manifest, fuzz::RefsOf(tensors), "fuzz").ok()) return 0;
  v1::ElasticManifest proto;
  format::ElasticToProto(a->manifest, &proto);
  v1::ElasticManifest again;
  format::ElasticToProto(format::ElasticFromProto(proto), &again);
  if (proto.SerializeAsString() != again.SerializeAsString()) __builtin_trap();
  fuzz::CheckEverySlice(a->manifest, tensors);
  return 0;
}
