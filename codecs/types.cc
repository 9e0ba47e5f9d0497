#include "boltpack/types.h"

#include <array>
#include <cstring>

namespace boltpack {
namespace {

struct DTypeEntry {
  std::string_view name;
  int size;
};

// Indexed by the DType number (frozen in spec/boltpack.proto), so a lookup is
// a bounds check and an index.
constexpr std::array<DTypeEntry, kMaxDType + 1> kDTypes = {{
    {"UNSPECIFIED", 0},
    {"F32", 4},
    {"F16", 2},
    {"BF16", 2},
    {"F64", 8},
    {"I8", 1},
    {"I16", 2},
    {"I32", 4},
    {"I64", 8},
    {"U8", 1},
    {"U16", 2},
    {"U32", 4},
    {"U64", 8},
    {"BOOL", 1},
    {"F8_E4M3", 1},
    {"F8_E5M2", 1},
    {"F8_E8M0", 1},
    {"C64", 8},  // two F32s (real, imaginary)
}};

bool SameFloatBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool SameDoubleBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

int DTypeSize(DType dtype) {
  const auto index = static_cast<size_t>(dtype);
  return index < kDTypes.size() ? kDTypes[index].size : 0;
}

std::string_view DTypeName(DType dtype) {
  const auto index = static_cast<size_t>(dtype);
  // An enum can hold any uint8 (e.g. after a cast from file data); name such
  // values instead of indexing past the table.
  return index < kDTypes.size() ? kDTypes[index].name : std::string_view("UNKNOWN");
}

std::optional<DType> DTypeFromName(std::string_view name) {
  // Index 0 is skipped: "UNSPECIFIED" names no real dtype.
  for (size_t i = 1; i < kDTypes.size(); ++i) {
    if (kDTypes[i].name == name) return static_cast<DType>(i);
  }
  return std::nullopt;
}

bool IsUnsignedInt(ValueType t) {
  return t == ValueType::kUint8 || t == ValueType::kUint16 || t == ValueType::kUint32 || t == ValueType::kUint64;
}

bool IsSignedInt(ValueType t) {
  return t == ValueType::kInt8 || t == ValueType::kInt16 || t == ValueType::kInt32 || t == ValueType::kInt64;
}

std::string_view ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kUnspecified: return "unspecified";
    case ValueType::kUint8: return "uint8";
    case ValueType::kInt8: return "int8";
    case ValueType::kUint16: return "uint16";
    case ValueType::kInt16: return "int16";
    case ValueType::kUint32: return "uint32";
    case ValueType::kInt32: return "int32";
    case ValueType::kUint64: return "uint64";
    case ValueType::kInt64: return "int64";
    case ValueType::kFloat32: return "float32";
    case ValueType::kFloat64: return "float64";
    case ValueType::kBool: return "bool";
    case ValueType::kString: return "string";
    case ValueType::kArray: return "array";
  }
  return "invalid";
}

MetaValue MetaValue::String(std::string v) {
  MetaValue m;
  m.type = ValueType::kString;
  m.s = std::move(v);
  return m;
}

MetaValue MetaValue::Uint(ValueType t, uint64_t v) {
  MetaValue m;
  m.type = t;
  m.u = v;
  return m;
}

MetaValue MetaValue::Int(ValueType t, int64_t v) {
  MetaValue m;
  m.type = t;
  m.i = v;
  return m;
}

MetaValue MetaValue::Float32(float v) {
  MetaValue m;
  m.type = ValueType::kFloat32;
  m.f32 = v;
  return m;
}

MetaValue MetaValue::Float64(double v) {
  MetaValue m;
  m.type = ValueType::kFloat64;
  m.f64 = v;
  return m;
}

MetaValue MetaValue::Bool(bool v) {
  MetaValue m;
  m.type = ValueType::kBool;
  m.b = v;
  return m;
}

MetaValue MetaValue::Array(ValueType element_type, std::vector<MetaValue> elements) {
  MetaValue m;
  m.type = ValueType::kArray;
  m.element_type = element_type;
  m.elements = std::move(elements);
  return m;
}

// Only the field that `type` selects is compared, so a value built by hand
// with stray data in unused fields still equals the one read back from a file.
// Floats compare by bits: a round trip must keep NaN payloads and -0.0, and
// NaN must equal itself for "did it survive" checks to work.
bool operator==(const MetaValue& a, const MetaValue& b) {
  if (a.type != b.type) return false;
  switch (a.type) {
    case ValueType::kUint8:
    case ValueType::kUint16:
    case ValueType::kUint32:
    case ValueType::kUint64:
      return a.u == b.u;
    case ValueType::kInt8:
    case ValueType::kInt16:
    case ValueType::kInt32:
    case ValueType::kInt64:
      return a.i == b.i;
    case ValueType::kFloat32:
      return SameFloatBits(a.f32, b.f32);
    case ValueType::kFloat64:
      return SameDoubleBits(a.f64, b.f64);
    case ValueType::kBool:
      return a.b == b.b;
    case ValueType::kString:
      return a.s == b.s;
    case ValueType::kArray:
      return a.element_type == b.element_type && a.elements == b.elements;
    case ValueType::kUnspecified:
      break;
  }
  // Unspecified or out-of-range types: no field is known to be the meaningful
  // one, so all of them must agree.
  return a.u == b.u && a.i == b.i && SameFloatBits(a.f32, b.f32) &&
         SameDoubleBits(a.f64, b.f64) && a.b == b.b && a.s == b.s &&
         a.element_type == b.element_type && a.elements == b.elements;
}

std::optional<OutputType> OutputTypeFromName(std::string_view name) {
  if (name == "f32") return OutputType::kF32;
  if (name == "bf16") return OutputType::kBF16;
  if (name == "f16") return OutputType::kF16;
  if (name == "native") return OutputType::kNative;
  return std::nullopt;
}

int OutputTypeSize(OutputType type) {
  switch (type) {
    case OutputType::kF32: return 4;
    case OutputType::kBF16: return 2;
    case OutputType::kF16: return 2;
    case OutputType::kNative: return 0;
  }
  return 0;
}

}  // namespace boltpack
