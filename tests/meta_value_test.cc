// MetaValue's packed arrays: every element type round-trips through the
// packed form, GGUF and the protobuf manifest, with its exact bits.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "boltpack/types.h"
#include "format/manifest_convert.h"
#include "gtest/gtest.h"
#include "io/gguf.h"

namespace boltpack {
namespace {

struct Case {
  ValueType type;
  std::vector<MetaValue> elements;
};

float F32Bits(uint32_t bits) { return std::bit_cast<float>(bits); }
double F64Bits(uint64_t bits) { return std::bit_cast<double>(bits); }

// The edges of every element type: extremes, -1, NaN payloads, -0.0.
std::vector<Case> AllTypes() {
  using VT = ValueType;
  auto u = [](VT t, std::vector<uint64_t> v) {
    Case c{t, {}};
    for (uint64_t x : v) c.elements.push_back(MetaValue::Uint(t, x));
    return c;
  };
  auto i = [](VT t, std::vector<int64_t> v) {
    Case c{t, {}};
    for (int64_t x : v) c.elements.push_back(MetaValue::Int(t, x));
    return c;
  };
  std::vector<Case> cases = {
      u(VT::kUint8, {0, 1, 127, 128, 255}),
      i(VT::kInt8, {-128, -1, 0, 1, 127}),
      u(VT::kUint16, {0, 0x1234, 0xffff}),
      i(VT::kInt16, {-32768, -2, 0, 32767}),
      u(VT::kUint32, {0, 0xdeadbeef, 0xffffffffu}),
      i(VT::kInt32, {INT32_MIN, -1, 0, INT32_MAX}),
      u(VT::kUint64, {0, uint64_t{1} << 63, ~uint64_t{0}}),
      i(VT::kInt64, {INT64_MIN, -1, 0, INT64_MAX}),
  };
  Case f32{VT::kFloat32, {}};
  for (float x : {0.0f, -0.0f, 1.5f, F32Bits(0x7fc00001u), F32Bits(0xff800000u), F32Bits(1)}) {
    f32.elements.push_back(MetaValue::Float32(x));
  }
  Case f64{VT::kFloat64, {}};
  for (double x : {0.0, -0.0, -2.25, F64Bits(0x7ff8000000000123ull), F64Bits(1)}) {
    f64.elements.push_back(MetaValue::Float64(x));
  }
  Case b{VT::kBool, {MetaValue::Bool(true), MetaValue::Bool(false), MetaValue::Bool(true)}};
  Case s{VT::kString,
         {MetaValue::String(""), MetaValue::String("tok"), MetaValue::String(std::string("a\0b", 3)),
          MetaValue::String(std::string(300, 'x')), MetaValue::String("")}};
  Case nested{VT::kArray,
              {MetaValue::Array(VT::kUint16, {MetaValue::Uint(VT::kUint16, 7)}), MetaValue::Array(VT::kString, {}),
               MetaValue::Array(VT::kString, {MetaValue::String("in")}),
               MetaValue::Array(VT::kArray, {MetaValue::Array(VT::kFloat32, {MetaValue::Float32(-0.0f)}),
                                             MetaValue::Array(VT::kBool, {MetaValue::Bool(true)})})}};
  for (auto& c : {f32, f64, b, s, nested}) cases.push_back(c);
  return cases;
}

std::string Name(const Case& c) { return std::string(ValueTypeName(c.type)); }

TEST(MetaValuePacked, ElementsRoundTripWithTheirBits) {
  for (const auto& c : AllTypes()) {
    SCOPED_TRACE(Name(c));
    const MetaValue a = MetaValue::Array(c.type, c.elements);
    ASSERT_EQ(a.array_size(), c.elements.size());
    for (size_t k = 0; k < c.elements.size(); ++k) {
      EXPECT_EQ(a.element(k), c.elements[k]) << "element " << k;
      const MetaValue& e = c.elements[k];
      if (IsUnsignedInt(c.type)) { EXPECT_EQ(a.uint_element(k), e.u); }
      if (IsSignedInt(c.type)) { EXPECT_EQ(a.int_element(k), e.i); }
      if (c.type == ValueType::kFloat32) {
        EXPECT_EQ(std::bit_cast<uint32_t>(a.f32_element(k)), std::bit_cast<uint32_t>(e.f32));
      }
      if (c.type == ValueType::kFloat64) {
        EXPECT_EQ(std::bit_cast<uint64_t>(a.f64_element(k)), std::bit_cast<uint64_t>(e.f64));
      }
      if (c.type == ValueType::kBool) { EXPECT_EQ(a.bool_element(k), e.b); }
      if (c.type == ValueType::kString) {
        EXPECT_EQ(a.string_element(k), e.s);
        // NUL-terminated in place, for the C API's pointers.
        EXPECT_EQ(a.string_element(k).data()[e.s.size()], '\0');
      }
      if (c.type == ValueType::kArray) { EXPECT_EQ(a.child(k), e); }
    }
    // Numbers and bools are one buffer of the element type's width.
    const int width = ValueTypeWidth(c.type);
    EXPECT_EQ(a.packed_bytes().size(), c.elements.size() * width);
    if (width > 0) {
      EXPECT_EQ(MetaValue::PackedArray(c.type, std::string(a.packed_bytes())), a);
    }
    // A copy equals; one changed element does not.
    MetaValue copy = a;
    EXPECT_EQ(copy, a);
    std::vector<MetaValue> changed = c.elements;
    changed.pop_back();
    EXPECT_NE(MetaValue::Array(c.type, changed), a);
  }
}

TEST(MetaValuePacked, LittleEndianBytesAtTheElementWidth) {
  const MetaValue a = MetaValue::Array(ValueType::kInt16, {MetaValue::Int(ValueType::kInt16, -2),
                                                          MetaValue::Int(ValueType::kInt16, 0x0102)});
  EXPECT_EQ(a.packed_bytes(), std::string("\xfe\xff\x02\x01", 4));
  EXPECT_EQ(a.int_element(0), -2);
  EXPECT_EQ(a.uint_element(0), 0xfffeu);  // the element's bits, zero-extended
  // Bool bytes other than 0 and 1 are normalized; a partial element is dropped.
  EXPECT_EQ(MetaValue::PackedArray(ValueType::kBool, std::string("\x00\x07", 2)).packed_bytes(),
            std::string("\x00\x01", 2));
  EXPECT_EQ(MetaValue::PackedArray(ValueType::kUint32, std::string(6, '\1')).array_size(), 1u);
  // Out of range: zero, never a read past the buffer.
  EXPECT_EQ(a.int_element(2), 0);
  EXPECT_EQ(a.string_element(0), "");
  EXPECT_EQ(a.child(0).type, ValueType::kUnspecified);
}

TEST(MetaValuePacked, ChildrenOfAnyKindRoundTrip) {
  // Children are encoded into the array's buffer; values of every kind
  // (scalars too, which only a hand-built array holds) come back equal.
  const std::vector<MetaValue> children = {
      MetaValue::Uint(ValueType::kUint8, 300),  // kept whole, as the value holds it
      MetaValue::Int(ValueType::kInt64, -9),
      MetaValue::Float32(F32Bits(0x7fc00005u)),
      MetaValue::Float64(-0.0),
      MetaValue::Bool(true),
      MetaValue::String(std::string("n\0ul", 4)),
      MetaValue::Array(ValueType::kInt8, {}),
      MetaValue::Array(ValueType::kArray, {MetaValue::Array(ValueType::kArray, {})}),
  };
  const MetaValue a = MetaValue::Array(ValueType::kArray, children);
  ASSERT_EQ(a.array_size(), children.size());
  for (size_t k = 0; k < children.size(); ++k) EXPECT_EQ(a.child(k), children[k]) << k;
  MetaValue::NestedArrayBuilder built;
  for (const auto& c : children) built.Add(c);
  EXPECT_EQ(built.Build(), a);
  EXPECT_EQ(built.Build().array_size(), 0u);  // the builder starts again
  EXPECT_EQ(a.child(children.size()).type, ValueType::kUnspecified);
}

TEST(MetaValuePacked, ValuesAreSmall) {
  // Scalars share one word; an array is one pointer to its packed storage.
  EXPECT_LE(sizeof(MetaValue), 56u);
}

TEST(MetaValuePacked, GgufRoundTripIsByteIdentical) {
  Metadata kv;
  for (const auto& c : AllTypes()) kv.emplace_back("k." + Name(c), MetaValue::Array(c.type, c.elements));
  auto bytes = io::EncodeGgufHeader("x.gguf", kv, {}, 3, 32, /*pad_empty=*/false);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto model = io::GgufModel::OpenBuffer(*bytes, "x.gguf");
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ((*model)->metadata().size(), kv.size());
  for (size_t k = 0; k < kv.size(); ++k) {
    EXPECT_EQ((*model)->metadata()[k].first, kv[k].first);
    EXPECT_EQ((*model)->metadata()[k].second, kv[k].second) << kv[k].first;
  }
  auto again = io::EncodeGgufHeader("x.gguf", (*model)->metadata(), {}, 3, 32, /*pad_empty=*/false);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *bytes);
}

TEST(MetaValuePacked, ManifestRoundTrip) {
  for (const auto& c : AllTypes()) {
    SCOPED_TRACE(Name(c));
    const MetaValue a = MetaValue::Array(c.type, c.elements);
    v1::Value proto;
    format::ToProto(a, &proto);
    EXPECT_EQ(format::FromProto(proto), a);
  }
  // Integers of a narrow type land in the proto's 64-bit fields by value.
  v1::Value proto;
  format::ToProto(MetaValue::Array(ValueType::kInt8, {MetaValue::Int(ValueType::kInt8, -5)}), &proto);
  ASSERT_EQ(proto.array().ints_size(), 1);
  EXPECT_EQ(proto.array().ints(0), -5);
}

}  // namespace
}  // namespace boltpack
