// AppendMetadataEntry: a MetaValue serialized as protobuf serializes its
// ToProto message (proto3: fields in number order, zero scalars and empty
// packed fields left out), each packed element written from its packed form.
#include <algorithm>
#include <cstring>

#include "format/metadata_wire.h"

namespace boltpack::format {
namespace {

enum Wire : uint32_t { kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5 };

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}
void PutVarint(std::string* out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out->push_back(static_cast<char>((v & 0x7F) | 0x80));
  out->push_back(static_cast<char>(v));
}
void PutTag(std::string* out, uint32_t number, Wire wire) { PutVarint(out, uint64_t{number} << 3 | wire); }
size_t LengthField(size_t payload) { return 1 + VarintSize(payload) + payload; }  // fields 1..15: a 1-byte tag
uint32_t F32Bits(const MetaValue& v) {
  uint32_t bits = 0;
  std::memcpy(&bits, &v.f32, sizeof bits);
  return bits;
}
uint64_t F64Bits(const MetaValue& v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v.f64, sizeof bits);
  return bits;
}
uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }

// The varint of element k of an integer or bool array, as ToProto gives it.
uint64_t VarintElement(const MetaValue& v, size_t k) {
  if (IsSignedInt(v.element_type)) return ZigZag(v.int_element(k));
  if (v.element_type == ValueType::kBool) return v.bool_element(k) ? 1 : 0;
  return v.uint_element(k);
}
bool IsVarintArray(ValueType et) { return IsUnsignedInt(et) || IsSignedInt(et) || et == ValueType::kBool; }

size_t PackedVarintBytes(const MetaValue& v) {
  size_t n = 0;
  for (size_t k = 0; k < v.array_size(); ++k) n += VarintSize(VarintElement(v, k));
  return n;
}

// The repeated field an element type fills (Array's field numbers).
uint32_t ElementField(ValueType et) {
  if (IsUnsignedInt(et)) return 2;
  if (IsSignedInt(et)) return 3;
  if (et == ValueType::kFloat32) return 4;
  if (et == ValueType::kFloat64) return 5;
  if (et == ValueType::kBool) return 6;
  if (et == ValueType::kString) return 7;
  if (et == ValueType::kArray) return 8;
  return 0;
}

// Bytes of the Array message of `v`, for any element type but kArray.
size_t FlatArraySize(const MetaValue& v) {
  const ValueType et = v.element_type;
  size_t n = et != ValueType::kUnspecified ? 1 + VarintSize(static_cast<uint64_t>(et)) : 0;
  const size_t count = v.array_size();
  if (count == 0) return n;
  if (IsVarintArray(et)) return n + LengthField(PackedVarintBytes(v));
  if (et == ValueType::kFloat32 || et == ValueType::kFloat64) return n + LengthField(v.packed_bytes().size());
  if (et == ValueType::kString) {
    for (size_t k = 0; k < count; ++k) n += LengthField(v.string_element(k).size());
  }
  return n;
}

void AppendArrayBody(const MetaValue& v, std::string* out);

// An array's children, each a field 8: written to a buffer of its own
// first, as its length is known only then.
void AppendChildren(const MetaValue& v, std::string* out) {
  std::string child;
  for (size_t k = 0; k < v.array_size(); ++k) {
    child.clear();
    AppendArrayBody(v.child(k), &child);
    PutTag(out, 8, kLength);
    PutVarint(out, child.size());
    out->append(child);
  }
}

void AppendArrayBody(const MetaValue& v, std::string* out) {
  const ValueType et = v.element_type;
  if (et != ValueType::kUnspecified) {
    PutTag(out, 1, kVarint);
    PutVarint(out, static_cast<uint64_t>(et));
  }
  const size_t count = v.array_size();
  if (count == 0 || ElementField(et) == 0) return;
  if (et == ValueType::kArray) return AppendChildren(v, out);
  if (et == ValueType::kString) {
    for (size_t k = 0; k < count; ++k) {
      const std::string_view s = v.string_element(k);
      PutTag(out, 7, kLength);
      PutVarint(out, s.size());
      out->append(s);
    }
    return;
  }
  PutTag(out, ElementField(et), kLength);
  if (!IsVarintArray(et)) {  // floats: their packed bytes are the wire's
    PutVarint(out, v.packed_bytes().size());
    out->append(v.packed_bytes());
    return;
  }
  PutVarint(out, PackedVarintBytes(v));
  for (size_t k = 0; k < count; ++k) PutVarint(out, VarintElement(v, k));
}

