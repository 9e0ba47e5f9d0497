#include "codecs/mxfp4/mxfp4_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "boltpack/codec_registry.h"
#include "codecs/block_common/block_kernels.h"
#include "codecs/block_common/quant_simd.h"
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

uint8_t Mxfp4SharedExponent(float amax) {
  if (!(amax > 0.0f)) return 0;
  const uint32_t bits = FloatBits(amax);
  const uint32_t biased = bits >> 23;  // amax > 0: no sign bit
  // floor(log2(amax)) is the exponent unless the mantissa is within 2^-10 of
  // the next power of two, where log2f may round up to it (then ask log2f,
  // as ggml does), or amax is tiny (subnormal, or e would go below 0).
  if (biased >= 3 && biased < 255 && (bits & 0x7fffffu) < 0x7fe000u) {
    return static_cast<uint8_t>(biased - 2);  // E - 2 + 127
  }
  // ggml casts the float straight to uint8_t; for amax below 2^-125 that is
  // undefined (x86 wraps). Clamped here: e >= 0.
  const float fe = std::floor(std::log2(amax)) - 2.0f + 127.0f;
  return static_cast<uint8_t>(std::clamp(fe, 0.0f, 254.0f));
}

namespace {

// Out (quant_simd.h): f32, or bf16/f16 rounded from the same f32 values.
template <class Out>
void DecodePortable(const uint8_t* in, uint64_t nb, typename Out::T* y) {
  for (uint64_t b = 0; b < nb; ++b, in += kMxfp4BlockBytes, y += kMxfp4BlockElems) {
    const float d = E8m0ToF32Half(in[0]);
    for (int j = 0; j < 16; ++j) {
      y[j] = Out::Scalar(static_cast<float>(kE2M1Doubled[in[1 + j] & 0x0F]) * d);
      y[j + 16] = Out::Scalar(static_cast<float>(kE2M1Doubled[in[1 + j] >> 4]) * d);
    }
  }
}

#if BOLTPACK_MXFP4_AVX2
template <class Out>
__attribute__((target("avx2,fma,f16c"))) void DecodeAvx2(const uint8_t* in, uint64_t nb, typename Out::T* y) {
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kE2M1Doubled));
  const __m128i m4 = _mm_set1_epi8(0x0F);
  for (uint64_t b = 0; b < nb; ++b, in += kMxfp4BlockBytes, y += kMxfp4BlockElems) {
    const __m256 d = _mm256_set1_ps(E8m0ToF32Half(in[0]));
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 1));
    const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(q, m4));
    const __m128i hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(q, 4), m4));
    // The e8m0 scale is finite (at most 2^127), so no product is NaN (some
    // overflow to infinity, which the rounding keeps).
    Out::Store16(y + 0, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), d),
                _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), d), false);
    Out::Store16(y + 16, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), d),
                _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))), d), false);
  }
}
#endif

// ---- encoding ----------------------------------------------------------------

// Both paths return the index of the first block holding NaN or infinity, or
// nb.

uint64_t EncodePortable(const float* x, uint64_t nb, uint8_t* o) {
  for (uint64_t b = 0; b < nb; ++b, x += kMxfp4BlockElems, o += kMxfp4BlockBytes) {
    const uint32_t amax = quant::AbsMaxBits(x, kMxfp4BlockElems);
    if (amax >= quant::kNonFiniteBits) return b;
    const uint8_t e = Mxfp4SharedExponent(quant::BitsToFloat(amax));
    const float d = E8m0ToF32Half(e);
    o[0] = e;
    for (int j = 0; j < 16; ++j) {
      const int x0 = BestIndexE2M1(x[j], d);
      const int x1 = BestIndexE2M1(x[16 + j], d);
      o[1 + j] = static_cast<uint8_t>(x0 | (x1 << 4));
    }
  }
  return nb;
}

#if BOLTPACK_MXFP4_AVX2
__attribute__((target("avx2,fma,f16c"))) uint64_t EncodeAvx2(const float* x, uint64_t nb, uint8_t* o) {
  for (uint64_t b = 0; b < nb; ++b, x += kMxfp4BlockElems, o += kMxfp4BlockBytes) {
    const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
    const __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
    __m256i m = quant::AbsMaxBitsStep(_mm256_setzero_si256(), v0);
    m = quant::AbsMaxBitsStep(m, v1);
    m = quant::AbsMaxBitsStep(m, v2);
    m = quant::AbsMaxBitsStep(m, v3);
    const uint32_t amax = quant::HorizontalMaxEpi32(m);
    if (amax >= quant::kNonFiniteBits) return b;
    const uint8_t e = Mxfp4SharedExponent(quant::BitsToFloat(amax));
    const __m256 d = _mm256_set1_ps(E8m0ToF32Half(e));
    o[0] = e;
    // Byte j: value j (low nibble), value j + 16 (high nibble).
    const __m256i lo = _mm256_or_si256(quant::BestIndexE2M1x8(v0, d),
                                       _mm256_slli_epi32(quant::BestIndexE2M1x8(v2, d), 4));
    const __m256i hi = _mm256_or_si256(quant::BestIndexE2M1x8(v1, d),
                                       _mm256_slli_epi32(quant::BestIndexE2M1x8(v3, d), 4));
    quant::Store16Bytes(o + 1, lo, hi);
  }
  return nb;
}
#endif

class Mxfp4Codec : public TemplatedBlockCodec<Mxfp4Codec> {
 public:
  Mxfp4Codec()
      : TemplatedBlockCodec(BlockFormat{"mxfp4",
                               "ggml MXFP4 blocks (32 E2M1 values + E8M0 exponent), ggml-exact",
                               kMxfp4BlockElems,
                               {{"blocks", kMxfp4BlockBytes}},
                               GgmlMapping{39, GgmlExport::kStoredBytes}}) {}

  absl::Status EncodeBlocks(const float* x, uint64_t nblocks, uint8_t* const* out,
                            const BlockParams& /*params*/, bool avx2) const override {
    uint64_t bad;
#if BOLTPACK_MXFP4_AVX2
    bad = avx2 ? EncodeAvx2(x, nblocks, out[0]) : EncodePortable(x, nblocks, out[0]);
#else
    (void)avx2;
    bad = EncodePortable(x, nblocks, out[0]);
#endif
    if (bad == nblocks) return absl::OkStatus();
    return absl::InvalidArgumentError("codec 'mxfp4': a block holds NaN or infinity");
  }

 private:
  friend class TemplatedBlockCodec<Mxfp4Codec>;
  template <class Out>
  static void DecodeTo(const uint8_t* const* streams, uint64_t nblocks, typename Out::T* y,
                       const BlockParams& /*params*/, bool avx2) {
    const uint8_t* in = streams[0];
#if BOLTPACK_MXFP4_AVX2
    if (avx2) return DecodeAvx2<Out>(in, nblocks, y);
#endif
    (void)avx2;
    DecodePortable<Out>(in, nblocks, y);
  }
};

}  // namespace

std::unique_ptr<BlockCodec> MakeMxfp4Codec() { return std::make_unique<Mxfp4Codec>(); }

absl::Status RegisterMxfp4Codec() { return RegisterCodec(MakeMxfp4Codec()); }

}  // namespace boltpack
