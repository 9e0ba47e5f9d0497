#include "codecs/float_convert.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

namespace fci = float_convert_internal;

std::string ConformanceFile(const std::string& name) {
  return testing::SourceDir() + "/testdata/conformance/ggml/" + name;
}

template <typename T>
std::vector<T> ReadArray(const std::string& name) {
  const std::vector<uint8_t> bytes = testing::ReadFileBytes(ConformanceFile(name));
  EXPECT_EQ(bytes.size() % sizeof(T), 0u) << name;
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

bool IsF16NaN(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0; }
bool IsBF16NaN(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x007fu) != 0; }

using Bulk = void (*)(const void*, void*, size_t);

struct Path {
  const char* name;
  Bulk f16_to_f32;
  Bulk f32_to_f16;
};

// Every bulk implementation of f16<->f32 this machine can run.
std::vector<Path> F16Paths() {
  std::vector<Path> paths = {
      {"dispatch", ConvertF16ToF32, ConvertF32ToF16},
      {"portable", fci::F16ToF32Portable, fci::F32ToF16Portable},
  };
  if (fci::F16CSupported()) paths.push_back({"f16c", fci::F16ToF32F16C, fci::F32ToF16F16C});
  return paths;
}

struct BF16Path {
  const char* name;
  Bulk f32_to_bf16;
};

// Every bulk implementation of f32->bf16 this machine can run.
std::vector<BF16Path> BF16EncodePaths() {
  std::vector<BF16Path> paths = {{"dispatch", ConvertF32ToBF16}, {"portable", fci::F32ToBF16Portable}};
  if (fci::Avx2Supported()) paths.push_back({"avx2", fci::F32ToBF16Avx2});
  return paths;
}

// ---- conformance vectors (ggml's own output) ---------------------------

TEST(FloatConvertConformance, F16DecodeBitExact) {
  const auto in = ReadArray<uint16_t>("f16.decode_input.bin");
  const auto want = ReadArray<uint32_t>("f16.decode_output.f32");
  ASSERT_EQ(in.size(), 1024u);
  ASSERT_EQ(want.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(F16BitsToF32Bits(in[i]), want[i]) << "scalar, element " << i;
  }
  for (const Path& p : F16Paths()) {
    std::vector<uint32_t> got(in.size());
    p.f16_to_f32(in.data(), got.data(), in.size());
    EXPECT_EQ(got, want) << p.name;
  }
}

TEST(FloatConvertConformance, BF16DecodeBitExact) {
  const auto in = ReadArray<uint16_t>("bf16.decode_input.bin");
  const auto want = ReadArray<uint32_t>("bf16.decode_output.f32");
  ASSERT_EQ(in.size(), 1024u);
  ASSERT_EQ(want.size(), in.size());
  // The vectors hold signalling NaNs (e.g. 0xffba): ggml keeps them as they
  // are (a plain shift), so the decoder must not quiet them.
  int nans = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    nans += IsBF16NaN(in[i]);
    ASSERT_EQ(BF16BitsToF32Bits(in[i]), want[i]) << "element " << i;
  }
  EXPECT_GT(nans, 0);
  std::vector<uint32_t> got(in.size());
  ConvertBF16ToF32(in.data(), got.data(), in.size());
  EXPECT_EQ(got, want);
}

TEST(FloatConvertConformance, F16EncodeByteExact) {
  const auto in = ReadArray<uint32_t>("encode_input.f32");
  const auto want = ReadArray<uint16_t>("f16.encode.bin");
  ASSERT_EQ(in.size(), 80u * 4096u);
  ASSERT_EQ(want.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(F32BitsToF16Bits(in[i]), want[i]) << "scalar, element " << i;
  }
  for (const Path& p : F16Paths()) {
    std::vector<uint16_t> got(in.size());
    p.f32_to_f16(in.data(), got.data(), in.size());
    EXPECT_EQ(got, want) << p.name;
  }
}

TEST(FloatConvertConformance, BF16EncodeByteExact) {
  const auto in = ReadArray<uint32_t>("encode_input.f32");
  const auto want = ReadArray<uint16_t>("bf16.encode.bin");
  ASSERT_EQ(want.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(F32BitsToBF16Bits(in[i]), want[i]) << "element " << i;
  }
  std::vector<uint16_t> got(in.size());
  ConvertF32ToBF16(in.data(), got.data(), in.size());
  EXPECT_EQ(got, want);
  for (const BF16Path& p : BF16EncodePaths()) {
    std::vector<uint16_t> path_got(in.size());
    p.f32_to_bf16(in.data(), path_got.data(), in.size());
    EXPECT_EQ(path_got, want) << p.name;
  }
}

