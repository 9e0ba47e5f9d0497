#include "codecs/mxfp4/mxfp4_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "boltpack/codec_registry.h"
#include "codecs/float_convert.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define BOLTPACK_MXFP4_AVX2 1
#else
#define BOLTPACK_MXFP4_AVX2 0
#endif

namespace boltpack {

float E8m0ToF32Half(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e) - 1u) << 23;
  return BitsFloat(bits);
}

namespace {

void DecodePortable(const uint8_t* in, uint64_t nb, float* y) {
  for (uint64_t b = 0; b < nb; ++b, in += kMxfp4BlockBytes, y += kMxfp4BlockElems) {
    const float d = E8m0ToF32Half(in[0]);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(kE2M1Doubled[in[1 + j] & 0x0F]) * d;
      y[j + 16] = static_cast<float>(kE2M1Doubled[in[1 + j] >> 4]) * d;
    }
  }
}

#if BOLTPACK_MXFP4_AVX2
__attribute__((target("avx2,fma,f16c"))) void DecodeAvx2(const uint8_t* in, uint64_t nb, float* y) {
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kE2M1Doubled));
  const __m128i m4 = _mm_set1_epi8(0x0F);
  for (uint64_t b = 0; b < nb; ++b, in += kMxfp4BlockBytes, y += kMxfp4BlockElems) {
    const __m256 d = _mm256_set1_ps(E8m0ToF32Half(in[0]));
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 1));
    const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(q, m4));
    const __m128i hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(q, 4), m4));
    _mm256_storeu_ps(y + 0, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), d));
    _mm256_storeu_ps(y + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), d));
    _mm256_storeu_ps(y + 16, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), d));
    _mm256_storeu_ps(y + 24, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))), d));
  }
}
#endif

class Mxfp4Codec : public BlockCodec {
 public:
  Mxfp4Codec()
      : BlockCodec(BlockFormat{"mxfp4",
                               "ggml MXFP4 blocks (32 E2M1 values + E8M0 exponent), ggml-exact",
                               kMxfp4BlockElems,
                               {{"blocks", kMxfp4BlockBytes}}}) {}

  absl::Status EncodeBlocks(const float* x, uint64_t nblocks, uint8_t* const* out,
                            const BlockParams& /*params*/) const override {
    uint8_t* o = out[0];
    for (uint64_t b = 0; b < nblocks; ++b, x += kMxfp4BlockElems, o += kMxfp4BlockBytes) {
      float amax = 0.0f;
      for (int j = 0; j < kMxfp4BlockElems; ++j) {
        if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
      }
      uint8_t e = 0;
      if (amax > 0.0f) {
        // ggml casts the float straight to uint8_t; for amax below 2^-125
        // that is undefined (x86 wraps). Clamped here: e >= 0.
        const float fe = std::floor(std::log2(amax)) - 2.0f + 127.0f;
        e = static_cast<uint8_t>(std::clamp(fe, 0.0f, 254.0f));
      }
      const float d = E8m0ToF32Half(e);
      o[0] = e;
      for (int j = 0; j < 16; ++j) {
        const int x0 = BestIndexE2M1(x[j], d);
        const int x1 = BestIndexE2M1(x[16 + j], d);
        o[1 + j] = static_cast<uint8_t>(x0 | (x1 << 4));
      }
    }
    return absl::OkStatus();
  }

  void DecodeBlocksF32(const uint8_t* const* in, uint64_t nblocks, float* y,
                       const BlockParams& /*params*/, bool avx2) const override {
#if BOLTPACK_MXFP4_AVX2
    if (avx2) return DecodeAvx2(in[0], nblocks, y);
#endif
    (void)avx2;
    DecodePortable(in[0], nblocks, y);
  }
};

}  // namespace

std::unique_ptr<BlockCodec> MakeMxfp4Codec() { return std::make_unique<Mxfp4Codec>(); }

absl::Status RegisterMxfp4Codec() { return RegisterCodec(MakeMxfp4Codec()); }

}  // namespace boltpack
