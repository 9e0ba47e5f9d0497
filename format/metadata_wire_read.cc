// ReadMetadataWire: metadata entries from the wire into packed MetaValues.
#include <climits>
#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "common/escape.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "common/utf8.h"
#include "common/limits.h"
#include "format/manifest_validate.h"
#include "format/metadata_wire.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

namespace boltpack::format {
namespace {

using google::protobuf::internal::WireFormatLite;
using Bytes = absl::Span<const uint8_t>;
using Where = absl::FunctionRef<std::string()>;

// Field numbers of spec/boltpack.proto's MetadataEntry, Value and Array.
constexpr uint32_t kEntryKey = 1, kEntryValue = 2;
constexpr uint32_t kValueType = 1, kValueU = 2, kValueI = 3, kValueF32 = 4, kValueF64 = 5, kValueB = 6,
                   kValueS = 7, kValueArray = 8;
constexpr uint32_t kArrayElementType = 1, kArrayUints = 2, kArrayInts = 3, kArrayF32s = 4, kArrayF64s = 5,
                   kArrayBools = 6, kArrayStrings = 7, kArrayArrays = 8;
constexpr uint32_t kArrayFirstElements = kArrayUints;  // the repeated fields, in ArrayFieldOf's order

struct WireField {
  uint32_t number = 0;
  WireFormatLite::WireType wire = WireFormatLite::WIRETYPE_VARINT;
  uint64_t value = 0;  // varint, fixed32 or fixed64
  Bytes bytes;         // length-delimited
};

// Calls `visit` with each field of the message `bytes` (groups are skipped:
// unknown fields). False when the wire data is malformed or `visit` says so.
bool ForEachField(Bytes bytes, absl::FunctionRef<bool(const WireField&)> visit) {
  if (bytes.size() > INT_MAX) return false;
  google::protobuf::io::CodedInputStream in(bytes.data(), static_cast<int>(bytes.size()));
  in.SetRecursionLimit(100);
  while (true) {
    const size_t begin = static_cast<size_t>(in.CurrentPosition());
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return begin == bytes.size();
    WireField f;
    f.number = WireFormatLite::GetTagFieldNumber(tag);
    f.wire = WireFormatLite::GetTagWireType(tag);
    bool read = true;
    switch (f.wire) {
      case WireFormatLite::WIRETYPE_VARINT: read = in.ReadVarint64(&f.value); break;
      case WireFormatLite::WIRETYPE_FIXED64: read = in.ReadLittleEndian64(&f.value); break;
      case WireFormatLite::WIRETYPE_FIXED32: {
        uint32_t v = 0;
        read = in.ReadLittleEndian32(&v);
        f.value = v;
        break;
      }
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
        uint32_t length = 0;
        if (!in.ReadVarint32(&length)) return false;
        const size_t at = static_cast<size_t>(in.CurrentPosition());
        if (length > bytes.size() - at || !in.Skip(static_cast<int>(length))) return false;
        f.bytes = bytes.subspan(at, length);
        break;
      }
      default:
        if (!WireFormatLite::SkipField(&in, tag)) return false;
        continue;
    }
    if (!read || !visit(f)) return false;
  }
}

// The packed varints of `payload`, each to `visit`; false when one is cut
// short or longer than 10 bytes (protobuf refuses both).
bool ForEachVarint(Bytes payload, absl::FunctionRef<void(uint64_t)> visit) {
  uint64_t v = 0;
  int shift = 0;
  for (uint8_t b : payload) {
    if (shift > 63) return false;
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) != 0) {
      shift += 7;
      continue;
    }
    visit(v);
    v = 0;
    shift = 0;
  }
  return shift == 0;
}

// A message field's occurrences merged: the parse of their payloads one
// after the other. One occurrence (the usual case) is not copied.
class Merged {
 public:
  void Add(Bytes part) {
    if (parts_++ == 0) {
      first_ = part;
      return;
    }
    if (parts_ == 2) joined_.assign(first_.begin(), first_.end());
    joined_.insert(joined_.end(), part.begin(), part.end());
  }
  Bytes bytes() const { return parts_ <= 1 ? first_ : Bytes(joined_); }

