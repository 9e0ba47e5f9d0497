// The shared cache of exponent-code decoders (codecs/bf16_exp/code_cache.h):
// one build per distinct parameter, hostile parameters answered with their
// own error every time, bounded, and safe under concurrent row decodes.
#include "codecs/bf16_exp/code_cache.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "boltpack/codec_registry.h"
#include "boltpack/tensor_info.h"
#include "codecs/bf16_exp/exponent_code.h"
#include "codecs/encoded_record.h"
#include "codecs/float_convert.h"
#include "gtest/gtest.h"

namespace boltpack {
namespace {

using bf16_exp::CachedCode;
using bf16_exp::CodeCacheBuilds;
using bf16_exp::ExponentCode;

std::string Hex2(int x) {
  const char* d = "0123456789abcdef";
  return {d[x >> 4], d[x & 15]};
}

// A complete code of lengths 1, 2, ..., 11, 12, 12 over 13 exponents from `first`.
std::string LengthsHex(int first) {
  std::string hex(256, '0');
  const char* d = "0123456789abc";
  for (int i = 0; i < 12; ++i) hex[first + i] = d[i + 1];
  hex[first + 12] = 'c';
  return hex;
}

TEST(Bf16CodeCache, SameParameterBuildsOnce) {
  const std::string hex = LengthsHex(100);
  const size_t before = CodeCacheBuilds();
  auto a = CachedCode(ExponentCode::Kind::kHuffman, hex, ExponentCode::Tables::kFull);
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = CachedCode(ExponentCode::Kind::kHuffman, hex, ExponentCode::Tables::kFull);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(CodeCacheBuilds(), before + 1);
  // Another table level or another kind is another entry.
  auto single = CachedCode(ExponentCode::Kind::kHuffman, hex, ExponentCode::Tables::kSingle);
  ASSERT_TRUE(single.ok());
  EXPECT_NE(single->get(), a->get());
  EXPECT_EQ(CodeCacheBuilds(), before + 2);
  // The cached code is the code the parameter describes.
  auto direct = ExponentCode::Huffman(*ExponentCode::LengthsFromHex(hex), ExponentCode::Tables::kFull);
  ASSERT_TRUE(direct.ok());
  for (int s = 0; s < 256; ++s) {
    ASSERT_EQ((*a)->length(s), direct->length(s)) << s;
    ASSERT_EQ((*a)->code(s), direct->code(s)) << s;
  }
}

TEST(Bf16CodeCache, HostileParameterGivesItsOwnErrorEveryTime) {
  std::string over = LengthsHex(0);
  over[200] = '1';  // Kraft sum over 1
  for (int round = 0; round < 2; ++round) {
    auto c = CachedCode(ExponentCode::Kind::kHuffman, over, ExponentCode::Tables::kSingle);
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find("over-subscribed"), std::string_view::npos) << c.status();
    auto bad_digit = CachedCode(ExponentCode::Kind::kHuffman, std::string(256, 'X'), ExponentCode::Tables::kSingle);
    EXPECT_EQ(bad_digit.status(), ExponentCode::LengthsFromHex(std::string(256, 'X')).status());
    auto twice = CachedCode(ExponentCode::Kind::kUnary, "7a7a", ExponentCode::Tables::kFull);
    ASSERT_FALSE(twice.ok());
    EXPECT_NE(twice.status().message().find("ranked twice"), std::string_view::npos) << twice.status();
  }
  // A text no parameter can have is not kept, and still fails.
  const std::string huge(1 << 20, '1');
  EXPECT_FALSE(CachedCode(ExponentCode::Kind::kHuffman, huge, ExponentCode::Tables::kSingle).ok());
  // The valid code of the same kind still comes back.
  EXPECT_TRUE(CachedCode(ExponentCode::Kind::kHuffman, LengthsHex(0), ExponentCode::Tables::kSingle).ok());
}

TEST(Bf16CodeCache, BoundedLeastRecentlyUsedOut) {
  auto held = CachedCode(ExponentCode::Kind::kUnary, "00", ExponentCode::Tables::kFull);
  ASSERT_TRUE(held.ok());
  const ExponentCode* held_ptr = held->get();
  for (int x = 1; x <= static_cast<int>(bf16_exp::kCodeCacheEntries) + 8; ++x) {
    ASSERT_TRUE(CachedCode(ExponentCode::Kind::kUnary, Hex2(x), ExponentCode::Tables::kFull).ok());
  }
  // "00" was evicted: asking again builds it again; the copy held stays valid.
  const size_t before = CodeCacheBuilds();
  auto again = CachedCode(ExponentCode::Kind::kUnary, "00", ExponentCode::Tables::kFull);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(CodeCacheBuilds(), before + 1);
  EXPECT_EQ((*held)->length(0), 1);
  EXPECT_EQ(held_ptr, held->get());
  // The most recent entries are still there.
  const size_t after = CodeCacheBuilds();
  ASSERT_TRUE(CachedCode(ExponentCode::Kind::kUnary, Hex2(static_cast<int>(bf16_exp::kCodeCacheEntries) + 8),
                         ExponentCode::Tables::kFull)
                  .ok());
  EXPECT_EQ(CodeCacheBuilds(), after);
}

std::vector<uint8_t> GaussianBf16Bytes(size_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0, sigma);
  std::vector<uint8_t> b(n * 2);
  for (size_t i = 0; i < n; ++i) {
    const uint16_t x = F32ToBF16(g(rng));
    std::memcpy(b.data() + 2 * i, &x, 2);
  }
  return b;
}

