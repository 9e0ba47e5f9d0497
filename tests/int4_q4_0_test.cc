// int4-g128 <-> ggml Q4_0 (codecs/int4/int4_q4_0.h, gguf-mapping.md §3.2):
// lossless both ways, Q4_0 as ggml dequantizes it equal to int4-g128's
// decode bit for bit, and the GGUF export of int4-g128 tensors.
#include "codecs/int4/int4_q4_0.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "codecs/encoded_record.h"
#include "codecs/float_convert.h"
#include "gtest/gtest.h"
#include "io/gguf.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

// ggml's dequantize_row_q4_0, written from ggml's block_q4_0 layout: d, then
// qs[j] holding value j (low nibble) and j + 16 (high nibble).
std::vector<uint32_t> DequantizeQ4_0Bits(const std::vector<uint8_t>& blocks) {
  std::vector<uint32_t> y;
  for (size_t b = 0; b + kQ4_0BlockBytes <= blocks.size(); b += kQ4_0BlockBytes) {
    uint16_t h;
    std::memcpy(&h, &blocks[b], 2);
    const float d = F16ToF32(h);
    float v[32];
    for (int j = 0; j < 16; ++j) {
      v[j] = static_cast<float>((blocks[b + 2 + j] & 0x0F) - 8) * d;
      v[j + 16] = static_cast<float>((blocks[b + 2 + j] >> 4) - 8) * d;
    }
    for (float f : v) {
      uint32_t u;
      std::memcpy(&u, &f, 4);
      y.push_back(u);
    }
  }
  return y;
}

std::vector<uint32_t> DecodeInt4Bits(const std::vector<uint64_t>& shape, std::vector<uint8_t> values,
                                     std::vector<uint8_t> scales) {
  EncodedTensor enc;
  enc.streams.push_back(EncodedStream{"values", std::move(values), {}, true});
  enc.streams.push_back(EncodedStream{"scales", std::move(scales), {}, true});
  const TensorInfo info = RecordFor("w", DType::kF32, shape, "int4-g128", enc);
  auto d = DecodeWhole(*FindCodec("int4-g128"), info, enc, OutputType::kF32);
  EXPECT_TRUE(d.ok()) << d.status();
  std::vector<uint32_t> y(d.ok() ? d->size() / 4 : 0);
  if (!y.empty()) std::memcpy(y.data(), d->data(), d->size());
  return y;
}

// Every nibble (0, i.e. -8, included) and scales of every kind: zero, ±0,
// subnormal, the largest, ±inf and NaNs.
TEST(Int4Q4_0, AnyStoredBytesRepackLosslesslyAndDecodeAlike) {
  const uint64_t rows = 4, cols = 512, groups = rows * cols / 128;
  std::mt19937 rng(4);
  std::vector<uint8_t> values(groups * 64), scales(groups * 2);
  for (auto& b : values) b = static_cast<uint8_t>(rng());
  const uint16_t special[] = {0x0000, 0x8000, 0x0001, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x7d01, 0x3c00, 0xb800};
  for (uint64_t g = 0; g < groups; ++g) {
    const uint16_t h = g < std::size(special) ? special[g] : static_cast<uint16_t>(rng() & 0x3fff);
    std::memcpy(&scales[2 * g], &h, 2);
  }
  auto q4 = Int4G128ToQ4_0(values, scales);
  ASSERT_TRUE(q4.ok()) << q4.status();
  ASSERT_EQ(q4->size(), groups * 4 * kQ4_0BlockBytes);
  EXPECT_EQ(DequantizeQ4_0Bits(*q4), DecodeInt4Bits({rows, cols}, values, scales));
  uint64_t mismatch = 99;
  auto back = Q4_0ToInt4G128(*q4, &mismatch);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ((*back)->values, values);
  EXPECT_EQ((*back)->scales, scales);
}

TEST(Int4Q4_0, EncodedWeightsExportAsGgmlDecodesThem) {
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.0f, 0.02f);
  std::vector<float> x(16 * 384);
  for (float& v : x) v = n(rng);
  const std::vector<uint64_t> shape = {16, 384};
  TensorSource src{"w", DType::kF32, shape, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(x.data()), x.size() * 4)};
  auto enc = FindCodec("int4-g128")->Encode(src, {}, ExecOptions{2});
  ASSERT_TRUE(enc.ok()) << enc.status();
  auto q4 = Int4G128ToQ4_0(enc->streams[0].bytes, enc->streams[1].bytes);
  ASSERT_TRUE(q4.ok()) << q4.status();
  EXPECT_EQ(DequantizeQ4_0Bits(*q4), DecodeInt4Bits(shape, enc->streams[0].bytes, enc->streams[1].bytes));
}

TEST(Int4Q4_0, BlocksOfAGroupWithDifferentScalesDoNotImport) {
  std::vector<uint8_t> q4(2 * 4 * kQ4_0BlockBytes, 0x88);
  for (size_t b = 0; b < 8; ++b) q4[b * kQ4_0BlockBytes] = 0x00, q4[b * kQ4_0BlockBytes + 1] = 0x3c;
  q4[6 * kQ4_0BlockBytes] = 0x01;  // group 1, block 2
  uint64_t mismatch = 99;
  auto back = Q4_0ToInt4G128(q4, &mismatch);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_FALSE(back->has_value());
  EXPECT_EQ(mismatch, 1u);
  EXPECT_FALSE(Q4_0ToInt4G128(absl::MakeConstSpan(q4).subspan(0, 71)).ok());
  EXPECT_FALSE(Int4G128ToQ4_0(std::vector<uint8_t>(63), std::vector<uint8_t>(2)).ok());
}

