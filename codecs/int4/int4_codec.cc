#include "codecs/int4/int4_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "boltpack/codec_registry.h"
#include "codecs/block_common/block_kernels.h"
#include "codecs/block_common/quant_simd.h"
#include "codecs/float_convert.h"
#include "common/str_cat.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define BOLTPACK_INT4_AVX2 1
#else
#define BOLTPACK_INT4_AVX2 0
#endif

namespace boltpack {
namespace {

#if BOLTPACK_INT4_AVX2
__attribute__((target("avx2,fma,f16c"))) inline __m256 cvt(__m128i v8) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v8));
}
#endif


constexpr int kValueBytes = kInt4GroupElems / 2;

// Out (quant_simd.h): f32, or bf16/f16 rounded from the same f32 values.
template <class Out>
void DecodePortable(const uint8_t* values, const uint8_t* scales, uint64_t nb, typename Out::T* y) {
  for (uint64_t b = 0; b < nb; ++b, values += kValueBytes, y += kInt4GroupElems) {
    uint16_t h;
    std::memcpy(&h, scales + 2 * b, 2);
    const float d = F16ToF32(h);
    for (int i = 0; i < kValueBytes; ++i) {
      y[2 * i] = Out::Scalar(static_cast<float>((values[i] & 0x0F) - 8) * d);
      y[2 * i + 1] = Out::Scalar(static_cast<float>((values[i] >> 4) - 8) * d);
    }
  }
}

#if BOLTPACK_INT4_AVX2
template <class Out>
__attribute__((target("avx2,fma,f16c"))) void DecodeAvx2(const uint8_t* values, const uint8_t* scales,
                                                         uint64_t nb, typename Out::T* y) {
  const __m128i m4 = _mm_set1_epi8(0x0F);
  const __m128i eight = _mm_set1_epi8(8);
  for (uint64_t b = 0; b < nb; ++b, values += kValueBytes, y += kInt4GroupElems) {
    uint16_t h;
    std::memcpy(&h, scales + 2 * b, 2);
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(h));
    // A finite d times -8..7 is finite; NaN or infinite d can give NaN.
    const bool may_be_nan = (h & 0x7c00u) == 0x7c00u;
    for (int k = 0; k < kValueBytes; k += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(values + k));
      const __m128i lo = _mm_sub_epi8(_mm_and_si128(v, m4), eight);
      const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), m4), eight);
      const __m128i a = _mm_unpacklo_epi8(lo, hi);  // elements 2k .. 2k+15
      const __m128i c = _mm_unpackhi_epi8(lo, hi);  // elements 2k+16 .. 2k+31
      typename Out::T* yy = y + 2 * k;
      Out::Store16(yy + 0, _mm256_mul_ps(cvt(a), d),
                  _mm256_mul_ps(cvt(_mm_srli_si128(a, 8)), d), may_be_nan);
      Out::Store16(yy + 16, _mm256_mul_ps(cvt(c), d),
                  _mm256_mul_ps(cvt(_mm_srli_si128(c, 8)), d), may_be_nan);
    }
  }
}
#endif

// ---- encoding ----------------------------------------------------------------
//
// Both paths return the index of the first group they cannot encode (NaN or
// infinity, or an fp16 scale overflow), or nb. Per group: d = f16(amax / 7),
// id = 1/d (0 for d = 0), q = clamp(roundf(x * id), -7, 7) + 8.

inline bool GroupScale(uint32_t amax_bits, uint16_t* h, float* id) {
  if (amax_bits >= quant::kNonFiniteBits) return false;
  *h = F32ToF16(quant::BitsToFloat(amax_bits) / 7.0f);
  if ((*h & 0x7c00u) == 0x7c00u) return false;
  const float d = F16ToF32(*h);
  *id = d != 0.0f ? 1.0f / d : 0.0f;  // d >= 2^-24: finite
  return true;
}

uint64_t EncodePortable(const float* x, uint64_t nb, uint8_t* values, uint8_t* scales) {
  for (uint64_t b = 0; b < nb; ++b, x += kInt4GroupElems, values += kValueBytes) {
    uint16_t h;
    float id;
    if (!GroupScale(quant::AbsMaxBits(x, kInt4GroupElems), &h, &id)) return b;
    std::memcpy(scales + 2 * b, &h, 2);
    auto q = [&](float v) {
      return static_cast<uint8_t>(static_cast<int>(std::fmin(7.0f, std::fmax(-7.0f, std::roundf(v * id)))) + 8);
    };
    for (int i = 0; i < kValueBytes; ++i) {
      values[i] = static_cast<uint8_t>(q(x[2 * i]) | (q(x[2 * i + 1]) << 4));
    }
  }
  return nb;
}