// Every bf16 result (each upper half of an f32) under the low halves that
// decide rounding (ties either way, NaN payloads only in the low half), at
// an odd offset and length so the vector loops' tails and unaligned loads
// run too: every path gives the scalar rule's bits.
TEST(FloatConvert, EveryF32ToBF16PathMatchesTheScalarRule) {
  const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff, 0x4000, 0x1234};
  std::vector<uint32_t> in;
  for (uint32_t hi = 0; hi < 65536; ++hi) {
    for (uint32_t lo : lows) in.push_back(hi << 16 | lo);
  }
  std::vector<uint16_t> want(in.size());
  for (size_t i = 0; i < in.size(); ++i) want[i] = F32BitsToBF16Bits(in[i]);
  for (const BF16Path& p : BF16EncodePaths()) {
    std::vector<uint8_t> src(in.size() * 4 + 4), dst(in.size() * 2 + 2);
    std::memcpy(src.data() + 1, in.data() + 1, (in.size() - 1) * 4);  // misaligned by one byte
    const size_t n = in.size() - 4;  // not a multiple of the vector width
    p.f32_to_bf16(src.data() + 1, dst.data() + 1, n);
    std::vector<uint16_t> got(n);
    std::memcpy(got.data(), dst.data() + 1, n * 2);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[i], want[i + 1]) << p.name << ": f32 bits " << std::hex << in[i + 1];
    }
  }
}

// ---- every 16-bit pattern ------------------------------------------------

TEST(FloatConvert, EveryF16RoundTripsThroughF32) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const uint32_t f = F16BitsToF32Bits(bits);
    const uint16_t back = F32BitsToF16Bits(f);
    if (IsF16NaN(bits)) {
      // ggml: f16 NaN -> f32 NaN, quiet bit set, payload and sign kept;
      // f32 NaN -> f16 sign | 0x7e00 (payload dropped).
      const uint32_t m = bits & 0x03ffu;
      EXPECT_EQ(f, ((bits & 0x8000u) << 16) | 0x7fc00000u | (m << 13)) << std::hex << h;
      EXPECT_EQ(back, (bits & 0x8000u) | 0x7e00u) << std::hex << h;
    } else {
      ASSERT_EQ(back, bits) << std::hex << h;
      // And the f32 value is the exact one.
      const int e = (bits >> 10) & 0x1f;
      if (e != 0x1f) {
        const double mag = e == 0 ? (bits & 0x3ff) * 0x1p-24
                                  : (1024 + (bits & 0x3ff)) * std::ldexp(1.0, e - 25);
        ASSERT_EQ(BitsFloat(f), (bits & 0x8000u) ? -mag : mag) << std::hex << h;
      }
    }
  }
}

TEST(FloatConvert, EveryBF16RoundTripsThroughF32) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const uint32_t f = BF16BitsToF32Bits(bits);
    ASSERT_EQ(f, b << 16);
    const uint16_t back = F32BitsToBF16Bits(f);
    if (IsBF16NaN(bits)) {
      // ggml quiets NaNs on the way back: bit 6 is bf16's quiet bit.
      EXPECT_EQ(back, bits | 0x40u) << std::hex << b;
    } else {
      ASSERT_EQ(back, bits) << std::hex << b;
    }
  }
}

TEST(FloatConvert, BulkPathsAgreeOnEveryF16) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<uint32_t> want(all.size());
  for (size_t i = 0; i < all.size(); ++i) want[i] = F16BitsToF32Bits(all[i]);
  for (const Path& p : F16Paths()) {
    std::vector<uint32_t> got(all.size());
    p.f16_to_f32(all.data(), got.data(), all.size());
    EXPECT_EQ(got, want) << p.name;
    // And back, from the f32 images.
    std::vector<uint16_t> back(all.size());
    p.f32_to_f16(want.data(), back.data(), want.size());
    for (size_t i = 0; i < all.size(); ++i) {
      ASSERT_EQ(back[i], F32BitsToF16Bits(want[i])) << p.name << " " << std::hex << i;
    }
  }
}

// f32 -> f16 of bit patterns chosen to hit every branch: each exponent with
// mantissas around the rounding boundaries, plus a random sweep. Bulk paths
// (portable and F16C) must equal the scalar, and the scalar must equal a
// straightforward double-precision reference.
std::vector<uint32_t> F32Probes() {
  std::vector<uint32_t> v;
  for (uint32_t sign = 0; sign < 2; ++sign) {
    for (uint32_t e = 0; e < 256; ++e) {
      for (uint32_t m : {0x000000u, 0x000001u, 0x000fffu, 0x001000u, 0x001001u, 0x002000u,
                         0x003000u, 0x3fffffu, 0x400000u, 0x400001u, 0x7fefffu, 0x7ff000u,
                         0x7fffffu, 0x0007ffu, 0x000800u, 0x000801u}) {
        v.push_back((sign << 31) | (e << 23) | m);
      }
    }
  }
  std::mt19937 rng(1234);
  for (int i = 0; i < 200000; ++i) v.push_back(static_cast<uint32_t>(rng()));
  return v;
}

