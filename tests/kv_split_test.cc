// KvSplitCodec (include/boltpack/kv_split.h): bit-exact full round trip on
// adversarial vectors, draft equals an independent reference, serialized
// codes reproduce the bytes, hostile bytes fail cleanly.
#include "boltpack/kv_split.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "codecs/bf16_spec/split_kernel.h"
#include "codecs/float_convert.h"
#include "gtest/gtest.h"

namespace boltpack {
namespace {

std::vector<uint16_t> ReferenceDraft(const std::vector<uint16_t>& v, size_t k, int mbits) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return (v[a] & 0x7fff) > (v[b] & 0x7fff); });
  std::vector<uint16_t> d(v.size(), 0);
  const int low = 7 - mbits;
  for (size_t i = 0; i < k; ++i) {
    const uint16_t x = v[idx[i]];
    const uint16_t e = (x >> 7) & 0xff;
    uint16_t y = static_cast<uint16_t>(x & ~((1u << low) - 1));
    if (low > 0 && e != 0 && e != 255) y |= static_cast<uint16_t>(1u << (low - 1));
    d[idx[i]] = y;
  }
  return d;
}

std::vector<uint16_t> Gaussian(size_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0, sigma);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = F32ToBF16(g(rng));
  return v;
}

// Encodes every vector, checks full and draft, returns total bytes.
KvSplitSizes RoundTrip(const KvSplitCodec& c, const std::vector<uint16_t>& vectors) {
  const size_t n = c.vector_elements();
  std::vector<uint8_t> spec(c.max_speculation_bytes()), verif(c.max_verification_bytes());
  std::vector<uint16_t> full(n), draft(n);
  KvSplitSizes total;
  for (size_t v0 = 0; v0 + n <= vectors.size(); v0 += n) {
    const std::vector<uint16_t> v(vectors.begin() + v0, vectors.begin() + v0 + n);
    auto sizes = c.Encode(v, absl::MakeSpan(spec), absl::MakeSpan(verif));
    EXPECT_TRUE(sizes.ok()) << sizes.status();
    if (!sizes.ok()) return total;
    EXPECT_LE(sizes->speculation, c.max_speculation_bytes());
    EXPECT_LE(sizes->verification, c.max_verification_bytes());
    total.speculation += sizes->speculation;
    total.verification += sizes->verification;
    // Exact-size copies, so a read past the end is caught by ASan.
    const std::vector<uint8_t> s(spec.begin(), spec.begin() + sizes->speculation);
    const std::vector<uint8_t> w(verif.begin(), verif.begin() + sizes->verification);
    absl::Status st = c.DecodeFull(s, w, absl::MakeSpan(full));
    EXPECT_TRUE(st.ok()) << st;
    EXPECT_TRUE(full == v) << "vector at " << v0;
    st = c.DecodeDraft(s, absl::MakeSpan(draft));
    EXPECT_TRUE(st.ok()) << st;
    EXPECT_TRUE(draft == ReferenceDraft(v, c.kept_elements(), c.mbits())) << "vector at " << v0;
  }
  return total;
}

TEST(KvSplit, AllPatternsEveryMbits) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  std::shuffle(all.begin(), all.end(), std::mt19937(1));
  const auto calib = Gaussian(1024, 1.0f, 2);
  for (int mbits = 0; mbits <= 7; ++mbits) {
    for (double keep : {0.5, 1.0, 0.001, 0.3}) {
      auto c = KvSplitCodec::Create(1024, {keep, mbits}, calib);
      ASSERT_TRUE(c.ok()) << c.status();
      RoundTrip(*c, all);
    }
  }
}

TEST(KvSplit, AdversarialVectors) {
  for (size_t n : {1, 2, 7, 8, 9, 63, 64, 65, 128, 1000, 4096}) {
    std::vector<std::vector<uint16_t>> cases;
    cases.push_back(std::vector<uint16_t>(n, 0));
    cases.push_back(std::vector<uint16_t>(n, 0x8000));
    cases.push_back(std::vector<uint16_t>(n, 0x3f80));                          // ties everywhere
    cases.push_back(std::vector<uint16_t>(n, 0x7fc1));                          // NaN with payload
    cases.push_back(std::vector<uint16_t>(n, 0xff80));                          // -inf
    std::vector<uint16_t> sub(n), mixed(n), rnd(n);
    std::mt19937 rng(static_cast<uint32_t>(n));
    for (size_t i = 0; i < n; ++i) {
      sub[i] = static_cast<uint16_t>(rng() & 0x807f);  // subnormals and zeros
      rnd[i] = static_cast<uint16_t>(rng());
      const uint16_t special[] = {0x7f80, 0xff80, 0x7fff, 0x0001, 0x8000, 0x0000, 0x7f7f, 0x3f80};
      mixed[i] = (i % 3 == 0) ? special[rng() % 8] : F32ToBF16(std::normal_distribution<float>(0, 0.3f)(rng));
    }
    cases.push_back(sub);
    cases.push_back(mixed);
    cases.push_back(rnd);
    for (double keep : {0.5, 0.01, 1.0}) {
      for (int mbits : {0, 3, 7}) {
        // Calibrated on the random vector, and on nothing at all.
        for (bool calibrate : {true, false}) {
          auto c = KvSplitCodec::Create(n, {keep, mbits}, calibrate ? absl::MakeConstSpan(rnd) : absl::Span<const uint16_t>());
          ASSERT_TRUE(c.ok()) << c.status();
          for (const auto& v : cases) RoundTrip(*c, v);
        }
      }
    }
  }
}

