// bp_decode_range: every block of rows and columns equals the whole
// tensor's decode (bp_decode) cut by hand, for element codecs (f32, bf16), a
// block codec (q8_0) and a lossless entropy codec (bf16-huffman), over
// tensors of several chunks; and every bad argument is refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "boltpack/boltpack.h"
#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "boltpack/types.h"
#include "boltpack/writer.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

// 600 x 1024 elements: several chunks for every codec here (the raw codecs
// cut about 1 MiB, bf16-huffman about 2^18 elements), so ranges cross them.
constexpr uint64_t kRows = 600;
constexpr uint64_t kCols = 1024;

std::vector<float> Values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t x = seed;
  for (auto& f : v) {
    x = x * 1664525u + 1013904223u;
    f = static_cast<float>(static_cast<int32_t>(x >> 8) % 20000) / 1000.0f - 10.0f;
  }
  return v;
}

std::vector<uint8_t> AsBytes(const std::vector<float>& v, DType dtype) {
  if (dtype == DType::kF32) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  }
  std::vector<uint8_t> b(v.size() * 2);  // bf16: the upper half of each f32
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    uint16_t h = static_cast<uint16_t>(bits >> 16);
    std::memcpy(&b[2 * i], &h, 2);
  }
  return b;
}

void Add(Writer& w, const std::string& name, std::vector<uint64_t> shape, DType dtype, const std::string& codec,
         uint32_t seed) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  std::vector<uint8_t> bytes = AsBytes(Values(n, seed), dtype);
  TensorSource src;
  src.name = name;
  src.dtype = dtype;
  src.shape = shape;
  src.bytes = bytes;
  auto enc = EncodeTensor(codec, src, {}, {});
  ASSERT_TRUE(enc.ok()) << codec << ": " << enc.status();
  ASSERT_TRUE(w.AddTensor(name, shape, dtype, codec, std::move(*enc)).ok());
}

class CApiRangeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string(testing::MakeTempDir() + "/ranges.bolt");
    auto w = Writer::Create(*path_, {});
    ASSERT_TRUE(w.ok()) << w.status();
    Add(**w, "f32", {kRows, kCols}, DType::kF32, "f32", 1);
    Add(**w, "bf16", {kRows, kCols}, DType::kBF16, "bf16", 2);
    Add(**w, "q8_0", {kRows, kCols}, DType::kF32, "q8_0", 3);
    if (FindCodec("bf16-huffman") != nullptr) Add(**w, "bf16-huffman", {kRows, kCols}, DType::kBF16, "bf16-huffman", 4);
    Add(**w, "cube", {50, 3, 40}, DType::kF32, "f32", 5);
    Add(**w, "vec", {100}, DType::kF32, "f32", 6);
    ASSERT_TRUE((*w)->Finish().ok());
  }
  static void TearDownTestSuite() { delete path_; }
  void SetUp() override { ASSERT_EQ(bp_open(path_->c_str(), &r_), BP_OK) << bp_last_error_message(); }
  void TearDown() override { bp_close(r_); }

  size_t Tensor(const char* name) {
    size_t i = SIZE_MAX;
    EXPECT_EQ(bp_find_tensor(r_, name, &i), BP_OK) << bp_last_error(r_);
    return i;
  }
  std::vector<uint8_t> Whole(size_t t, bp_output out) {
    uint64_t n = 0;
    EXPECT_EQ(bp_decoded_size(r_, t, out, &n), BP_OK) << bp_last_error(r_);
    std::vector<uint8_t> all(n);
    EXPECT_EQ(bp_decode(r_, t, out, all.data(), n, 2), BP_OK) << bp_last_error(r_);
    return all;
  }
  // Rows [r0, r1), columns [c0, c1) of `all` (rows x groups x cols elements
  // of `elem` bytes), cut by hand.
  static std::vector<uint8_t> Cut(const std::vector<uint8_t>& all, uint64_t groups, uint64_t cols, uint64_t elem,
                                  uint64_t r0, uint64_t r1, uint64_t c0, uint64_t c1) {
    std::vector<uint8_t> out;
    for (uint64_t r = r0; r < r1; ++r) {
      for (uint64_t g = 0; g < groups; ++g) {
        const uint8_t* row = all.data() + ((r * groups + g) * cols) * elem;
        out.insert(out.end(), row + c0 * elem, row + c1 * elem);
      }
    }
    return out;
  }

  static std::string* path_;
  bp_reader* r_ = nullptr;
};

