// int4-g128 <-> ggml Q4_0 (codecs/int4/int4_q4_0.h, gguf-mapping.md §3.2):
// lossless both ways, Q4_0 as ggml dequantizes it equal to int4-g128's
// decode bit for bit, and the GGUF export of int4-g128 tensors.
#include "codecs/int4/int4_q4_0.h"

#include <cstring>
#include <random>
#include <vector>

#include "boltpack/codec_registry.h"
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

}  // namespace
}  // namespace boltpack
