#include "format/tensor_wire.h"

#include <bit>
#include <climits>
#include <cstring>
#include <string_view>

#include "common/utf8.h"
#include "format/manifest_convert.h"
#include "boltpack_proto/boltpack.pb.h"

namespace boltpack::format {
namespace {

static_assert(std::endian::native == std::endian::little, "fixed64 fields are copied as they lie in memory");

enum WireType : uint8_t { kVarint = 0, kFixed64 = 1, kDelimited = 2 };
constexpr uint8_t Tag(int field, WireType type) { return static_cast<uint8_t>(field << 3 | type); }

// Field numbers of spec/boltpack.proto.
namespace tensor { enum : int { kName = 1, kShape, kDType, kCodec, kStreams, kRequiredFeatures }; }
namespace codec { enum : int { kId = 1, kParams }; }
namespace stream {
enum : int { kRole = 1, kShard, kOffset, kLength, kAlignment, kXxh3, kCompression, kRawLength, kChunks, kViews,
             kLineBytes, kPrefixBytes };
}
namespace chunk {
enum : int { kStoredOffset = 1, kStoredLength, kRawOffset, kRawLength, kFirstRow, kRowCount, kXxh3, kPrefixXxh3 };
}

// ---- sizes (what protobuf's ByteSizeLong gives) ----

size_t VarintSize(uint64_t v) { return static_cast<size_t>(std::bit_width(v | 1) + 6) / 7; }
size_t DelimitedSize(size_t body) { return 1 + VarintSize(body) + body; }
// A proto3 scalar is written only when it is not zero, a string when not empty.
size_t VarintFieldSize(uint64_t v) { return v == 0 ? 0 : 1 + VarintSize(v); }
size_t Fixed64FieldSize(uint64_t v) { return v == 0 ? 0 : 9; }
size_t StringFieldSize(std::string_view s) { return s.empty() ? 0 : DelimitedSize(s.size()); }

size_t PackedVarintsSize(absl::Span<const uint64_t> values) {
  size_t n = 0;
  for (uint64_t v : values) n += VarintSize(v);
  return n;
}

size_t ChunkSize(const ChunkInfo& c, absl::Span<const uint64_t> prefix_xxh3) {
  return VarintFieldSize(c.stored_offset) + VarintFieldSize(c.stored_length) + VarintFieldSize(c.raw_offset) +
         VarintFieldSize(c.raw_length) + VarintFieldSize(c.first_row) + VarintFieldSize(c.row_count) +
         Fixed64FieldSize(c.xxh3) + (prefix_xxh3.empty() ? 0 : DelimitedSize(8 * prefix_xxh3.size()));
}

size_t StreamSize(const StreamInfo& s) {
  size_t n = StringFieldSize(s.role) + VarintFieldSize(s.shard) + VarintFieldSize(s.offset) +
             VarintFieldSize(s.length) + VarintFieldSize(s.alignment) + Fixed64FieldSize(s.xxh3) +
             VarintFieldSize(static_cast<uint64_t>(s.compression)) + VarintFieldSize(s.raw_length) +
             VarintFieldSize(s.line_bytes);
  for (size_t k = 0; k < s.chunks.size(); ++k) n += DelimitedSize(ChunkSize(s.chunks[k], s.ChunkPrefixXxh3(k)));
  for (const auto& v : s.views) n += DelimitedSize(v.size());  // a repeated string is written even when empty
  if (!s.prefix_bytes.empty()) n += DelimitedSize(PackedVarintsSize(s.prefix_bytes));
  return n;
}

// The codec's parameters as protobuf writes them (Value has many cases,
// and few tensors have parameters: protobuf serializes them).
std::vector<std::string> SerializedParams(const CodecParams& params) {
  std::vector<std::string> out;
  out.reserve(params.size());
  for (const auto& [key, value] : params) {
    v1::CodecParam p;
    p.set_key(key);
    ToProto(value, p.mutable_value());
    out.push_back(p.SerializeAsString());
  }
  return out;
}

size_t CodecSize(std::string_view id, const std::vector<std::string>& params) {
  size_t n = StringFieldSize(id);
  for (const auto& p : params) n += DelimitedSize(p.size());
  return n;
}

size_t TensorSize(const TensorInfo& info, const std::vector<std::string>& params) {
  size_t n = StringFieldSize(info.name) + VarintFieldSize(static_cast<uint64_t>(info.dtype)) +
             DelimitedSize(CodecSize(info.codec_id, params));  // ToProto always sets the codec message
  if (!info.shape.empty()) n += DelimitedSize(PackedVarintsSize(info.shape));
  for (const auto& s : info.streams) n += DelimitedSize(StreamSize(s));
  for (const auto& f : info.required_features) n += DelimitedSize(f.size());
  return n;
}

// ---- writing, into bytes already sized ----

class Out {
 public:
  explicit Out(char* at) : at_(at) {}
  char* at() const { return at_; }
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      *at_++ = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    *at_++ = static_cast<char>(v);
  }
  void Header(uint8_t tag, size_t length) {
    *at_++ = static_cast<char>(tag);
    Varint(length);
  }
  void Bytes(std::string_view s) {
    if (!s.empty()) std::memcpy(at_, s.data(), s.size());
    at_ += s.size();
  }
  void VarintField(int field, uint64_t v) {
    if (v == 0) return;
    *at_++ = static_cast<char>(Tag(field, kVarint));
    Varint(v);
  }
  void Fixed64Field(int field, uint64_t v) {
    if (v == 0) return;
    *at_++ = static_cast<char>(Tag(field, kFixed64));
    std::memcpy(at_, &v, 8);
    at_ += 8;
  }
  void String(int field, std::string_view s) {  // a repeated string's element
    Header(Tag(field, kDelimited), s.size());
    Bytes(s);
  }
  void StringField(int field, std::string_view s) {
    if (!s.empty()) String(field, s);
  }
  void PackedVarints(int field, absl::Span<const uint64_t> values) {
    if (values.empty()) return;
    Header(Tag(field, kDelimited), PackedVarintsSize(values));
    for (uint64_t v : values) Varint(v);
  }

