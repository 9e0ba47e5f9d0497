// Fuzzes format/tensor_wire.h against protobuf, its oracle: a tensor record
// the canonical reader accepts must parse with protobuf to the same record
// (compared as protobuf's bytes of both), and the writer must give
// protobuf's bytes for every record protobuf reads. Anything else traps.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "boltpack_proto/boltpack.pb.h"
#include "format/manifest_convert.h"
#include "format/tensor_wire.h"
#include "google/protobuf/stubs/logging.h"

namespace {

std::string ProtobufBytes(const boltpack::TensorInfo& info) {
  boltpack::v1::Tensor t;
  boltpack::format::ToProto(info, &t);
  return t.SerializeAsString();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static google::protobuf::LogSilencer* quiet = new google::protobuf::LogSilencer;  // logs of non-UTF-8 strings
  (void)quiet;
  if (size > (1 << 20)) return 0;
  const auto bytes = absl::MakeConstSpan(data, size);
  boltpack::TensorInfo fast;
  const bool accepted = boltpack::format::TensorFromCanonicalWire(bytes, &fast);
  boltpack::v1::Tensor proto;
  const bool parsed = proto.ParseFromArray(data, static_cast<int>(size));
  if (accepted && !parsed) std::abort();  // accepted what protobuf refuses
  if (!parsed) return 0;
  const boltpack::TensorInfo slow = boltpack::format::FromProto(proto);
  const std::string expected = ProtobufBytes(slow);
  if (accepted && ProtobufBytes(fast) != expected) std::abort();  // read differently
  std::string written;
  boltpack::format::AppendTensorWire(slow, &written);
  if (written != expected || boltpack::format::TensorWireSize(slow) != written.size()) std::abort();
  // What the writer wrote is canonical, and reads back the same.
  boltpack::TensorInfo again;
  const auto wire = absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(written.data()), written.size());
  if (!boltpack::format::TensorFromCanonicalWire(wire, &again) || ProtobufBytes(again) != expected) std::abort();
  return 0;
}