TEST(KvSplit, SizesOnGaussianKeys) {
  // 128 x 8 heads, keep 0.5, mbits 3: the draft is about a quarter of the
  // bf16 bytes (bitmap 1 bit + half x (4 + ~2) bits per value).
  const size_t n = 1024;
  const auto calib = Gaussian(n * 4, 1.0f, 5);
  auto c = KvSplitCodec::Create(n, {0.5, 3}, calib);
  ASSERT_TRUE(c.ok());
  const auto vectors = Gaussian(n * 64, 1.0f, 6);
  KvSplitSizes s = RoundTrip(*c, vectors);
  const double bf16 = 2.0 * vectors.size();
  std::printf("kv split 1024 keep 0.5 mbits 3: speculation %.2f%%, verification %.2f%% of bf16\n",
              100.0 * s.speculation / bf16, 100.0 * s.verification / bf16);
  EXPECT_LE(s.speculation, 0.30 * bf16);
  EXPECT_LE(s.speculation + s.verification, 0.75 * bf16);
}

TEST(KvSplit, SerializeReproduces) {
  const auto calib = Gaussian(256 * 3, 0.5f, 7);
  auto c = KvSplitCodec::Create(256, {0.4, 2}, calib);
  ASSERT_TRUE(c.ok());
  const auto bytes = c->Serialize();
  EXPECT_EQ(bytes.size(), 272u);
  auto d = KvSplitCodec::Deserialize(bytes);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->vector_elements(), 256u);
  EXPECT_EQ(d->kept_elements(), 103u);
  EXPECT_EQ(d->mbits(), 2);
  EXPECT_EQ(d->Serialize(), bytes);
  const auto v = Gaussian(256, 0.5f, 8);
  std::vector<uint8_t> s1(c->max_speculation_bytes()), v1(c->max_verification_bytes());
  std::vector<uint8_t> s2(d->max_speculation_bytes()), v2(d->max_verification_bytes());
  auto a = c->Encode(v, absl::MakeSpan(s1), absl::MakeSpan(v1));
  auto b = d->Encode(v, absl::MakeSpan(s2), absl::MakeSpan(v2));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->speculation, b->speculation);
  ASSERT_EQ(a->verification, b->verification);
  EXPECT_TRUE(std::equal(s1.begin(), s1.begin() + a->speculation, s2.begin()));
  EXPECT_TRUE(std::equal(v1.begin(), v1.begin() + a->verification, v2.begin()));
  // Damaged serializations are refused.
  auto bad = bytes;
  bad[0] = 'X';
  EXPECT_FALSE(KvSplitCodec::Deserialize(bad).ok());
  bad = bytes;
  bad[16] = 0;  // exponents 0 and 1 lose their codes
  EXPECT_FALSE(KvSplitCodec::Deserialize(bad).ok());
  bad = bytes;
  bad[12] = 0;  // k = 0
  bad[13] = 0;
  EXPECT_FALSE(KvSplitCodec::Deserialize(bad).ok());
  EXPECT_FALSE(KvSplitCodec::Deserialize(absl::MakeConstSpan(bytes).subspan(1)).ok());
}