 private:
  char* at_;
};

void WriteChunk(Out& out, const ChunkInfo& c, absl::Span<const uint64_t> prefix_xxh3) {
  out.Header(Tag(stream::kChunks, kDelimited), ChunkSize(c, prefix_xxh3));
  out.VarintField(chunk::kStoredOffset, c.stored_offset);
  out.VarintField(chunk::kStoredLength, c.stored_length);
  out.VarintField(chunk::kRawOffset, c.raw_offset);
  out.VarintField(chunk::kRawLength, c.raw_length);
  out.VarintField(chunk::kFirstRow, c.first_row);
  out.VarintField(chunk::kRowCount, c.row_count);
  out.Fixed64Field(chunk::kXxh3, c.xxh3);
  if (prefix_xxh3.empty()) return;
  out.Header(Tag(chunk::kPrefixXxh3, kDelimited), 8 * prefix_xxh3.size());
  out.Bytes(std::string_view(reinterpret_cast<const char*>(prefix_xxh3.data()), 8 * prefix_xxh3.size()));
}

void WriteStream(Out& out, const StreamInfo& s) {
  out.Header(Tag(tensor::kStreams, kDelimited), StreamSize(s));
  out.StringField(stream::kRole, s.role);
  out.VarintField(stream::kShard, s.shard);
  out.VarintField(stream::kOffset, s.offset);
  out.VarintField(stream::kLength, s.length);
  out.VarintField(stream::kAlignment, s.alignment);
  out.Fixed64Field(stream::kXxh3, s.xxh3);
  out.VarintField(stream::kCompression, static_cast<uint64_t>(s.compression));
  out.VarintField(stream::kRawLength, s.raw_length);
  for (size_t k = 0; k < s.chunks.size(); ++k) WriteChunk(out, s.chunks[k], s.ChunkPrefixXxh3(k));
  for (const auto& v : s.views) out.String(stream::kViews, v);
  out.VarintField(stream::kLineBytes, s.line_bytes);
  out.PackedVarints(stream::kPrefixBytes, s.prefix_bytes);
}

}  // namespace

size_t TensorWireSize(const TensorInfo& info) { return TensorSize(info, SerializedParams(info.codec_params)); }