// Rows [a, b) decoded from only the byte ranges the codec asks for, as the reader does.
absl::Status DecodeRowsAsReader(const Codec& c, const TensorInfo& info, const EncodedTensor& enc, uint64_t a,
                                uint64_t b, std::vector<uint8_t>* out) {
  DecodeInput in{&info, {}, {}};
  for (size_t s = 0; s < enc.streams.size(); ++s) {
    auto r = c.RowRangeBytes(info, s, a, b);
    if (!r.ok()) return r.status();
    in.streams.push_back(absl::MakeConstSpan(enc.streams[s].bytes).subspan(r->first, r->second - r->first));
    in.raw_base.push_back(r->first);
  }
  out->assign((b - a) * info.shape[1] * 2, 0);
  return c.DecodeRows(in, a, b, OutputType::kBF16, absl::MakeSpan(*out));
}

TEST(Bf16CodeCache, ConcurrentRowDecodesEqualTheWholeDecode) {
  constexpr uint64_t kRowsN = 600, kColsN = 1000;  // > 2^18 values: several chunks
  const std::vector<uint64_t> shape = {kRowsN, kColsN};
  for (const char* id : {"bf16-huffman", "bf16-unary", "bf16-spec"}) {
    const Codec& c = *FindCodec(id);
    // Two tensors of different spreads: two codes in the cache at once.
    std::vector<EncodedTensor> enc(2);
    std::vector<TensorInfo> info(2);
    std::vector<std::vector<uint8_t>> whole(2);
    for (int t = 0; t < 2; ++t) {
      const auto bytes = GaussianBf16Bytes(kRowsN * kColsN, t == 0 ? 0.02f : 3.0f, 5 + t);
      auto e = c.Encode(TensorSource{"t", DType::kBF16, shape, bytes}, {}, ExecOptions{1});
      ASSERT_TRUE(e.ok()) << e.status();
      enc[t] = *std::move(e);
      info[t] = RecordFor("t", DType::kBF16, shape, c.id(), enc[t]);
      ASSERT_TRUE(c.ValidateRecord(info[t]).ok()) << c.ValidateRecord(info[t]);
      whole[t].resize(bytes.size());
      DecodeInput in{&info[t], {}, {}};
      for (const auto& s : enc[t].streams) {
        in.streams.push_back(s.bytes);
        in.raw_base.push_back(0);
      }
      ASSERT_TRUE(c.Decode(in, OutputType::kBF16, absl::MakeSpan(whole[t]), ExecOptions{1}).ok());
      EXPECT_EQ(whole[t], bytes) << id;  // bf16-spec too: view "full" is bit-exact
    }
    std::atomic<int> mismatches{0}, failures{0};
    std::atomic<bool> stop{false};
    // Churns the cache (evictions) while the decodes run.
    std::thread churn([&] {
      for (int x = 0; !stop.load(); x = (x + 1) % 256) {
        (void)CachedCode(ExponentCode::Kind::kUnary, Hex2(x), ExponentCode::Tables::kCompact);
      }
    });
    std::vector<std::thread> workers;
    for (int w = 0; w < 4; ++w) {
      workers.emplace_back([&, w] {
        std::vector<uint8_t> part;
        for (int round = 0; round < 3; ++round) {
          for (uint64_t a = static_cast<uint64_t>(w) * 7; a < kRowsN; a += 97) {
            const int t = static_cast<int>((a + static_cast<uint64_t>(round)) % 2);
            const uint64_t b = std::min(kRowsN, a + 1 + (a % 300));
            if (!DecodeRowsAsReader(c, info[t], enc[t], a, b, &part).ok()) {
              ++failures;
              continue;
            }
            if (!std::equal(part.begin(), part.end(), whole[t].begin() + static_cast<ptrdiff_t>(a * kColsN * 2))) {
              ++mismatches;
            }
          }
        }
      });
    }
    for (auto& th : workers) th.join();
    stop = true;
    churn.join();
    EXPECT_EQ(failures.load(), 0) << id;
    EXPECT_EQ(mismatches.load(), 0) << id;
  }
}

}  // namespace
}  // namespace boltpack