std::string* CApiRangeTest::path_ = nullptr;

struct Range {
  uint64_t r0, r1, c0, c1;
};

TEST_F(CApiRangeTest, BlocksEqualTheWholeDecodeCutByHand) {
  const Range ranges[] = {
      {0, kRows, 0, kCols},       // everything
      {250, 530, 0, kCols},       // rows only, across chunks
      {250, 530, 31, 700},        // rows and columns
      {0, kRows, 1023, 1024},     // the last column
      {599, 600, 0, 1},           // one element
      {7, 7, 3, 9},               // no rows
      {3, 9, 500, 500},           // no columns
  };
  for (const char* name : {"f32", "bf16", "q8_0", "bf16-huffman"}) {
    size_t t = SIZE_MAX;
    if (bp_find_tensor(r_, name, &t) != BP_OK) {
      ASSERT_STREQ(name, "bf16-huffman") << bp_last_error(r_);
      continue;  // not built in
    }
    for (bp_output out : {BP_OUT_F32, BP_OUT_BF16}) {
      const uint64_t elem = out == BP_OUT_F32 ? 4 : 2;
      const std::vector<uint8_t> all = Whole(t, out);
      ASSERT_EQ(all.size(), kRows * kCols * elem);
      for (const Range& g : ranges) {
        std::vector<uint8_t> want = Cut(all, 1, kCols, elem, g.r0, g.r1, g.c0, g.c1);
        for (int threads : {1, 0}) {
          std::vector<uint8_t> got(want.size(), 0xEE);
          ASSERT_EQ(bp_decode_range(r_, t, g.r0, g.r1, g.c0, g.c1, out, got.data(), got.size(), threads), BP_OK)
              << name << " rows [" << g.r0 << ", " << g.r1 << ") cols [" << g.c0 << ", " << g.c1
              << "): " << bp_last_error(r_);
          EXPECT_TRUE(got == want) << name << " out " << out << " rows [" << g.r0 << ", " << g.r1 << ") cols ["
                                   << g.c0 << ", " << g.c1 << ") threads " << threads;
        }
      }
    }
  }
}

TEST_F(CApiRangeTest, MiddleDimensionsStayWhole) {
  const size_t t = Tensor("cube");  // 50 x 3 x 40
  const std::vector<uint8_t> all = Whole(t, BP_OUT_F32);
  std::vector<uint8_t> want = Cut(all, 3, 40, 4, 10, 35, 5, 17);
  ASSERT_EQ(want.size(), 25u * 3 * 12 * 4);
  std::vector<uint8_t> got(want.size());
  ASSERT_EQ(bp_decode_range(r_, t, 10, 35, 5, 17, BP_OUT_F32, got.data(), got.size(), 1), BP_OK) << bp_last_error(r_);
  EXPECT_TRUE(got == want);
}

TEST_F(CApiRangeTest, RankOneHasOneColumnPerRow) {
  const size_t t = Tensor("vec");
  const std::vector<uint8_t> all = Whole(t, BP_OUT_F32);
  std::vector<uint8_t> got(10 * 4);
  ASSERT_EQ(bp_decode_range(r_, t, 20, 30, 0, 1, BP_OUT_F32, got.data(), got.size(), 1), BP_OK) << bp_last_error(r_);
  EXPECT_TRUE(got == std::vector<uint8_t>(all.begin() + 80, all.begin() + 120));
  EXPECT_EQ(bp_decode_range(r_, t, 20, 30, 0, 2, BP_OUT_F32, got.data(), got.size(), 1), BP_ERR_OUT_OF_RANGE);
}