uint16_t ReferenceF32ToF16(uint32_t x) {
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const float f = BitsFloat(x);
  if (std::isnan(f)) return sign | 0x7e00u;
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7c00u;
  // Scale so that one f16 ulp is 1, round half to even, rebuild.
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const int ulp_exp = std::max(e - 11, -24);
  const double q = std::nearbyint(std::ldexp(a, -ulp_exp));  // default mode: half-even
  const double r = std::ldexp(q, ulp_exp);
  if (r == 0) return sign;
  int re;
  std::frexp(r, &re);
  if (re - 1 < -14) return sign | static_cast<uint16_t>(q);  // subnormal
  const uint16_t exp_field = static_cast<uint16_t>(re - 1 + 15);
  const auto mant = static_cast<uint16_t>(std::ldexp(r, -(re - 1) + 10) - 1024.0);
  return sign | static_cast<uint16_t>(exp_field << 10) | mant;
}

TEST(FloatConvert, F32ToF16MatchesReferenceAndPathsAgree) {
  const std::vector<uint32_t> probes = F32Probes();
  for (uint32_t x : probes) {
    ASSERT_EQ(F32BitsToF16Bits(x), ReferenceF32ToF16(x)) << std::hex << x;
  }
  for (const Path& p : F16Paths()) {
    std::vector<uint16_t> got(probes.size());
    p.f32_to_f16(probes.data(), got.data(), probes.size());
    for (size_t i = 0; i < probes.size(); ++i) {
      ASSERT_EQ(got[i], F32BitsToF16Bits(probes[i])) << p.name << " " << std::hex << probes[i];
    }
  }
}

