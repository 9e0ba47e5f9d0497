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

namespace {
// Calls `field(number, wire type)` for each field of the length-delimited
// payload at the stream's position, which returns false to have it skipped
// (it reads the ones it wants itself).
template <typename Field>
bool ForEachField(google::protobuf::io::CodedInputStream& in, Field field) {
  uint32_t length = 0;
  if (!in.ReadVarint32(&length)) return false;
  const auto limit = in.PushLimit(static_cast<int>(length));
  while (in.BytesUntilLimit() > 0) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return false;
    if (!field(WireFormatLite::GetTagFieldNumber(tag), WireFormatLite::GetTagWireType(tag)) &&
        !WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
  }
  in.PopLimit(limit);
  return true;
}
}  // namespace

std::string CodecFromRecord(absl::Span<const uint8_t> payload, uint64_t* stored_bytes) {
  constexpr int kCodecField = 4, kStreamsField = 5;  // message Tensor
  constexpr int kCodecIdField = 1;                   // message Codec
  constexpr int kStreamLengthField = 4;              // message Stream
  google::protobuf::io::CodedInputStream in(payload.data(), static_cast<int>(payload.size()));
  in.SetTotalBytesLimit(static_cast<int>(payload.size()));
  std::string id;
  *stored_bytes = 0;
  // A validated record: a read that fails ends the loop.
  while (const uint32_t tag = in.ReadTag()) {
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    const bool delimited = WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    bool read = true;
    if (field == kCodecField && delimited) {
      read = ForEachField(in, [&](int f, WireFormatLite::WireType type) {
        return f == kCodecIdField && type == WireFormatLite::WIRETYPE_LENGTH_DELIMITED && in.ReadString(&id, [&] {
          uint32_t n = 0;
          return in.ReadVarint32(&n) ? static_cast<int>(n) : -1;
        }());
      });
    } else if (field == kStreamsField && delimited) {
      uint64_t length = 0;
      read = ForEachField(in, [&](int f, WireFormatLite::WireType type) {
        return f == kStreamLengthField && type == WireFormatLite::WIRETYPE_VARINT && in.ReadVarint64(&length);
      });
      *stored_bytes += length;
    } else {
      read = WireFormatLite::SkipField(&in, tag);
    }
    if (!read) break;
  }
  return id;
}

}  // namespace boltpack::format