 private:
  int parts_ = 0;
  Bytes first_;
  std::vector<uint8_t> joined_;
};

// Whether protobuf parses `bytes` as an Array (`depth`: its nesting, which
// ScanManifestLimits has bounded), a Value, a MetadataEntry.
bool ArrayParses(Bytes bytes, int depth) {
  return depth < 100 && ForEachField(bytes, [&](const WireField& f) {
    if (f.wire != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) return true;
    switch (f.number) {
      case kArrayUints: case kArrayInts: case kArrayBools: return ForEachVarint(f.bytes, [](uint64_t) {});
      case kArrayF32s: return f.bytes.size() % 4 == 0;
      case kArrayF64s: return f.bytes.size() % 8 == 0;
      case kArrayArrays: return ArrayParses(f.bytes, depth + 1);
      default: return true;
    }
  });
}

bool ValueParses(Bytes bytes) {
  return ForEachField(bytes, [](const WireField& f) {
    return f.number != kValueArray || f.wire != WireFormatLite::WIRETYPE_LENGTH_DELIMITED || ArrayParses(f.bytes, 1);
  });
}

bool EntryParses(Bytes bytes) {
  return ForEachField(bytes, [](const WireField& f) {
    if (f.wire != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) return true;
    // `key` is a proto3 string: protobuf refuses one that is not UTF-8.
    if (f.number == kEntryKey) return IsUtf8(std::string_view(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size()));
    return f.number != kEntryValue || ValueParses(f.bytes);
  });
}

std::string_view AsText(Bytes b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

int64_t ZigZag(uint64_t v) { return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1)); }

// The elements of each repeated field of an Array, and its element type.
struct ArrayShape {
  int32_t element_type = 0;
  uint64_t counts[kArrayFieldCount] = {};
  uint64_t string_bytes = 0;
};

// Whether an occurrence of the Array's repeated scalar field `number` of
// wire type `wire` is one unpacked element (else packed, or unknown).
bool IsElementWire(uint32_t number, WireFormatLite::WireType wire) {
  if (number == kArrayF32s) return wire == WireFormatLite::WIRETYPE_FIXED32;
  if (number == kArrayF64s) return wire == WireFormatLite::WIRETYPE_FIXED64;
  return wire == WireFormatLite::WIRETYPE_VARINT;
}

ArrayShape ShapeOf(Bytes array) {
  ArrayShape shape;
  ForEachField(array, [&](const WireField& f) {
    const bool delimited = f.wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    if (f.number == kArrayElementType && f.wire == WireFormatLite::WIRETYPE_VARINT) {
      shape.element_type = static_cast<int32_t>(f.value);
    } else if (f.number >= kArrayFirstElements && f.number < kArrayStrings) {
      uint64_t& n = shape.counts[f.number - kArrayFirstElements];
      if (IsElementWire(f.number, f.wire)) ++n;
      else if (delimited && f.number == kArrayF32s) n += f.bytes.size() / 4;
      else if (delimited && f.number == kArrayF64s) n += f.bytes.size() / 8;
      else if (delimited) ForEachVarint(f.bytes, [&](uint64_t) { ++n; });
    } else if (delimited && (f.number == kArrayStrings || f.number == kArrayArrays)) {
      ++shape.counts[f.number - kArrayFirstElements];
      if (f.number == kArrayStrings) shape.string_bytes += f.bytes.size();
    }
    return true;
  });
  return shape;
}

absl::Status ReadArray(Bytes array, int depth, Where where, MetaValue* out);

// Each element of field `number` (a repeated scalar, packed or not) of the
// Array `array`, as its varint or fixed-width bits.
void ForEachElement(Bytes array, uint32_t number, absl::FunctionRef<void(uint64_t)> visit) {
  ForEachField(array, [&](const WireField& f) {
    if (f.number != number) return true;
    if (IsElementWire(number, f.wire)) {
      visit(f.value);
    } else if (f.wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      const size_t width = number == kArrayF32s ? 4 : number == kArrayF64s ? 8 : 0;
      if (width == 0) return ForEachVarint(f.bytes, visit);
      for (size_t at = 0; at + width <= f.bytes.size(); at += width) {
        uint64_t bits = 0;
        std::memcpy(&bits, f.bytes.data() + at, width);
        visit(bits);
      }
    }
    return true;
  });
}