TEST(FloatConvert, F32ToF16Specials) {
  EXPECT_EQ(F32ToF16(0.0f), 0x0000);
  EXPECT_EQ(F32ToF16(-0.0f), 0x8000);
  EXPECT_EQ(F32ToF16(1.0f), 0x3c00);
  EXPECT_EQ(F32ToF16(65504.0f), 0x7bff);
  EXPECT_EQ(F32ToF16(65519.99f), 0x7bff);
  EXPECT_EQ(F32ToF16(65520.0f), 0x7c00);  // tie, rounds to even = inf
  EXPECT_EQ(F32ToF16(-1e30f), 0xfc00);
  EXPECT_EQ(F32ToF16(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(F32ToF16(0x1p-25f), 0x0000);  // tie to even: 0
  EXPECT_EQ(F32ToF16(BitsFloat(0x33000001u)), 0x0001);
  EXPECT_EQ(F32ToF16(0x1.8p-24f), 0x0002);  // 1.5 ulp: tie to even 2
  EXPECT_EQ(F32ToF16(0x1p-14f), 0x0400);  // smallest normal
  EXPECT_EQ(F32ToF16(BitsFloat(0x387fffffu)), 0x0400);  // rounds up into normals
  EXPECT_EQ(F32ToF16(BitsFloat(0x00000001u)), 0x0000);  // f32 subnormal
  EXPECT_EQ(F32BitsToF16Bits(0x7f800000u), 0x7c00);
  EXPECT_EQ(F32BitsToF16Bits(0x7f800001u), 0x7e00);  // sNaN -> canonical qNaN
  EXPECT_EQ(F32BitsToF16Bits(0xffc12345u), 0xfe00);  // sign kept, payload dropped
}

TEST(FloatConvert, F32ToBF16Specials) {
  EXPECT_EQ(F32BitsToBF16Bits(0x3f808000u), 0x3f80);  // tie, even stays
  EXPECT_EQ(F32BitsToBF16Bits(0x3f818000u), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(F32BitsToBF16Bits(0x3f808001u), 0x3f81);
  EXPECT_EQ(F32BitsToBF16Bits(0x7f7fffffu), 0x7f80);  // overflow to inf
  EXPECT_EQ(F32BitsToBF16Bits(0x7f800000u), 0x7f80);
  EXPECT_EQ(F32BitsToBF16Bits(0x7f800001u), 0x7fc0);  // sNaN, payload below bf16: quieted
  EXPECT_EQ(F32BitsToBF16Bits(0xff812345u), 0xffc1);  // top payload bits kept, quieted
  EXPECT_EQ(F32BitsToBF16Bits(0x00000001u), 0x0000);  // subnormal not flushed: rounds
  EXPECT_EQ(F32BitsToBF16Bits(0x00018000u), 0x0002);
}

// ---- bulk loops: tails, alignment, composed conversions ------------------

TEST(FloatConvert, BulkHandlesOddLengthsAndMisalignment) {
  std::mt19937 rng(7);
  for (size_t n : {0u, 1u, 7u, 8u, 9u, 15u, 16u, 17u, 33u, 1000u, 1025u}) {
    for (size_t offset : {0u, 1u, 3u}) {
      std::vector<uint8_t> src(offset + n * 4 + 8), dst(offset + n * 4 + 8, 0xaa);
      for (auto& b : src) b = static_cast<uint8_t>(rng());
      const uint8_t* s = src.data() + offset;
      uint8_t* d = dst.data() + offset;
      for (const Path& p : F16Paths()) {
        p.f32_to_f16(s, d, n);
        for (size_t i = 0; i < n; ++i) {
          uint32_t x;
          uint16_t h;
          std::memcpy(&x, s + 4 * i, 4);
          std::memcpy(&h, d + 2 * i, 2);
          ASSERT_EQ(h, F32BitsToF16Bits(x)) << p.name << " n=" << n << " i=" << i;
        }
        EXPECT_EQ(d[2 * n], 0xaa) << "wrote past the end";
        p.f16_to_f32(s, d, n);
        for (size_t i = 0; i < n; ++i) {
          uint16_t h;
          uint32_t x;
          std::memcpy(&h, s + 2 * i, 2);
          std::memcpy(&x, d + 4 * i, 4);
          ASSERT_EQ(x, F16BitsToF32Bits(h)) << p.name << " n=" << n << " i=" << i;
        }
        std::fill(dst.begin(), dst.end(), 0xaa);
      }
    }
  }
}

TEST(FloatConvert, ComposedConversionsMatchScalarChains) {
  std::vector<uint16_t> all(65536 + 5);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);
  std::vector<uint16_t> got(all.size());
  ConvertF16ToBF16(all.data(), got.data(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(got[i], F32BitsToBF16Bits(F16BitsToF32Bits(all[i]))) << i;
    ASSERT_EQ(got[i], F16ToBF16(all[i]));
  }
  ConvertBF16ToF16(all.data(), got.data(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(got[i], F32BitsToF16Bits(BF16BitsToF32Bits(all[i]))) << i;
    ASSERT_EQ(got[i], BF16ToF16(all[i]));
  }
}

TEST(FloatConvert, F64GoesThroughF32ByCast) {
  std::mt19937_64 rng(99);
  std::vector<double> in(3000);
  for (auto& d : in) {
    uint64_t bits = rng();
    std::memcpy(&d, &bits, 8);
  }
  in[0] = 1.0 + 0x1p-24 + 0x1p-40;  // double rounding differs from direct
  in[1] = 70000.0;
  in[2] = -0.0;
  std::vector<float> f32(in.size());
  std::vector<uint16_t> f16(in.size()), bf16(in.size());
  ASSERT_TRUE(ConvertFloats(DType::kF64, DType::kF32, in.data(), f32.data(), in.size()));
  ASSERT_TRUE(ConvertFloats(DType::kF64, DType::kF16, in.data(), f16.data(), in.size()));
  ASSERT_TRUE(ConvertFloats(DType::kF64, DType::kBF16, in.data(), bf16.data(), in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    const float c = static_cast<float>(in[i]);
    ASSERT_EQ(FloatBits(f32[i]), FloatBits(c)) << i;
    ASSERT_EQ(f16[i], F32ToF16(c)) << i;
    ASSERT_EQ(bf16[i], F32ToBF16(c)) << i;
  }
}

TEST(FloatConvert, ConvertFloatsPairs) {
  const DType floats[] = {DType::kF32, DType::kF16, DType::kBF16};
  for (DType to : floats) {
    EXPECT_TRUE(CanConvertFloats(DType::kF64, to));
    for (DType from : floats) EXPECT_TRUE(CanConvertFloats(from, to));
  }
  EXPECT_FALSE(CanConvertFloats(DType::kF32, DType::kF64));
  EXPECT_FALSE(CanConvertFloats(DType::kI32, DType::kF32));
  EXPECT_FALSE(CanConvertFloats(DType::kF32, DType::kI8));
  uint32_t src = 0x3f800000u, dst = 0;
  EXPECT_FALSE(ConvertFloats(DType::kI32, DType::kF32, &src, &dst, 1));
  EXPECT_EQ(dst, 0u);
  EXPECT_TRUE(ConvertFloats(DType::kF32, DType::kF32, &src, &dst, 1));
  EXPECT_EQ(dst, src);
}

}  // namespace
}  // namespace boltpack
