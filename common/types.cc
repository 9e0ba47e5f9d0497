#include "boltpack/types.h"

#include <array>
#include <cstring>
#include <utility>

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

namespace {
constexpr std::pair<OutputType, std::string_view> kOutputTypeNames[] = {
    {OutputType::kF32, "f32"}, {OutputType::kBF16, "bf16"}, {OutputType::kF16, "f16"}, {OutputType::kNative, "native"}};
}  // namespace

std::string_view OutputTypeName(OutputType type) {
  for (const auto& [t, name] : kOutputTypeNames) {
    if (t == type) return name;
  }
  return "invalid";
}

std::optional<OutputType> OutputTypeFromName(std::string_view name) {
  for (const auto& [t, n] : kOutputTypeNames) {
    if (n == name) return t;
  }
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