// A numeric or bool array: each element checked, packed at its width.
absl::Status ReadNumbers(Bytes array, const ArrayShape& shape, Where where, MetaValue* out) {
  const int32_t et = shape.element_type;
  const auto type = static_cast<ValueType>(et);
  const int slot = ArrayFieldOf(et);
  const size_t width = static_cast<size_t>(ValueTypeWidth(type));
  std::string packed(out != nullptr ? shape.counts[slot] * width : 0, '\0');
  size_t at = 0;
  absl::Status status;
  ForEachElement(array, static_cast<uint32_t>(slot) + kArrayFirstElements, [&](uint64_t bits) {
    if (!status.ok()) return;
    if (IsUnsignedInt(type)) status = CheckUnsignedElement(et, bits, where);
    if (IsSignedInt(type)) {
      bits = static_cast<uint64_t>(ZigZag(bits));
      status = CheckSignedElement(et, static_cast<int64_t>(bits), where);
    }
    if (type == ValueType::kBool) bits = bits != 0 ? 1 : 0;
    if (out == nullptr) return;
    std::memcpy(packed.data() + at, &bits, width);  // little-endian: the low bytes
    at += width;
  });
  BP_RETURN_IF_ERROR(status);
  if (out != nullptr) *out = MetaValue::PackedArray(type, std::move(packed));
  return absl::OkStatus();
}

absl::Status ReadStrings(Bytes array, const ArrayShape& shape, MetaValue* out) {
  if (out == nullptr) return absl::OkStatus();
  MetaValue::StringArrayBuilder strings;
  strings.Reserve(shape.counts[kArrayStrings - kArrayFirstElements], shape.string_bytes);
  ForEachField(array, [&](const WireField& f) {
    if (f.number == kArrayStrings && f.wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) strings.Add(AsText(f.bytes));
    return true;
  });
  *out = strings.Build();
  return absl::OkStatus();
}

absl::Status ReadChildren(Bytes array, const ArrayShape& shape, int depth, Where where, MetaValue* out) {
  MetaValue::NestedArrayBuilder children;
  if (out != nullptr) children.Reserve(shape.counts[kArrayArrays - kArrayFirstElements]);
  absl::Status status;
  ForEachField(array, [&](const WireField& f) {
    if (f.number != kArrayArrays || f.wire != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) return true;
    MetaValue child;
    status = ReadArray(f.bytes, depth + 1, where, out != nullptr ? &child : nullptr);
    if (status.ok() && out != nullptr) children.Add(child);
    return status.ok();
  });
  BP_RETURN_IF_ERROR(status);
  if (out != nullptr) *out = children.Build();
  return absl::OkStatus();
}

// An Array (wire data known to parse), checked as ValidateArray checks it;
// `out`, when not null, is its packed MetaValue.
absl::Status ReadArray(Bytes array, int depth, Where where, MetaValue* out) {
  const ArrayShape shape = ShapeOf(array);
  BP_RETURN_IF_ERROR(CheckArrayHead(depth, shape.element_type, shape.counts, where));
  const auto type = static_cast<ValueType>(shape.element_type);
  if (type == ValueType::kString) return ReadStrings(array, shape, out);
  if (type == ValueType::kArray) return ReadChildren(array, shape, depth, where, out);
  return ReadNumbers(array, shape, where, out);
}

// A Value's scalar fields (the last of each) and its array's occurrences.
struct ValueFields {
  int32_t type = 0;
  uint64_t u = 0, i = 0, f32 = 0, f64 = 0;
  bool b = false;
  Bytes s;
  Merged array;
};

