// The manifest pre-scan (format/manifest_scan.h) on hand-made wire data:
// what it counts, in which wire forms, and what it leaves to the parser.
#include <string>

#include "format/manifest_scan.h"
#include "gtest/gtest.h"
#include "tests/proto_wire.h"

namespace boltpack::format {
namespace {

using testing::Field;
using testing::Varint;
using testing::VarintField;

absl::Status Scan(const std::string& manifest) {
  return ScanManifestLimits({reinterpret_cast<const uint8_t*>(manifest.data()), manifest.size()}, "m.bolt");
}

std::string TensorWithStreams(int n) {
  std::string t = Field(1, "t");
  for (int i = 0; i < n; ++i) t += Field(5, "");
  return Field(8, t);
}

TEST(ManifestScan, StreamsPastTheLimitAreCountedPerTensor) {
  EXPECT_TRUE(Scan(TensorWithStreams(64) + TensorWithStreams(64)).ok());
  absl::Status s = Scan(TensorWithStreams(65));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "m.bolt: tensor \"t\": more than 64 streams (spec C-9.8)");
}

TEST(ManifestScan, ShapesCountPackedAndUnpacked) {
  std::string packed, unpacked;
  for (int i = 0; i < 9; ++i) {
    packed += Varint(300);  // two bytes each: elements, not bytes, count
    unpacked += VarintField(2, 1);
  }
  for (const std::string& shape : {Field(2, packed), unpacked}) {
    absl::Status s = Scan(Field(8, Field(1, "w") + shape));
    EXPECT_EQ(s.message(), "m.bolt: tensor \"w\": 9 dimensions exceed the limit of 8 (spec C-9.6)") << s;
  }
  EXPECT_TRUE(Scan(Field(8, Field(1, "w") + Field(2, packed.substr(0, 16)))).ok());
}

TEST(ManifestScan, KnownFieldsOfAnotherWireTypeAreNotRecords) {
  // Field 5 as varints is an unknown field to protobuf, not 65 streams.
  std::string t = Field(1, "t");
  for (int i = 0; i < 65; ++i) t += VarintField(5, 0);
  EXPECT_TRUE(Scan(Field(8, t)).ok());
}

TEST(ManifestScan, MalformedDataIsLeftToTheParser) {
  // A length past the end: the scan stops, the parser reports DATA_LOSS.
  EXPECT_TRUE(Scan(TensorWithStreams(65).substr(0, 40)).ok());
  EXPECT_TRUE(Scan(Varint(8 << 3 | 2) + Varint(1000)).ok());
  EXPECT_TRUE(Scan(std::string("\x07", 1)).ok());  // wire type 7
}

TEST(ManifestScan, UnnamedTensorsAreNamedByIndex) {
  std::string t;
  for (int i = 0; i < 65; ++i) t += Field(5, "");
  EXPECT_EQ(Scan(TensorWithStreams(1) + Field(8, t)).message(), "m.bolt: tensor #1: more than 64 streams (spec C-9.8)");
}

}  // namespace
}  // namespace boltpack::format