// The CLI: a GGUF export of int4-g128 tensors is Q4_0 (general.file_type 2,
// MOSTLY_Q4_0), the same bytes directly and through a .bolt, and the blocks
// decode to what the .bolt decodes to.
TEST(Int4Q4_0, GgufExportDirectAndThroughBolt) {
  const std::string dir = testing::MakeTempDir();
  const std::string f16 = testing::SourceDir() + "/testdata/tinystories-656k/TinyStories-656K.f16.gguf";
  auto r = testing::RunCli({"convert", f16, "-o", dir + "/m.bolt", "--codec", "*.weight=int4-g128"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = testing::RunCli({"convert", dir + "/m.bolt", "-o", dir + "/m.gguf"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = testing::RunCli({"convert", f16, "-o", dir + "/direct.gguf", "--codec", "*.weight=int4-g128"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto a = testing::ReadFileBytes(dir + "/m.gguf"), b = testing::ReadFileBytes(dir + "/direct.gguf");
  EXPECT_TRUE(a == b);
  auto gguf = io::GgufModel::Open(dir + "/m.gguf");
  ASSERT_TRUE(gguf.ok()) << gguf.status();
  size_t q4_0 = 0;
  for (const auto& t : (*gguf)->tensors()) q4_0 += t.type->id == kGgmlQ4_0Type;
  EXPECT_EQ(q4_0, 15u);  // every matrix; the 5 norms stay F32
  bool file_type = false;
  for (const auto& [k, v] : (*gguf)->metadata()) file_type |= k == "general.file_type" && v.u == 2;
  EXPECT_TRUE(file_type);
  r = testing::RunCli({"verify", "--target", "llama.cpp", dir + "/m.gguf"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// Both raw streams of every int4-g128 tensor of a .bolt, by name.
std::map<std::string, std::vector<std::vector<uint8_t>>> Int4Streams(const std::string& path) {
  std::map<std::string, std::vector<std::vector<uint8_t>>> out;
  auto r = Reader::Open(path);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return out;
  for (size_t i = 0; i < (*r)->tensors().size(); ++i) {
    uint64_t stored = 0;
    if ((*r)->TensorCodec(i, &stored) != "int4-g128") continue;
    auto info = (*r)->SharedTensor(i);
    auto& streams = out[std::string((*r)->TensorName(i))];
    for (size_t s = 0; s < info->streams.size(); ++s) {
      streams.emplace_back(info->streams[s].raw_length);
      EXPECT_TRUE((*r)->ReadRawStream(i, s, absl::MakeSpan(streams.back())).ok());
    }
  }
  return out;
}

// [G-3.3]: int4 .bolt -> GGUF Q4_0 -> .bolt under an int4-g128 rule gives
// the identical streams (and GGUF again the same bytes); without the rule
// Q4_0 stays ggml-q4_0; a Q4_0 whose group's four scales differ is refused,
// naming the tensor and the group.
TEST(Int4Q4_0, GgufQ4_0ImportsBackToTheSameInt4Streams) {
  const std::string dir = testing::MakeTempDir();
  const std::string f16 = testing::SourceDir() + "/testdata/tinystories-656k/TinyStories-656K.f16.gguf";
  auto r = testing::RunCli({"convert", f16, "-o", dir + "/m.bolt", "--codec", "*.weight=int4-g128"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = testing::RunCli({"convert", dir + "/m.bolt", "-o", dir + "/m.gguf"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = testing::RunCli({"convert", dir + "/m.gguf", "-o", dir + "/back.bolt", "--codec", "*.weight=int4-g128"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto want = Int4Streams(dir + "/m.bolt"), got = Int4Streams(dir + "/back.bolt");
  EXPECT_EQ(want.size(), 15u);
  EXPECT_TRUE(want == got);
  r = testing::RunCli({"convert", dir + "/back.bolt", "-o", dir + "/back.gguf"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto a = io::GgufModel::Open(dir + "/m.gguf"), b = io::GgufModel::Open(dir + "/back.gguf");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
  uint64_t q4_offset = 0;
  for (size_t i = 0; i < (*a)->tensors().size(); ++i) {
    auto x = (*a)->TensorBytes(i), y = (*b)->TensorBytes(i);
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << (*a)->tensors()[i].name;
    if (q4_offset == 0 && (*a)->tensors()[i].type->id == kGgmlQ4_0Type) q4_offset = (*a)->tensors()[i].file_offset;
  }
  r = testing::RunCli({"convert", dir + "/m.gguf", "-o", dir + "/kept.bolt"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Int4Streams(dir + "/kept.bolt").empty());
  // The second block of the first Q4_0 tensor's first group: another scale.
  ASSERT_NE(q4_offset, 0u);
  std::vector<uint8_t> bytes = testing::ReadFileBytes(dir + "/m.gguf");
  bytes[q4_offset + kQ4_0BlockBytes] ^= 0x01;
  testing::WriteFileBytes(dir + "/mixed.gguf", bytes);
  r = testing::RunCli({"convert", dir + "/mixed.gguf", "-o", dir + "/mixed.bolt", "--codec", "*.weight=int4-g128"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("group 0 "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("different scales"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace boltpack