void AppendTensorWire(const TensorInfo& info, std::string* out, int field) {
  const std::vector<std::string> params = SerializedParams(info.codec_params);
  const size_t size = TensorSize(info, params), begin = out->size();
  out->resize(begin + (field == 0 ? size : DelimitedSize(size)));
  Out o(out->data() + begin);
  if (field != 0) o.Header(Tag(field, kDelimited), size);
  o.StringField(tensor::kName, info.name);
  o.PackedVarints(tensor::kShape, info.shape);
  o.VarintField(tensor::kDType, static_cast<uint64_t>(info.dtype));
  o.Header(Tag(tensor::kCodec, kDelimited), CodecSize(info.codec_id, params));
  o.StringField(codec::kId, info.codec_id);
  for (const auto& p : params) o.String(codec::kParams, p);
  for (const auto& s : info.streams) WriteStream(o, s);
  for (const auto& f : info.required_features) o.String(tensor::kRequiredFeatures, f);
}

// ---- reading the canonical form ----

namespace {

class In {
 public:
  explicit In(absl::Span<const uint8_t> bytes) : at_(bytes.data()), end_(bytes.data() + bytes.size()) {}
  bool done() const { return at_ == end_; }
  // A one-byte tag (every field of these messages has one).
  bool Tag(uint8_t* tag) {
    if (at_ == end_ || *at_ >= 0x80) return false;
    *tag = *at_++;
    return true;
  }
  bool Varint(uint64_t* v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ == end_) return false;
      const uint8_t b = *at_++;
      // The tenth byte holds bit 63 alone: more is not a uint64.
      if (shift == 63 && b > 1) return false;
      x |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (b < 0x80) {
        *v = x;
        return true;
      }
    }
    return false;
  }
  // An enum or int32 field, as protobuf keeps it (an int32) and FromProto
  // casts it; values past INT32_MAX are declined.
  template <typename Enum8>
  bool Enum(Enum8* v) {
    uint64_t x = 0;
    if (!Varint(&x) || x > INT32_MAX) return false;
    *v = static_cast<Enum8>(static_cast<uint8_t>(x));
    return true;
  }
  bool Fixed64(uint64_t* v) {
    if (end_ - at_ < 8) return false;
    std::memcpy(v, at_, 8);
    at_ += 8;
    return true;
  }
  // A length-delimited field's payload.
  bool Delimited(In* body) {
    uint64_t n = 0;
    if (!Varint(&n) || n > static_cast<uint64_t>(end_ - at_)) return false;
    *body = In(absl::MakeConstSpan(at_, static_cast<size_t>(n)));
    at_ += n;
    return true;
  }
  // A string field: protobuf refuses one that is not UTF-8.
  bool String(std::string* s) {
    In body({});
    if (!Delimited(&body)) return false;
    s->assign(reinterpret_cast<const char*>(body.at_), static_cast<size_t>(body.end_ - body.at_));
    return IsUtf8(*s);
  }
  bool PackedVarints(std::vector<uint64_t>* out) {
    In body({});
    if (!Delimited(&body)) return false;
    while (!body.done()) {
      uint64_t v = 0;
      if (!body.Varint(&v)) return false;
      out->push_back(v);
    }
    return true;
  }
  absl::Span<const uint8_t> rest() const { return absl::MakeConstSpan(at_, static_cast<size_t>(end_ - at_)); }

 private:
  const uint8_t* at_;
  const uint8_t* end_;
};

// Fields in canonical order: numbers never go down, and only a repeated
// field's number comes twice in a row.
class FieldOrder {
 public:
  bool Next(int field, bool repeated) {
    const bool ok = field > last_ || (field == last_ && repeated);
    last_ = field;
    return ok;
  }

 private:
  int last_ = 0;
};

bool ReadChunk(In in, ChunkInfo* c, std::vector<uint64_t>* prefix_xxh3) {
  FieldOrder order;
  uint64_t* const varints[] = {&c->stored_offset, &c->stored_length, &c->raw_offset,
                               &c->raw_length,    &c->first_row,     &c->row_count};
  while (!in.done()) {
    uint8_t tag = 0;
    if (!in.Tag(&tag) || !order.Next(tag >> 3, false)) return false;
    if (tag >= Tag(chunk::kStoredOffset, kVarint) && tag <= Tag(chunk::kRowCount, kVarint) && (tag & 7) == kVarint) {
      if (!in.Varint(varints[(tag >> 3) - 1])) return false;
    } else if (tag == Tag(chunk::kXxh3, kFixed64)) {
      if (!in.Fixed64(&c->xxh3)) return false;
    } else if (tag == Tag(chunk::kPrefixXxh3, kDelimited)) {
      In body({});
      if (!in.Delimited(&body) || body.rest().size() % 8 != 0) return false;
      while (!body.done()) body.Fixed64(&prefix_xxh3->emplace_back());
    } else {
      return false;
    }
  }
  return true;
}