// The run-time-selected (SSE2/AVX2 + BMI2) paths and the portable ones
// write the same bytes and decode each other's output identically.
TEST(KvSplit, PortableMatchesFast) {
  std::mt19937 rng(11);
  for (size_t n : {1, 5, 8, 63, 64, 65, 200, 1024, 4099}) {
    std::vector<uint16_t> v(n * 3);
    for (size_t i = 0; i < v.size(); ++i) {
      const uint32_t r = rng();
      v[i] = (i % 3 == 0)   ? static_cast<uint16_t>(r)
             : (i % 3 == 1) ? uint16_t{0x3f80}  // ties
                            : F32ToBF16(std::normal_distribution<float>(0, 1)(rng));
    }
    for (double keep : {0.5, 0.07, 1.0}) {
      for (int mbits = 0; mbits <= 7; ++mbits) {
        auto c = KvSplitCodec::Create(n, {keep, mbits}, absl::MakeConstSpan(v).subspan(0, n));
        ASSERT_TRUE(c.ok()) << c.status();
        for (size_t v0 = 0; v0 < v.size(); v0 += n) {
          const auto x = absl::MakeConstSpan(v).subspan(v0, n);
          std::vector<uint8_t> s[2], w[2];
          KvSplitSizes z[2];
          for (int portable = 0; portable < 2; ++portable) {
            bf16_spec::SetKvSplitPortableForTesting(portable == 1);
            s[portable].assign(c->max_speculation_bytes(), 0);
            w[portable].assign(c->max_verification_bytes(), 0);
            auto r = c->Encode(x, absl::MakeSpan(s[portable]), absl::MakeSpan(w[portable]));
            ASSERT_TRUE(r.ok()) << r.status();
            z[portable] = *r;
            s[portable].resize(r->speculation);
            w[portable].resize(r->verification);
          }
          ASSERT_EQ(z[0].speculation, z[1].speculation) << n << " " << keep << " " << mbits;
          ASSERT_EQ(z[0].verification, z[1].verification);
          EXPECT_EQ(s[0], s[1]) << n << " " << keep << " " << mbits;
          EXPECT_EQ(w[0], w[1]) << n << " " << keep << " " << mbits;
          std::vector<uint16_t> d[2], f[2];
          for (int portable = 0; portable < 2; ++portable) {
            bf16_spec::SetKvSplitPortableForTesting(portable == 1);
            d[portable].resize(n);
            f[portable].resize(n);
            ASSERT_TRUE(c->DecodeDraft(s[0], absl::MakeSpan(d[portable])).ok());
            ASSERT_TRUE(c->DecodeFull(s[0], w[0], absl::MakeSpan(f[portable])).ok());
          }
          EXPECT_EQ(d[0], d[1]);
          EXPECT_TRUE(f[0] == std::vector<uint16_t>(x.begin(), x.end()));
          EXPECT_TRUE(f[1] == std::vector<uint16_t>(x.begin(), x.end()));
        }
      }
    }
  }
  bf16_spec::SetKvSplitPortableForTesting(false);
}

TEST(KvSplit, BadArgumentsAndHostileBytes) {
  EXPECT_FALSE(KvSplitCodec::Create(0, {}, {}).ok());
  EXPECT_FALSE(KvSplitCodec::Create(16, {0.0, 3}, {}).ok());
  EXPECT_FALSE(KvSplitCodec::Create(16, {0.5, 8}, {}).ok());
  std::vector<uint16_t> odd(17);
  EXPECT_FALSE(KvSplitCodec::Create(16, {}, odd).ok());
  auto c = KvSplitCodec::Create(300, {}, Gaussian(300, 1.0f, 1));
  ASSERT_TRUE(c.ok());
  const auto v = Gaussian(300, 1.0f, 2);
  std::vector<uint8_t> spec(c->max_speculation_bytes()), verif(c->max_verification_bytes());
  std::vector<uint8_t> small(10);
  EXPECT_FALSE(c->Encode(v, absl::MakeSpan(small), absl::MakeSpan(verif)).ok());
  EXPECT_FALSE(c->Encode(absl::MakeConstSpan(v).subspan(1), absl::MakeSpan(spec), absl::MakeSpan(verif)).ok());
  auto sizes = c->Encode(v, absl::MakeSpan(spec), absl::MakeSpan(verif));
  ASSERT_TRUE(sizes.ok());
  spec.resize(sizes->speculation);
  verif.resize(sizes->verification);
  std::vector<uint16_t> out(300);
  // Truncated or extended inputs are refused.
  EXPECT_FALSE(c->DecodeDraft(absl::MakeConstSpan(spec).subspan(0, spec.size() - 1), absl::MakeSpan(out)).ok());
  auto longer = spec;
  longer.push_back(0);
  EXPECT_FALSE(c->DecodeDraft(longer, absl::MakeSpan(out)).ok());
  EXPECT_FALSE(c->DecodeFull(spec, absl::MakeConstSpan(verif).subspan(0, verif.size() - 1), absl::MakeSpan(out)).ok());
  EXPECT_FALSE(c->DecodeFull(spec, {}, absl::MakeSpan(out)).ok());
  EXPECT_FALSE(c->DecodeDraft(spec, absl::MakeSpan(out).subspan(1)).ok());
  // Bit flips: clean success or failure.
  std::mt19937 rng(3);
  for (int t = 0; t < 2000; ++t) {
    auto s = spec, w = verif;
    auto& x = (t & 1) ? s : w;
    x[rng() % x.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    (void)c->DecodeFull(s, w, absl::MakeSpan(out));
    (void)c->DecodeDraft(s, absl::MakeSpan(out));
  }
}

}  // namespace
}  // namespace boltpack
