#include "format/record_shape.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

namespace boltpack::format {

using google::protobuf::internal::WireFormatLite;

DType ShapeFromRecord(absl::Span<const uint8_t> payload, std::vector<uint64_t>* shape) {
  constexpr int kShapeField = 2, kDTypeField = 3;  // spec/boltpack.proto, message Tensor
  google::protobuf::io::CodedInputStream in(payload.data(), static_cast<int>(payload.size()));
  in.SetTotalBytesLimit(static_cast<int>(payload.size()));
  int32_t dtype = 0;
  // The record was validated at open: a malformed one does not come here,
  // and a read that fails ends the loop.
  while (const uint32_t tag = in.ReadTag()) {
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    const auto type = WireFormatLite::GetTagWireType(tag);
    uint64_t v = 0;
    if (field == kShapeField && type == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      uint32_t length = 0;
      if (!in.ReadVarint32(&length)) break;
      const auto limit = in.PushLimit(static_cast<int>(length));
      while (in.BytesUntilLimit() > 0 && in.ReadVarint64(&v)) shape->push_back(v);
      in.PopLimit(limit);
    } else if (field == kShapeField && type == WireFormatLite::WIRETYPE_VARINT) {
      if (!in.ReadVarint64(&v)) break;
      shape->push_back(v);
    } else if (field == kDTypeField && type == WireFormatLite::WIRETYPE_VARINT) {
      if (!in.ReadVarint64(&v)) break;
      dtype = static_cast<int32_t>(v);  // an enum is an int32 on the wire
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      break;
    }
  }
  return static_cast<DType>(dtype);
}

}  // namespace boltpack::format
