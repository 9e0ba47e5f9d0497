// bp_sync_points: every point names a code word that starts where it says
// (the code word of the element's exponent, read from the stream's bits),
// the points are in order with one at each lane's start and then every
// `every` symbols, the last one is {8 x bytes, elements}; the tensors span
// one lane, four lanes and several chunks, for bf16-huffman and bf16-unary;
// bad arguments and damaged bytes are refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "boltpack/boltpack.h"
#include "boltpack/codec_registry.h"
#include "boltpack/types.h"
#include "boltpack/writer.h"
#include "codecs/bf16_exp/exponent_code.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using bf16_exp::ExponentCode;

// bf16 values with exponents spread over ~30 binades, so codes have many
// lengths (and unary escapes).
std::vector<uint8_t> Bf16Values(uint64_t n, uint32_t seed) {
  std::vector<uint8_t> b(2 * n);
  uint32_t x = seed;
  for (uint64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    const uint32_t e = 100 + (x >> 27) + ((x >> 20) & 7);
    const uint16_t v = static_cast<uint16_t>((x & 0x8000u) | e << 7 | ((x >> 9) & 0x7f));
    std::memcpy(&b[2 * i], &v, 2);
  }
  return b;
}

struct Case {
  const char* name;
  std::vector<uint64_t> shape;
};

const Case kCases[] = {{"one_lane", {20, 100}}, {"four_lanes", {64, 512}}, {"chunks", {700, 1024}}};

class SyncPointsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    path_ = testing::MakeTempDir() + "/sync_" + GetParam() + ".bolt";
    auto w = Writer::Create(path_, {});
    ASSERT_TRUE(w.ok()) << w.status();
    uint32_t seed = 1;
    for (const Case& c : kCases) {
      TensorSource src;
      src.name = c.name;
      src.dtype = DType::kBF16;
      src.shape = c.shape;
      const std::vector<uint8_t> bytes = Bf16Values(c.shape[0] * c.shape[1], seed++);
      src.bytes = bytes;
      auto enc = EncodeTensor(GetParam(), src, {}, {});
      ASSERT_TRUE(enc.ok()) << enc.status();
      ASSERT_TRUE((*w)->AddTensor(c.name, c.shape, DType::kBF16, GetParam(), std::move(*enc)).ok());
    }
    ASSERT_TRUE((*w)->Finish().ok());
    ASSERT_EQ(bp_open(path_.c_str(), &r_), BP_OK);
  }
  void TearDown() override { bp_close(r_); }

  std::string path_;
  bp_reader* r_ = nullptr;
};

// The code of the tensor's record (exp_code_lengths or exp_ranks).
ExponentCode CodeOf(const bp_reader* r, size_t t, bool huffman) {
  char json[2048];
  size_t len = 0;
  EXPECT_EQ(bp_tensor_codec_params(r, t, json, sizeof json, &len), BP_OK);
  const std::string s(json, len);
  const std::string key = huffman ? "\"exp_code_lengths\":\"" : "\"exp_ranks\":\"";
  const size_t at = s.find(key) + key.size();
  const std::string hex = s.substr(at, s.find('"', at) - at);
  if (huffman) return *ExponentCode::Huffman(*ExponentCode::LengthsFromHex(hex));
  return *ExponentCode::Unary(*ExponentCode::RanksFromHex(hex));
}

uint32_t Bits(const uint8_t* p, uint64_t size, uint64_t bit, int n) {
  uint32_t v = 0;
  for (int i = 0; i < n; ++i, ++bit) {
    const uint32_t b = bit / 8 < size ? (p[bit / 8] >> (7 - bit % 8)) & 1 : 0;
    v = v << 1 | b;
  }
  return v;
}