// Bytes of a Value's fields but its array.
size_t ScalarFieldsSize(const MetaValue& v) {
  const ValueType t = v.type;
  size_t n = t != ValueType::kUnspecified ? 1 + VarintSize(static_cast<uint64_t>(t)) : 0;
  if (IsUnsignedInt(t) && v.u != 0) n += 1 + VarintSize(v.u);
  if (IsSignedInt(t) && v.i != 0) n += 1 + VarintSize(ZigZag(v.i));
  if (t == ValueType::kFloat32 && F32Bits(v) != 0) n += 5;
  if (t == ValueType::kFloat64 && F64Bits(v) != 0) n += 9;
  if (t == ValueType::kBool && v.b) n += 2;
  if (t == ValueType::kString && !v.s.empty()) n += LengthField(v.s.size());
  return n;
}

void AppendScalarFields(const MetaValue& v, std::string* out) {
  const ValueType t = v.type;
  if (t != ValueType::kUnspecified) {
    PutTag(out, 1, kVarint);
    PutVarint(out, static_cast<uint64_t>(t));
  }
  if (IsUnsignedInt(t) && v.u != 0) PutTag(out, 2, kVarint), PutVarint(out, v.u);
  if (IsSignedInt(t) && v.i != 0) PutTag(out, 3, kVarint), PutVarint(out, ZigZag(v.i));
  if (t == ValueType::kFloat32 && F32Bits(v) != 0) {
    PutTag(out, 4, kFixed32);
    out->append(reinterpret_cast<const char*>(&v.f32), 4);
  }
  if (t == ValueType::kFloat64 && F64Bits(v) != 0) {
    PutTag(out, 5, kFixed64);
    out->append(reinterpret_cast<const char*>(&v.f64), 8);
  }
  if (t == ValueType::kBool && v.b) PutTag(out, 6, kVarint), PutVarint(out, 1);
  if (t == ValueType::kString && !v.s.empty()) {
    PutTag(out, 7, kLength);
    PutVarint(out, v.s.size());
    out->append(v.s);
  }
}

// Reserved at the size it is about to reach: a large entry is not grown by
// doubling (twice its bytes for a moment), many small ones still are.
void Grow(std::string* out, size_t more) {
  const size_t need = out->size() + more;
  if (need > out->capacity()) out->reserve(std::max(need, out->capacity() * 2));
}

}  // namespace

size_t AppendMetadataEntry(std::string_view key, const MetaValue& value, std::string* out) {
  const bool is_array = value.type == ValueType::kArray;
  std::string nested;  // an array of arrays: its size is known once written
  if (is_array && value.element_type == ValueType::kArray) AppendArrayBody(value, &nested);
  const size_t array_bytes = !is_array ? 0 : value.element_type == ValueType::kArray ? nested.size() : FlatArraySize(value);
  const size_t value_bytes = ScalarFieldsSize(value) + (is_array ? LengthField(array_bytes) : 0);
  const size_t entry_bytes = (key.empty() ? 0 : LengthField(key.size())) + LengthField(value_bytes);
  Grow(out, LengthField(entry_bytes));
  PutTag(out, kManifestMetadataField, kLength);
  PutVarint(out, entry_bytes);
  const size_t payload = out->size();
  if (!key.empty()) {
    PutTag(out, 1, kLength);
    PutVarint(out, key.size());
    out->append(key);
  }
  PutTag(out, 2, kLength);
  PutVarint(out, value_bytes);
  AppendScalarFields(value, out);
  if (is_array) {
    PutTag(out, 8, kLength);
    PutVarint(out, array_bytes);
    if (value.element_type == ValueType::kArray) out->append(nested);
    else AppendArrayBody(value, out);
  }
  return payload;
}

}  // namespace boltpack::format
