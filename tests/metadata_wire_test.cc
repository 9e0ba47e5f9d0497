// format/metadata_wire.h: metadata entries read from and written to the
// wire without protobuf messages must be exactly protobuf's: the bytes
// protobuf serializes, the values FromProto gives for what protobuf parses
// (odd but valid wire forms included), the errors of ValidateValue.
#include "format/metadata_wire.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "boltpack_proto/boltpack.pb.h"
#include "format/manifest_convert.h"
#include "format/manifest_stream.h"
#include "gtest/gtest.h"
#include "tests/proto_wire.h"

namespace boltpack::format {
namespace {

using testing::Field;
using testing::Varint;
using testing::VarintField;

absl::Span<const uint8_t> AsBytes(const std::string& s) {
  return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// What protobuf serializes the entry (key, ToProto(value)) to, as field 7.
std::string ProtobufEntry(const std::string& key, const MetaValue& value) {
  v1::Manifest m;
  auto* e = m.add_metadata();
  e->set_key(key);
  ToProto(value, e->mutable_value());
  return m.SerializeAsString();
}

std::vector<MetaValue> Samples() {
  std::vector<MetaValue> v = {
      MetaValue::Uint(ValueType::kUint8, 0),      MetaValue::Uint(ValueType::kUint32, 4000000000u),
      MetaValue::Uint(ValueType::kUint64, ~0ull), MetaValue::Int(ValueType::kInt8, -128),
      MetaValue::Int(ValueType::kInt64, 0),       MetaValue::Int(ValueType::kInt64, INT64_MIN),
      MetaValue::Float32(0.0f),                   MetaValue::Float32(-0.0f),
      MetaValue::Float32(std::nanf("7")),         MetaValue::Float64(0.0),
      MetaValue::Float64(-1e-300),                MetaValue::Bool(false),
      MetaValue::Bool(true),                      MetaValue::String(""),
      MetaValue::String(std::string("a\0\xff", 3))};
  v.push_back(MetaValue::Array(ValueType::kUint16, {}));
  v.push_back(MetaValue::Array(ValueType::kUint16, {MetaValue::Uint(ValueType::kUint16, 0),
                                                    MetaValue::Uint(ValueType::kUint16, 65535)}));
  v.push_back(MetaValue::Array(ValueType::kInt32, {MetaValue::Int(ValueType::kInt32, -1),
                                                   MetaValue::Int(ValueType::kInt32, INT32_MIN)}));
  v.push_back(MetaValue::Array(ValueType::kFloat32, {MetaValue::Float32(1.5f), MetaValue::Float32(-0.0f)}));
  v.push_back(MetaValue::Array(ValueType::kFloat64, {MetaValue::Float64(2.5)}));
  v.push_back(MetaValue::Array(ValueType::kBool, {MetaValue::Bool(true), MetaValue::Bool(false)}));
  v.push_back(MetaValue::Array(ValueType::kString, {MetaValue::String(""), MetaValue::String(std::string(300, 'x'))}));
  v.push_back(MetaValue::Array(ValueType::kString, {}));
  // Nested, depth 3, with empty children.
  MetaValue inner = MetaValue::Array(ValueType::kUint8, {MetaValue::Uint(ValueType::kUint8, 7)});
  MetaValue mid = MetaValue::Array(ValueType::kArray, {inner, MetaValue::Array(ValueType::kUint8, {})});
  v.push_back(MetaValue::Array(ValueType::kArray, {mid, MetaValue::Array(ValueType::kArray, {}), mid}));
  return v;
}

TEST(MetadataWire, EntriesAreTheBytesProtobufSerializes) {
  for (const MetaValue& value : Samples()) {
    std::string ours;
    const size_t payload = AppendMetadataEntry("k.key", value, &ours);
    EXPECT_EQ(ours, ProtobufEntry("k.key", value)) << ValueTypeName(value.type);
    v1::MetadataEntry entry;  // `payload` is where the entry starts
    ASSERT_TRUE(entry.ParseFromString(ours.substr(payload)));
    EXPECT_EQ(entry.key(), "k.key");
  }
  // Large entries: lengths of several varint bytes.
  std::vector<MetaValue> many;
  for (int k = 0; k < 70000; ++k) many.push_back(MetaValue::String(std::to_string(k)));
  const MetaValue big = MetaValue::Array(ValueType::kString, std::move(many));
  std::string ours;
  AppendMetadataEntry("tokens", big, &ours);
  EXPECT_EQ(ours, ProtobufEntry("tokens", big));
}

// The entries of `manifest` read as the reader reads them.
absl::StatusOr<Metadata> Read(const std::string& manifest) {
  v1::Manifest head;
  MetadataWire wire;
  auto count = ParseManifestHead(AsBytes(manifest), "m.bolt", &head, &wire);
  if (!count.ok()) return count.status();
  Metadata out;
  absl::Status read = ReadMetadataWire(wire, "m.bolt", &out);
  if (!read.ok()) return read;
  return out;
}

// What protobuf parses the same manifest into, converted by FromProto.
Metadata Protobuf(const std::string& manifest) {
  v1::Manifest m;
  EXPECT_TRUE(m.ParseFromString(manifest));
  Metadata out;
  for (const auto& e : m.metadata()) out.emplace_back(e.key(), FromProto(e.value()));
  return out;
}

TEST(MetadataWire, ValuesAreWhatProtobufParses) {
  std::string manifest;
  int k = 0;
  for (const MetaValue& value : Samples()) AppendMetadataEntry("key" + std::to_string(k++), value, &manifest);
  auto ours = Read(manifest);
  ASSERT_TRUE(ours.ok()) << ours.status();
  EXPECT_EQ(*ours, Protobuf(manifest));
  EXPECT_EQ(ours->size(), Samples().size());
}

TEST(MetadataWire, OddWireFormsParseAsProtobufParsesThem) {
  const std::string array_type = VarintField(1, 5);  // UINT32
  // Unpacked and packed uints, twice; the array and the value each split
  // in two occurrences (merged); the key given twice (the last wins); an
  // unknown field and a field of an unexpected wire type (unknown too).
  const std::string packed = Field(2, Varint(1) + Varint(300));
  const std::string array_a = array_type + VarintField(2, 9) + packed;
  const std::string array_b = Field(2, Varint(70000)) + VarintField(99, 1) + Field(3, "");
  const std::string value_a = VarintField(1, 13) + Field(8, array_a);
  const std::string value_b = Field(8, array_b) + VarintField(7, 1);
  const std::string entry = Field(1, "first") + Field(2, value_a) + Field(1, "odd.key") + Field(2, value_b);
  const std::string manifest = Field(7, entry) + Field(7, Field(1, "s") + Field(2, VarintField(1, 12) + Field(7, "x")));
  auto ours = Read(manifest);
  ASSERT_TRUE(ours.ok()) << ours.status();
  const Metadata theirs = Protobuf(manifest);
  EXPECT_EQ(*ours, theirs);
  ASSERT_EQ(ours->size(), 2u);
  EXPECT_EQ((*ours)[0].first, "odd.key");
  ASSERT_EQ((*ours)[0].second.array_size(), 4u);
  EXPECT_EQ((*ours)[0].second.uint_element(3), 70000u);
  EXPECT_EQ((*ours)[1].second.s, "x");
}

TEST(MetadataWire, WhatProtobufRefusesIsNotAManifest) {
  const std::string array_ok = VarintField(1, 1);
  const std::vector<std::string> bad_entries = {
      Field(1, "\xff") + Field(2, VarintField(1, 1)),                                  // key not UTF-8
      Field(1, "k") + Field(2, VarintField(1, 13) + Field(8, array_ok + Field(2, "\x80"))),  // cut varint
      Field(1, "k") + Field(2, VarintField(1, 13) + Field(8, VarintField(1, 9) + Field(4, "abc"))),  // 3-byte f32s
  };
  for (const std::string& entry : bad_entries) {
    const std::string manifest = Field(7, entry);
    v1::Manifest m;
    EXPECT_FALSE(m.ParseFromString(manifest));
    auto ours = Read(manifest);
    ASSERT_FALSE(ours.ok());
    EXPECT_EQ(ours.status().message(), "m.bolt: manifest is not a valid boltpack.v1.Manifest");
  }
}

TEST(MetadataWire, ValuesAreCheckedAsValidateValueChecksThem) {
  struct Case {
    std::string value;
    std::string message;
  };
  const std::vector<Case> cases = {
      {VarintField(1, 99), "m.bolt: metadata \"k\": unknown value type 99"},
      {VarintField(1, 1) + VarintField(2, 256), "m.bolt: metadata \"k\": 256 out of range for UINT8"},
      {VarintField(1, 13) + Field(8, VarintField(1, 1) + Field(2, Varint(1) + Varint(256))),
       "m.bolt: metadata \"k\": array element 256 out of range for UINT8"},
      {VarintField(1, 13) + Field(8, VarintField(1, 12) + Field(2, Varint(1))),
       "m.bolt: metadata \"k\": array of STRING holds elements of another type"},
      {VarintField(1, 13), "m.bolt: metadata \"k\": unknown array element type 0"},
  };
  for (const Case& c : cases) {
    const std::string manifest = Field(7, Field(1, "k") + Field(2, c.value));
    auto ours = Read(manifest);
    ASSERT_FALSE(ours.ok()) << c.message;
    EXPECT_EQ(ours.status().message(), c.message);
    v1::Value proto;
    ASSERT_TRUE(proto.ParseFromString(c.value));
    absl::Status theirs = ValidateValue(proto, 0, [] { return std::string("m.bolt: metadata \"k\""); });
    EXPECT_EQ(theirs.message(), c.message);
  }
  // Keys: empty, repeated.
  auto empty = Read(Field(7, Field(2, VarintField(1, 1))));
  EXPECT_EQ(empty.status().message(), "m.bolt: empty metadata key");
  const std::string one = Field(7, Field(1, "a") + Field(2, VarintField(1, 1)));
  auto twice = Read(one + one);
  EXPECT_EQ(twice.status().message(), "m.bolt: duplicate metadata key \"a\"");
}

}  // namespace
}  // namespace boltpack::format