#if BOLTPACK_INT4_AVX2
__attribute__((target("avx2,fma,f16c"))) uint64_t EncodeAvx2(const float* x, uint64_t nb, uint8_t* values,
                                                             uint8_t* scales) {
  const __m256 lim = _mm256_set1_ps(7.0f);
  const __m256 nlim = _mm256_set1_ps(-7.0f);
  const __m256i eight = _mm256_set1_epi32(8);
  for (uint64_t b = 0; b < nb; ++b, x += kInt4GroupElems, values += kValueBytes) {
    __m256i m0 = _mm256_setzero_si256(), m1 = m0;
    for (int k = 0; k < kInt4GroupElems; k += 16) {
      m0 = quant::AbsMaxBitsStep(m0, _mm256_loadu_ps(x + k));
      m1 = quant::AbsMaxBitsStep(m1, _mm256_loadu_ps(x + k + 8));
    }
    uint16_t h;
    float id;
    if (!GroupScale(quant::HorizontalMaxEpi32(_mm256_max_epi32(m0, m1)), &h, &id)) return b;
    std::memcpy(scales + 2 * b, &h, 2);
    const __m256 vid = _mm256_set1_ps(id);
    for (int k = 0; k < kInt4GroupElems; k += 16) {
      const __m256 r0 = quant::RoundHalfAway(_mm256_mul_ps(_mm256_loadu_ps(x + k), vid));
      const __m256 r1 = quant::RoundHalfAway(_mm256_mul_ps(_mm256_loadu_ps(x + k + 8), vid));
      const __m256i q0 = _mm256_add_epi32(_mm256_cvttps_epi32(_mm256_min_ps(lim, _mm256_max_ps(nlim, r0))), eight);
      const __m256i q1 = _mm256_add_epi32(_mm256_cvttps_epi32(_mm256_min_ps(lim, _mm256_max_ps(nlim, r1))), eight);
      quant::StorePairedNibbles(values + k / 2, quant::CodesToBytes(q0, q1));
    }
  }
  return nb;
}
#endif

class Int4G128Codec : public TemplatedBlockCodec<Int4G128Codec> {
 public:
  Int4G128Codec()
      : TemplatedBlockCodec(BlockFormat{"int4-g128",
                               "symmetric int4 in [-7, 7], fp16 scale per 128 values of a row",
                               kInt4GroupElems,
                               {{"values", kValueBytes}, {"scales", 2}},
                               GgmlMapping{2, GgmlExport::kRepackedQ4_0}}) {}

  absl::Status EncodeBlocks(const float* x, uint64_t nblocks, uint8_t* const* out,
                            const BlockParams& /*params*/, bool avx2) const override {
    uint64_t bad;
#if BOLTPACK_INT4_AVX2
    bad = avx2 ? EncodeAvx2(x, nblocks, out[0], out[1]) : EncodePortable(x, nblocks, out[0], out[1]);
#else
    (void)avx2;
    bad = EncodePortable(x, nblocks, out[0], out[1]);
#endif
    if (bad == nblocks) return absl::OkStatus();
    const uint32_t amax = quant::AbsMaxBits(x + bad * kInt4GroupElems, kInt4GroupElems);
    if (amax >= quant::kNonFiniteBits) {
      return absl::InvalidArgumentError("codec 'int4-g128': a group holds NaN or infinity");
    }
    return absl::InvalidArgumentError(
        StrCat("codec 'int4-g128': a group's largest magnitude ", quant::BitsToFloat(amax),
               " makes its fp16 scale overflow (int4-g128 holds |x| up to about 458000)"));
  }

 private:
  friend class TemplatedBlockCodec<Int4G128Codec>;
  template <class Out>
  static void DecodeTo(const uint8_t* const* in, uint64_t nblocks, typename Out::T* y,
                       const BlockParams& /*params*/, bool avx2) {
#if BOLTPACK_INT4_AVX2
    if (avx2) return DecodeAvx2<Out>(in[0], in[1], nblocks, y);
#endif
    (void)avx2;
    DecodePortable<Out>(in[0], in[1], nblocks, y);
  }
};

}  // namespace

std::unique_ptr<BlockCodec> MakeInt4G128Codec() { return std::make_unique<Int4G128Codec>(); }

absl::Status RegisterInt4Codecs() { return RegisterCodec(MakeInt4G128Codec()); }

}  // namespace boltpack