TEST_P(SyncPointsTest, PointsNameTheirCodeWords) {
  const bool huffman = GetParam() == "bf16-huffman";
  for (size_t t = 0; t < bp_tensor_count(r_); ++t) {
    const ExponentCode code = CodeOf(r_, t, huffman);
    uint64_t n_bytes = 0;
    ASSERT_EQ(bp_decoded_size(r_, t, BP_OUT_BF16, &n_bytes), BP_OK);
    std::vector<uint16_t> values(n_bytes / 2);
    ASSERT_EQ(bp_decode(r_, t, BP_OUT_BF16, values.data(), n_bytes, 1), BP_OK);
    const void* data = nullptr;
    uint64_t size = 0;
    ASSERT_EQ(bp_stream_data_checked(r_, t, 1, &data, &size), BP_OK);
    const auto* ex = static_cast<const uint8_t*>(data);
    for (uint32_t every : {1u, 7u, 256u}) {
      bp_sync_point* pts = nullptr;
      size_t count = 0;
      ASSERT_EQ(bp_sync_points(r_, t, 1, every, 0, &pts, &count), BP_OK) << bp_last_error(r_);
      std::unique_ptr<bp_sync_point, void (*)(bp_sync_point*)> own(pts, bp_free_sync_points);
      ASSERT_GE(count, 2u);
      EXPECT_EQ(pts[0].symbol, 0u);
      EXPECT_EQ(pts[count - 1].bit, 8 * size);
      EXPECT_EQ(pts[count - 1].symbol, values.size());
      uint64_t lane_starts = 0;
      for (size_t i = 0; i + 1 < count; ++i) {
        ASSERT_LT(pts[i].symbol, pts[i + 1].symbol);
        ASSERT_LT(pts[i].bit, pts[i + 1].bit);
        // Points are `every` symbols apart inside a lane; a shorter step
        // ends a lane.
        ASSERT_LE(pts[i + 1].symbol - pts[i].symbol, every);
        lane_starts += pts[i + 1].symbol - pts[i].symbol < every ? 1 : 0;
        const uint8_t e = static_cast<uint8_t>(values[pts[i].symbol] >> 7);
        const int l = code.length(e);
        ASSERT_GT(l, 0);
        ASSERT_EQ(Bits(ex, size, pts[i].bit, l), code.code(e)) << "tensor " << t << " point " << i;
      }
      if (every == 1) {
        EXPECT_EQ(count, values.size() + 1);
      }
      if (every == 256) {
        EXPECT_LE(lane_starts, 4 * (values.size() / 262144 + 1));
      }
    }
  }
}

TEST_P(SyncPointsTest, RefusesBadArguments) {
  bp_sync_point* pts = nullptr;
  size_t count = 0;
  EXPECT_EQ(bp_sync_points(r_, 0, 1, 0, 1, &pts, &count), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_sync_points(r_, 0, 0, 16, 1, &pts, &count), BP_ERR_UNSUPPORTED);
  EXPECT_EQ(bp_sync_points(r_, 0, 2, 16, 1, &pts, &count), BP_ERR_OUT_OF_RANGE);
  EXPECT_EQ(bp_sync_points(r_, 99, 1, 16, 1, &pts, &count), BP_ERR_OUT_OF_RANGE);
  EXPECT_EQ(bp_sync_points(r_, 0, 1, 16, 1, nullptr, &count), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(pts, nullptr);
}

// A lane header that claims more bytes than its chunk has: the checksum
// refuses the stream, and with checksums off the decoder does.
TEST_P(SyncPointsTest, DamagedLanesFail) {
  const void* data = nullptr;
  uint64_t size = 0;
  ASSERT_EQ(bp_stream_data_checked(r_, 2, 1, &data, &size), BP_OK);
  const char* loc_path = nullptr;
  uint64_t offset = 0;
  ASSERT_EQ(bp_stream_location(r_, 2, 1, &loc_path, &offset), BP_OK);
  const std::string bad = path_ + ".bad";
  {
    std::vector<uint8_t> bytes = testing::ReadFileBytes(path_);
    bytes[offset + 3] = 0xff;  // lane 0 of chunk 0: at least 2^24 bytes
    testing::WriteFileBytes(bad, bytes);
  }
  bp_reader* b = nullptr;
  ASSERT_EQ(bp_open(bad.c_str(), &b), BP_OK);
  bp_sync_point* pts = nullptr;
  size_t count = 0;
  EXPECT_EQ(bp_sync_points(b, 2, 1, 64, 1, &pts, &count), BP_ERR_CHECKSUM);
  bp_close(b);
  ASSERT_EQ(bp_open_flags(bad.c_str(), nullptr, BP_OPEN_NO_VERIFY, &b), BP_OK);
  const bp_status st = bp_sync_points(b, 2, 1, 64, 1, &pts, &count);
  EXPECT_EQ(bp_status_kind(st), BP_ERR_CORRUPT) << bp_last_error(b);
  EXPECT_NE(std::string(bp_last_error(b)).find("chunk 0"), std::string::npos) << bp_last_error(b);
  bp_free_sync_points(pts);
  bp_close(b);
}

INSTANTIATE_TEST_SUITE_P(Codecs, SyncPointsTest, ::testing::Values("bf16-huffman", "bf16-unary"),
                         [](const auto& p) { return p.param == "bf16-huffman" ? "Huffman" : "Unary"; });

}  // namespace
}  // namespace boltpack
