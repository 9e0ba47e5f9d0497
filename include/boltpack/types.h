// Public value types of the bolt-pack C++ API: logical dtypes, typed
// metadata values and decode targets. Numbers mirror spec/boltpack.proto.
#ifndef BOLTPACK_TYPES_H_
#define BOLTPACK_TYPES_H_

#include <cstdint>
#include <memory>
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

// A typed metadata value. Scalars share one 8-byte word (the field that
// `type` selects is the meaningful one). Arrays are packed the way GGUF
// stores them, so that an array costs about its bytes (a file may hold 2^22
// elements): numeric and bool elements as one little-endian buffer of the
// element type's width, strings as one blob and end offsets, and only
// nested arrays as their children encoded one after another.
// 56 bytes a value.
struct MetaValue {
 private:
  struct ArrayData;

 public:
  ValueType type = ValueType::kUnspecified;
  ValueType element_type = ValueType::kUnspecified;  // kArray
  union {
    uint64_t u = 0;  // kUint8..kUint64
    int64_t i;       // kInt8..kInt64
    double f64;      // kFloat64
    float f32;       // kFloat32
    bool b;          // kBool
  };
  std::string s;  // kString (bytes; UTF-8 when written by bolt-pack)

  MetaValue();
  ~MetaValue();
  MetaValue(const MetaValue& other);
  MetaValue(MetaValue&& other) noexcept;
  MetaValue& operator=(const MetaValue& other);
  MetaValue& operator=(MetaValue&& other) noexcept;

  static MetaValue String(std::string v);
  static MetaValue Uint(ValueType t, uint64_t v);
  static MetaValue Int(ValueType t, int64_t v);
  static MetaValue Float32(float v);
  static MetaValue Float64(double v);
  static MetaValue Bool(bool v);
  // Packs `elements` (each read through the field `element_type` selects;
  // integers kept at the element type's width, as a cast would).
  static MetaValue Array(ValueType element_type, std::vector<MetaValue> elements);
  // A numeric or bool array from its little-endian elements: `bytes` holds
  // a whole number of ValueTypeWidth(element_type) units (bools 0 or 1).
  static MetaValue PackedArray(ValueType element_type, std::string bytes);
  // Builds a string array into one blob, each string followed by a NUL (so
  // that string_element(k).data() is NUL-terminated, as C callers expect).
  class StringArrayBuilder {
   public:
    void Reserve(size_t count, size_t bytes);  // bytes: of all strings together
    void Add(std::string_view s);
    MetaValue Build();

   private:
    std::string blob_;
    std::vector<uint64_t> ends_;
  };

  // Builds an array of arrays one child at a time, each kept encoded in
  // one buffer (about its GGUF bytes, plus an 8-byte end), not as a value
  // of its own: a file of millions of tiny arrays stays small.
  class NestedArrayBuilder {
   public:
    NestedArrayBuilder();
    ~NestedArrayBuilder();
    void Reserve(size_t count);
    void Add(const MetaValue& child);
    MetaValue Build();

   private:
    std::unique_ptr<ArrayData> data_;
  };

  // Arrays: the number of elements (0 for a scalar) and element k (past
  // the end or of another element type: 0, empty or an unspecified value).
  size_t array_size() const;
  MetaValue element(size_t k) const;  // a copy, for any element type
  uint64_t uint_element(size_t k) const;         // any width: its bits, zero-extended
  int64_t int_element(size_t k) const;           // any width: its bits, sign-extended
  float f32_element(size_t k) const;             // kFloat32
  double f64_element(size_t k) const;            // kFloat64
  bool bool_element(size_t k) const;             // kBool
  // kString: a view of the array's storage, NUL-terminated.
  std::string_view string_element(size_t k) const;
  MetaValue child(size_t k) const;  // kArray and widthless types (a copy)
  // The packed little-endian elements of a numeric or bool array.
  std::string_view packed_bytes() const;

  friend bool operator==(const MetaValue&, const MetaValue&);

 private:
  std::unique_ptr<ArrayData> array_;
};

// Bytes of one packed array element of this type: 1, 2, 4 or 8 for the
// numeric types and bool, 0 for strings, arrays and unknown types.
int ValueTypeWidth(ValueType type);

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
// "f32", "bf16", "f16", "native": how the CLI, the C API's messages and
// the codecs' errors name a decode target (one table for both directions).
std::string_view OutputTypeName(OutputType type);
std::optional<OutputType> OutputTypeFromName(std::string_view name);
// Bytes per element of a decode target; 0 for kNative (codec-defined).
int OutputTypeSize(OutputType type);

}  // namespace boltpack

#endif  // BOLTPACK_TYPES_H_