ValueFields FieldsOf(Bytes value) {
  ValueFields v;
  ForEachField(value, [&](const WireField& f) {
    const auto wire = f.wire;
    using WFL = WireFormatLite;
    if (f.number == kValueType && wire == WFL::WIRETYPE_VARINT) v.type = static_cast<int32_t>(f.value);
    if (f.number == kValueU && wire == WFL::WIRETYPE_VARINT) v.u = f.value;
    if (f.number == kValueI && wire == WFL::WIRETYPE_VARINT) v.i = f.value;
    if (f.number == kValueF32 && wire == WFL::WIRETYPE_FIXED32) v.f32 = f.value;
    if (f.number == kValueF64 && wire == WFL::WIRETYPE_FIXED64) v.f64 = f.value;
    if (f.number == kValueB && wire == WFL::WIRETYPE_VARINT) v.b = f.value != 0;
    if (f.number == kValueS && wire == WFL::WIRETYPE_LENGTH_DELIMITED) v.s = f.bytes;
    if (f.number == kValueArray && wire == WFL::WIRETYPE_LENGTH_DELIMITED) v.array.Add(f.bytes);
    return true;
  });
  return v;
}

// A Value (wire data known to parse), checked as ValidateValue checks it
// and converted as FromProto converts it when `out` is not null.
absl::Status ReadValue(Bytes value, Where where, MetaValue* out) {
  const ValueFields v = FieldsOf(value);
  BP_RETURN_IF_ERROR(CheckScalar(v.type, v.u, ZigZag(v.i), where));
  const auto type = static_cast<ValueType>(v.type);
  if (type == ValueType::kArray) return ReadArray(v.array.bytes(), 1, where, out);
  if (out == nullptr) return absl::OkStatus();
  MetaValue m;
  m.type = type;
  if (IsUnsignedInt(type)) m.u = v.u;
  else if (IsSignedInt(type)) m.i = ZigZag(v.i);
  else if (type == ValueType::kFloat32) std::memcpy(&m.f32, &v.f32, sizeof m.f32);
  else if (type == ValueType::kFloat64) std::memcpy(&m.f64, &v.f64, sizeof m.f64);
  else if (type == ValueType::kBool) m.b = v.b;
  else if (type == ValueType::kString) m.s = AsText(v.s);
  *out = std::move(m);
  return absl::OkStatus();
}

// An entry's key (the last occurrence) and its value's occurrences.
struct EntryFields {
  Bytes key;
  Merged value;
};

EntryFields EntryFieldsOf(Bytes entry) {
  EntryFields e;
  ForEachField(entry, [&](const WireField& f) {
    if (f.wire != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) return true;
    if (f.number == kEntryKey) e.key = f.bytes;
    if (f.number == kEntryValue) e.value.Add(f.bytes);
    return true;
  });
  return e;
}

}  // namespace

absl::Status ReadMetadataWire(const MetadataWire& entries, const std::string& file, Metadata* out) {
  if (entries.size() > kMaxMetadataEntries) {
    return absl::ResourceExhaustedError(
        StrCat(file, ": ", entries.size(), " metadata entries exceed the limit of ", kMaxMetadataEntries));
  }
  for (Bytes e : entries) {
    // [C-6.1.2]
    if (!EntryParses(e)) return absl::DataLossError(StrCat(file, ": manifest is not a valid boltpack.v1.Manifest"));
  }
  absl::flat_hash_set<std::string_view> keys;
  keys.reserve(entries.size());
  if (out != nullptr) out->reserve(entries.size());
  for (Bytes e : entries) {
    EntryFields fields = EntryFieldsOf(e);
    const std::string_view key = AsText(fields.key);
    BP_RETURN_IF_ERROR(ValidateName(key, "metadata key", file));
    if (!keys.insert(key).second) {
      // [C-6.3.3]
      return absl::DataLossError(StrCat(file, ": duplicate metadata key ", QuoteForDisplay(key, 200)));
    }
    MetaValue value;
    BP_RETURN_IF_ERROR(ReadValue(fields.value.bytes(), [&] { return StrCat(file, ": metadata \"", key, "\""); },
                                 out != nullptr ? &value : nullptr));
    if (out != nullptr) out->emplace_back(std::string(key), std::move(value));
  }
  return absl::OkStatus();
}

absl::Status CheckMetadataEntry(Bytes entry, const std::string& where) {
  if (!EntryParses(entry)) return absl::InternalError(StrCat(where, ": does not parse back as a MetadataEntry"));
  return ReadValue(EntryFieldsOf(entry).value.bytes(), [&] { return where; }, nullptr);
}

}  // namespace boltpack::format
