// Public value types of the bolt-pack C++ API: logical dtypes, typed
// metadata values and decode targets. Numbers mirror spec/boltpack.proto.
#ifndef BOLTPACK_TYPES_H_
#define BOLTPACK_TYPES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace boltpack {

// What a tensor is, independent of how a codec stores it.
enum class DType : uint8_t {
  kUnspecified = 0,
  kF32 = 1,
  kF16 = 2,
  kBF16 = 3,
  kF64 = 4,
  kI8 = 5,
  kI16 = 6,
  kI32 = 7,
  kI64 = 8,
  kU8 = 9,
  kU16 = 10,
  kU32 = 11,
  kU64 = 12,
  kBool = 13,
  kF8E4M3 = 14,
  kF8E5M2 = 15,
  kF8E8M0 = 16,
  kC64 = 17,
};
inline constexpr int kMaxDType = 17;

// Bytes per element (every v1 dtype is a whole number of bytes).
int DTypeSize(DType dtype);
// Safetensors spelling: "F32", "BF16", "I64", "F8_E4M3", ...
std::string_view DTypeName(DType dtype);
std::optional<DType> DTypeFromName(std::string_view name);

// Typed metadata values: GGUF's thirteen types, so widths and signedness
// survive a round trip.
enum class ValueType : uint8_t {
  kUnspecified = 0,
  kUint8 = 1,
  kInt8 = 2,
  kUint16 = 3,
  kInt16 = 4,
  kUint32 = 5,
  kInt32 = 6,
  kUint64 = 7,
  kInt64 = 8,
  kFloat32 = 9,
  kFloat64 = 10,
  kBool = 11,
  kString = 12,
  kArray = 13,
};
std::string_view ValueTypeName(ValueType type);
// Which MetaValue field holds a scalar of this type: `u` or `i`.
bool IsUnsignedInt(ValueType type);
bool IsSignedInt(ValueType type);

// The narrow fields come first so that they share one 8-byte word: an
// array element is 88 bytes, not 112 (a GGUF may hold 2^22 of them).
struct MetaValue {
  ValueType type = ValueType::kUnspecified;
  ValueType element_type = ValueType::kUnspecified;  // kArray
  bool b = false;      // kBool
  float f32 = 0;       // kFloat32
  uint64_t u = 0;      // kUint8..kUint64
  int64_t i = 0;       // kInt8..kInt64
  double f64 = 0;      // kFloat64
  std::string s;       // kString (bytes; UTF-8 when written by bolt-pack)
  std::vector<MetaValue> elements;                   // kArray

  static MetaValue String(std::string v);
  static MetaValue Uint(ValueType t, uint64_t v);
  static MetaValue Int(ValueType t, int64_t v);
  static MetaValue Float32(float v);
  static MetaValue Float64(double v);
  static MetaValue Bool(bool v);
  static MetaValue Array(ValueType element_type, std::vector<MetaValue> elements);

  friend bool operator==(const MetaValue&, const MetaValue&);
};

// Ordered key/value list (order is part of the data: GGUF keeps it).
using Metadata = std::vector<std::pair<std::string, MetaValue>>;
using CodecParams = std::vector<std::pair<std::string, MetaValue>>;

// What a decode writes into the caller's buffer.
enum class OutputType : uint8_t {
  kF32 = 0,
  kBF16 = 1,
  kF16 = 2,
  kNative = 3,  // the codec's stored element form (raw codecs: their dtype)
};
std::optional<OutputType> OutputTypeFromName(std::string_view name);
// Bytes per element of a decode target; 0 for kNative (codec-defined).
int OutputTypeSize(OutputType type);

}  // namespace boltpack

#endif  // BOLTPACK_TYPES_H_