bool ReadStreamScalar(In& in, uint8_t tag, StreamInfo* s) {
  uint64_t v = 0;
  switch (tag) {
    case Tag(stream::kShard, kVarint):
      if (!in.Varint(&v) || v > UINT32_MAX) return false;
      s->shard = static_cast<uint32_t>(v);
      return true;
    case Tag(stream::kOffset, kVarint): return in.Varint(&s->offset);
    case Tag(stream::kLength, kVarint): return in.Varint(&s->length);
    case Tag(stream::kAlignment, kVarint): return in.Varint(&s->alignment);
    case Tag(stream::kXxh3, kFixed64): return in.Fixed64(&s->xxh3);
    case Tag(stream::kCompression, kVarint): return in.Enum(&s->compression);
    case Tag(stream::kRawLength, kVarint): return in.Varint(&s->raw_length);
    case Tag(stream::kLineBytes, kVarint): return in.Varint(&s->line_bytes);
    default: return false;
  }
}

bool ReadStream(In in, StreamInfo* s) {
  FieldOrder order;
  while (!in.done()) {
    uint8_t tag = 0;
    if (!in.Tag(&tag)) return false;
    const int field = tag >> 3;
    if (!order.Next(field, field == stream::kChunks || field == stream::kViews)) return false;
    if (tag == Tag(stream::kRole, kDelimited)) {
      if (!in.String(&s->role)) return false;
    } else if (tag == Tag(stream::kChunks, kDelimited)) {
      In body({});
      if (!in.Delimited(&body) || !ReadChunk(body, &s->chunks.emplace_back(), &s->prefix_xxh3)) return false;
    } else if (tag == Tag(stream::kViews, kDelimited)) {
      if (!in.String(&s->views.emplace_back())) return false;
    } else if (tag == Tag(stream::kPrefixBytes, kDelimited)) {
      if (!in.PackedVarints(&s->prefix_bytes)) return false;
    } else if (!ReadStreamScalar(in, tag, s)) {
      return false;
    }
  }
  return true;
}

bool ReadParam(In in, TensorInfo* info) {
  v1::CodecParam p;
  const auto bytes = in.rest();
  if (bytes.size() > INT_MAX || !p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return false;
  info->codec_params.emplace_back(p.key(), FromProto(p.value()));
  return true;
}

bool ReadCodec(In in, TensorInfo* info) {
  FieldOrder order;
  while (!in.done()) {
    uint8_t tag = 0;
    In body({});
    if (!in.Tag(&tag) || !order.Next(tag >> 3, tag >> 3 == codec::kParams)) return false;
    if (tag == Tag(codec::kId, kDelimited)) {
      if (!in.String(&info->codec_id)) return false;
    } else if (tag != Tag(codec::kParams, kDelimited) || !in.Delimited(&body) || !ReadParam(body, info)) {
      return false;
    }
  }
  return true;
}

bool ReadTensorField(In& in, uint8_t tag, TensorInfo* info) {
  In body({});
  switch (tag) {
    case Tag(tensor::kName, kDelimited): return in.String(&info->name);
    case Tag(tensor::kShape, kDelimited): return in.PackedVarints(&info->shape);
    case Tag(tensor::kDType, kVarint): return in.Enum(&info->dtype);
    case Tag(tensor::kCodec, kDelimited): return in.Delimited(&body) && ReadCodec(body, info);
    case Tag(tensor::kStreams, kDelimited): return in.Delimited(&body) && ReadStream(body, &info->streams.emplace_back());
    case Tag(tensor::kRequiredFeatures, kDelimited): return in.String(&info->required_features.emplace_back());
    default: return false;
  }
}

}  // namespace

bool TensorFromCanonicalWire(absl::Span<const uint8_t> payload, TensorInfo* info) {
  *info = TensorInfo();
  In in(payload);
  FieldOrder order;
  while (!in.done()) {
    uint8_t tag = 0;
    if (!in.Tag(&tag)) return false;
    const int field = tag >> 3;
    if (!order.Next(field, field == tensor::kStreams || field == tensor::kRequiredFeatures)) return false;
    if (!ReadTensorField(in, tag, info)) return false;
  }
  return true;
}

}  // namespace boltpack::format
