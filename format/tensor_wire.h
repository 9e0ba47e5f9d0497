// A tensor record (spec/boltpack.proto, message Tensor) written and read
// straight between TensorInfo and its wire bytes, without a protobuf
// message in between. A file of 1M small records spent most of a copy's
// time in protobuf: a message built, serialized and cleared per record
// written, parsed and converted per record read.
//
// The writer's bytes are exactly those protobuf writes for ToProto(info)
// (field order, proto3 defaults left out, packed repeated scalars), so a
// file does not depend on which path wrote it. The reader takes only the
// canonical form a writer produces (each field once, in field order, the
// packed encodings, no unknown fields) and declines anything else, for the
// caller to parse with protobuf: where it accepts, the result is what
// protobuf's parse and FromProto give (tests/tensor_wire_test.cc and
// fuzz/fuzz_tensor_wire.cc check both against protobuf).
#ifndef BOLTPACK_FORMAT_TENSOR_WIRE_H_
#define BOLTPACK_FORMAT_TENSOR_WIRE_H_

#include <cstdint>
#include <string>

#include "absl/types/span.h"
#include "boltpack/tensor_info.h"

namespace boltpack::format {

// Appends the Tensor message of `info`; as field number `field` of the
// enclosing message (its tag and length first) unless `field` is 0.
void AppendTensorWire(const TensorInfo& info, std::string* out, int field = 0);

// Bytes AppendTensorWire appends for `info`.
size_t TensorWireSize(const TensorInfo& info);

// `payload`, a Tensor message in canonical form, into `*info`; false (and
// `*info` unspecified) for any other bytes, valid protobuf or not.
bool TensorFromCanonicalWire(absl::Span<const uint8_t> payload, TensorInfo* info);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_TENSOR_WIRE_H_
