// MetaValue: scalar factories, the packed array representation and its
// accessors, equality.
#include <algorithm>
#include <cstring>

#include "boltpack/types.h"

namespace boltpack {

// One of four forms, by element type: `bytes` alone (numeric and bool:
// size / width elements); `bytes` as a blob of NUL-terminated strings with
// the end of each in `ends` (strings); `bytes` as the children encoded one
// after another (EncodeValue below) with the end of each in `ends`
// (arrays); or `children` (element types without a width, unknown ones).
struct MetaValue::ArrayData {
  std::string bytes;
  std::vector<uint64_t> ends;
  std::vector<MetaValue> children;

  friend bool operator==(const ArrayData&, const ArrayData&) = default;
};

namespace {

bool SameFloatBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool SameDoubleBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The low `width` bytes of `bits`, little-endian (the host order: bolt-pack
// builds for little-endian targets only, as GGUF's own readers do).
void AppendBits(std::string* out, uint64_t bits, int width) {
  char tmp[8];
  std::memcpy(tmp, &bits, sizeof tmp);
  out->append(tmp, static_cast<size_t>(width));
}

uint64_t ZeroExtendedAt(std::string_view bytes, size_t k, int width) {
  uint64_t v = 0;
  std::memcpy(&v, bytes.data() + k * width, static_cast<size_t>(width));
  return v;
}

// The bits a packed element of `et` stores for value `e` (read through the
// field `et` selects, as the writers always did).
uint64_t PackedBits(ValueType et, const MetaValue& e) {
  if (IsSignedInt(et)) return static_cast<uint64_t>(e.i);
  if (et == ValueType::kFloat32) {
    uint32_t bits = 0;
    std::memcpy(&bits, &e.f32, sizeof bits);
    return bits;
  }
  if (et == ValueType::kFloat64) {
    uint64_t bits = 0;
    std::memcpy(&bits, &e.f64, sizeof bits);
    return bits;
  }
  if (et == ValueType::kBool) return e.b ? 1 : 0;
  return e.u;
}

void AppendU64(std::string* out, uint64_t v) { AppendBits(out, v, 8); }

uint64_t ReadU64At(std::string_view bytes, size_t* at) {
  uint64_t v = 0;
  if (*at + 8 <= bytes.size()) std::memcpy(&v, bytes.data() + *at, 8);
  *at += 8;
  return v;
}

}  // namespace

namespace {

// Scalars of a known type and width carry their bits alone, so that equal
// values encode alike; other types keep every field equality compares.
bool IsWordScalar(ValueType t) { return IsUnsignedInt(t) || IsSignedInt(t) || t == ValueType::kFloat64; }

// A value as bytes, for the children of an array of arrays: the type, then
// a scalar's bits or a string's length and bytes, or an array's element
// type, count and elements (packed bytes; strings as length and bytes;
// children recursively). In memory only, so host order.
void EncodeValue(const MetaValue& v, std::string* out) {
  out->push_back(static_cast<char>(v.type));
  if (v.type == ValueType::kArray) {
    out->push_back(static_cast<char>(v.element_type));
    const size_t n = v.array_size();
    AppendU64(out, n);
    if (ValueTypeWidth(v.element_type) > 0) {
      out->append(v.packed_bytes());
    } else if (v.element_type == ValueType::kString) {
      for (size_t k = 0; k < n; ++k) {
        AppendU64(out, v.string_element(k).size());
        out->append(v.string_element(k));
      }
    } else {
      for (size_t k = 0; k < n; ++k) EncodeValue(v.child(k), out);
    }
  } else if (v.type == ValueType::kFloat32) {
    AppendBits(out, PackedBits(v.type, v), 4);
  } else if (v.type == ValueType::kBool) {
    out->push_back(v.b ? 1 : 0);
  } else if (IsWordScalar(v.type)) {
    AppendU64(out, v.u);
  } else {
    if (v.type != ValueType::kString) AppendU64(out, v.u);
    AppendU64(out, v.s.size());
    out->append(v.s);
  }
}

std::string_view Take(std::string_view bytes, size_t* at, uint64_t n) {
  const size_t from = std::min(*at, bytes.size());
  *at = from + std::min<uint64_t>(n, bytes.size() - from);
  return bytes.substr(from, *at - from);
}

// The inverse of EncodeValue, from bytes it wrote.
MetaValue DecodeValue(std::string_view bytes, size_t* at) {
  MetaValue v;
  if (*at >= bytes.size()) return v;
  v.type = static_cast<ValueType>(bytes[(*at)++]);
  if (v.type == ValueType::kFloat32) {
    const std::string_view bits = Take(bytes, at, 4);
    if (bits.size() == 4) std::memcpy(&v.f32, bits.data(), 4);
    return v;
  }
  if (v.type == ValueType::kBool) {
    v.b = Take(bytes, at, 1) == std::string_view("\1", 1);
    return v;
  }
  if (IsWordScalar(v.type)) {
    v.u = ReadU64At(bytes, at);
    return v;
  }
  if (v.type != ValueType::kArray) {
    if (v.type != ValueType::kString) v.u = ReadU64At(bytes, at);
    const uint64_t len = ReadU64At(bytes, at);
    v.s = std::string(Take(bytes, at, len));
    return v;
  }
  const auto et = static_cast<ValueType>(Take(bytes, at, 1).empty() ? 0 : bytes[*at - 1]);
  const uint64_t n = ReadU64At(bytes, at);
  if (const int width = ValueTypeWidth(et); width > 0) return MetaValue::PackedArray(et, std::string(Take(bytes, at, n * width)));
  if (et == ValueType::kString) {
    MetaValue::StringArrayBuilder strings;
    for (uint64_t k = 0; k < n && *at < bytes.size(); ++k) {
      const uint64_t len = ReadU64At(bytes, at);
      strings.Add(Take(bytes, at, len));
    }
    return strings.Build();
  }
  std::vector<MetaValue> children;
  for (uint64_t k = 0; k < n && *at < bytes.size(); ++k) children.push_back(DecodeValue(bytes, at));
  return MetaValue::Array(et, std::move(children));
}

}  // namespace

MetaValue::NestedArrayBuilder::NestedArrayBuilder() : data_(std::make_unique<ArrayData>()) {}
MetaValue::NestedArrayBuilder::~NestedArrayBuilder() = default;

void MetaValue::NestedArrayBuilder::Reserve(size_t count) { data_->ends.reserve(count); }

void MetaValue::NestedArrayBuilder::Add(const MetaValue& child) {
  EncodeValue(child, &data_->bytes);
  data_->ends.push_back(data_->bytes.size());
}

MetaValue MetaValue::NestedArrayBuilder::Build() {
  MetaValue m;
  m.type = ValueType::kArray;
  m.element_type = ValueType::kArray;
  if (!data_->ends.empty()) m.array_ = std::move(data_);
  data_ = std::make_unique<ArrayData>();
  return m;
}

int ValueTypeWidth(ValueType type) {
  switch (type) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool: return 1;
    case ValueType::kUint16:
    case ValueType::kInt16: return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32: return 4;
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64: return 8;
    default: return 0;
  }
}

MetaValue::MetaValue() = default;
MetaValue::~MetaValue() = default;
MetaValue::MetaValue(MetaValue&& other) noexcept = default;
MetaValue& MetaValue::operator=(MetaValue&& other) noexcept = default;

MetaValue::MetaValue(const MetaValue& other)
    : type(other.type),
      element_type(other.element_type),
      u(other.u),
      s(other.s),
      array_(other.array_ ? std::make_unique<ArrayData>(*other.array_) : nullptr) {}

MetaValue& MetaValue::operator=(const MetaValue& other) {
  if (this != &other) *this = MetaValue(other);
  return *this;
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
  if (elements.empty()) return m;
  m.array_ = std::make_unique<ArrayData>();
  ArrayData& a = *m.array_;
  if (const int width = ValueTypeWidth(element_type); width > 0) {
    a.bytes.reserve(elements.size() * width);
    for (const auto& e : elements) AppendBits(&a.bytes, PackedBits(element_type, e), width);
  } else if (element_type == ValueType::kString) {
    StringArrayBuilder strings;
    size_t bytes = 0;
    for (const auto& e : elements) bytes += e.s.size();
    strings.Reserve(elements.size(), bytes);
    for (const auto& e : elements) strings.Add(e.s);
    return strings.Build();
  } else if (element_type == ValueType::kArray) {
    NestedArrayBuilder children;
    children.Reserve(elements.size());
    for (const auto& e : elements) children.Add(e);
    return children.Build();
  } else {
    a.children = std::move(elements);
  }
  return m;
}

MetaValue MetaValue::PackedArray(ValueType element_type, std::string bytes) {
  MetaValue m;
  m.type = ValueType::kArray;
  m.element_type = element_type;
  const int width = ValueTypeWidth(element_type);
  if (width == 0 || bytes.empty()) return m;
  bytes.resize(bytes.size() - bytes.size() % width);
  if (element_type == ValueType::kBool) {
    for (char& c : bytes) c = c != 0 ? 1 : 0;
  }
  m.array_ = std::make_unique<ArrayData>();
  m.array_->bytes = std::move(bytes);
  return m;
}

void MetaValue::StringArrayBuilder::Reserve(size_t count, size_t bytes) {
  ends_.reserve(count);
  blob_.reserve(bytes + count);
}

void MetaValue::StringArrayBuilder::Add(std::string_view s) {
  blob_.append(s);
  ends_.push_back(blob_.size());
  blob_.push_back('\0');
}

MetaValue MetaValue::StringArrayBuilder::Build() {
  MetaValue m;
  m.type = ValueType::kArray;
  m.element_type = ValueType::kString;
  if (ends_.empty()) return m;
  m.array_ = std::make_unique<ArrayData>();
  m.array_->bytes = std::move(blob_);
  m.array_->ends = std::move(ends_);
  blob_.clear();
  ends_.clear();
  return m;
}

size_t MetaValue::array_size() const {
  if (type != ValueType::kArray || !array_) return 0;
  if (const int width = ValueTypeWidth(element_type); width > 0) return array_->bytes.size() / width;
  if (element_type == ValueType::kString || element_type == ValueType::kArray) return array_->ends.size();
  return array_->children.size();
}

uint64_t MetaValue::uint_element(size_t k) const {
  const int width = ValueTypeWidth(element_type);
  if (width == 0 || k >= array_size()) return 0;
  return ZeroExtendedAt(array_->bytes, k, width);
}

int64_t MetaValue::int_element(size_t k) const {
  const int width = ValueTypeWidth(element_type);
  if (width == 0 || k >= array_size()) return 0;
  const int shift = 64 - 8 * width;
  return static_cast<int64_t>(ZeroExtendedAt(array_->bytes, k, width) << shift) >> shift;
}

float MetaValue::f32_element(size_t k) const {
  if (element_type != ValueType::kFloat32 || k >= array_size()) return 0;
  float v = 0;
  std::memcpy(&v, array_->bytes.data() + k * sizeof v, sizeof v);
  return v;
}

double MetaValue::f64_element(size_t k) const {
  if (element_type != ValueType::kFloat64 || k >= array_size()) return 0;
  double v = 0;
  std::memcpy(&v, array_->bytes.data() + k * sizeof v, sizeof v);
  return v;
}

bool MetaValue::bool_element(size_t k) const { return uint_element(k) != 0; }

std::string_view MetaValue::string_element(size_t k) const {
  if (element_type != ValueType::kString || k >= array_size()) return {};
  const uint64_t begin = k == 0 ? 0 : array_->ends[k - 1] + 1;  // past the previous NUL
  return std::string_view(array_->bytes).substr(begin, array_->ends[k] - begin);
}

MetaValue MetaValue::child(size_t k) const {
  if (ValueTypeWidth(element_type) > 0 || element_type == ValueType::kString || k >= array_size()) return {};
  if (element_type != ValueType::kArray) return array_->children[k];
  size_t at = k == 0 ? 0 : array_->ends[k - 1];
  return DecodeValue(array_->bytes, &at);
}

std::string_view MetaValue::packed_bytes() const {
  if (ValueTypeWidth(element_type) == 0 || !array_) return {};
  return array_->bytes;
}

MetaValue MetaValue::element(size_t k) const {
  const ValueType et = element_type;
  if (IsUnsignedInt(et)) return Uint(et, uint_element(k));
  if (IsSignedInt(et)) return Int(et, int_element(k));
  if (et == ValueType::kFloat32) return Float32(f32_element(k));
  if (et == ValueType::kFloat64) return Float64(f64_element(k));
  if (et == ValueType::kBool) return Bool(bool_element(k));
  if (et == ValueType::kString) return String(std::string(string_element(k)));
  return child(k);
}

namespace {

// Packed elements compare by bytes, which is by bits for floats: a round
// trip must keep NaN payloads and -0.0, and NaN must equal itself.
template <typename A>
bool SameArrays(const A* a, const A* b) {
  static const A kEmpty;
  return (a ? *a : kEmpty) == (b ? *b : kEmpty);
}

}  // namespace

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
      return a.element_type == b.element_type && SameArrays(a.array_.get(), b.array_.get());
    case ValueType::kUnspecified:
      break;
  }
  // Unspecified or out-of-range types: no field is known to be the meaningful
  // one, so all of them must agree (the scalars share one word).
  return a.u == b.u && a.s == b.s && a.element_type == b.element_type &&
         SameArrays(a.array_.get(), b.array_.get());
}

}  // namespace boltpack