TEST_F(CApiRangeTest, NativeBlocksDecodeWholeRowsButNotColumns) {
  const size_t t = Tensor("q8_0");
  const uint64_t row_bytes = kCols / 32 * 34;  // ggml q8_0 blocks
  const std::vector<uint8_t> all = Whole(t, BP_OUT_NATIVE);
  ASSERT_EQ(all.size(), kRows * row_bytes);
  std::vector<uint8_t> got(3 * row_bytes);
  ASSERT_EQ(bp_decode_range(r_, t, 100, 103, 0, kCols, BP_OUT_NATIVE, got.data(), got.size(), 1), BP_OK)
      << bp_last_error(r_);
  EXPECT_TRUE(got == std::vector<uint8_t>(all.begin() + 100 * row_bytes, all.begin() + 103 * row_bytes));
  // A q8_0 element has no whole bytes of its own.
  EXPECT_EQ(bp_decode_range(r_, t, 100, 103, 0, 32, BP_OUT_NATIVE, got.data(), 3 * 34, 1), BP_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(bp_last_error(r_)).find("columns cannot be cut"), std::string::npos) << bp_last_error(r_);
}

TEST_F(CApiRangeTest, BadArgumentsAreRefused) {
  const size_t t = Tensor("f32");
  std::vector<uint8_t> buf(10 * 10 * 4);
  const uint64_t n = buf.size();
  uint8_t* d = buf.data();
  EXPECT_EQ(bp_decode_range(nullptr, t, 0, 10, 0, 10, BP_OUT_F32, d, n, 1), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_decode_range(r_, 99, 0, 10, 0, 10, BP_OUT_F32, d, n, 1), BP_ERR_OUT_OF_RANGE);
  EXPECT_EQ(bp_decode_range(r_, t, 0, 10, 0, 10, BP_OUT_F32, nullptr, n, 1), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_decode_range(r_, t, 0, 10, 0, 10, static_cast<bp_output>(9), d, n, 1), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_decode_range(r_, t, 0, 10, 0, 10, static_cast<bp_output>(-1), d, n, 1), BP_ERR_INVALID_ARGUMENT);
  // Ranges: reversed, past the end, and ends whose sizes would overflow.
  EXPECT_EQ(bp_decode_range(r_, t, 10, 0, 0, 10, BP_OUT_F32, d, n, 1), BP_ERR_OUT_OF_RANGE);
  EXPECT_EQ(bp_decode_range(r_, t, 0, 10, 10, 0, BP_OUT_F32, d, n, 1), BP_ERR_OUT_OF_RANGE);
  EXPECT_EQ(bp_decode_range(r_, t, 0, kRows + 1, 0, 10, BP_OUT_F32, d, n, 1), BP_ERR_OUT_OF_RANGE);
  EXPECT_EQ(bp_decode_range(r_, t, 0, 10, 0, kCols + 1, BP_OUT_F32, d, n, 1), BP_ERR_OUT_OF_RANGE);
  EXPECT_EQ(bp_decode_range(r_, t, 0, UINT64_MAX, 0, 10, BP_OUT_F32, d, n, 1), BP_ERR_OUT_OF_RANGE);
  EXPECT_EQ(bp_decode_range(r_, t, 0, 10, 0, UINT64_MAX, BP_OUT_F32, d, n, 1), BP_ERR_OUT_OF_RANGE);
  EXPECT_NE(std::string(bp_last_error(r_)).find("columns [0, 18446744073709551615)"), std::string::npos)
      << bp_last_error(r_);
  // The size must be exact: neither smaller nor larger.
  EXPECT_EQ(bp_decode_range(r_, t, 0, 10, 0, 10, BP_OUT_F32, d, n - 1, 1), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_decode_range(r_, t, 0, 10, 0, 10, BP_OUT_F32, d, n + 1, 1), BP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bp_last_error(r_)).find("are 400 bytes, buffer of 401"), std::string::npos) << bp_last_error(r_);
  EXPECT_EQ(bp_decode_range(r_, t, 0, 10, 0, 10, BP_OUT_F32, d, n, 1), BP_OK) << bp_last_error(r_);
  // An empty block needs no buffer.
  EXPECT_EQ(bp_decode_range(r_, t, 4, 4, 0, 10, BP_OUT_F32, nullptr, 0, 1), BP_OK) << bp_last_error(r_);
}

}  // namespace
}  // namespace boltpack
