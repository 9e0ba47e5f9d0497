// Small helpers shared by the block-quantization encoders: the exact scalar
// building blocks and their AVX2 twins. Every AVX2 helper computes the same
// IEEE operations, in the same order, as its scalar counterpart, so the two
// encoder paths of a codec write the same bytes (tests/quant_conformance_test
// checks it on random and adversarial inputs).
//
// Floating-point contraction cannot change a result here: the only products
// that meet an addition are exact (a small integer times a scale with at most
// four significant bits, or a power of two), and round-half-away is computed
// by comparisons, not by subtracting a rounded product.
#ifndef BOLTPACK_CODECS_BLOCK_COMMON_QUANT_SIMD_H_
#define BOLTPACK_CODECS_BLOCK_COMMON_QUANT_SIMD_H_

#include <cstdint>
#include <cstring>

#include "codecs/float_convert.h"

#include "codecs/x86_simd.h"

namespace boltpack::quant {

// Largest |x| as its bit pattern (sign cleared). For non-negative floats the
// integer order is the float order, and NaN/inf compare above every finite
// value, so the block is finite iff the result is < kNonFiniteBits.
inline constexpr uint32_t kNonFiniteBits = 0x7f800000u;

inline uint32_t AbsMaxBits(const float* x, uint64_t n) {
  uint32_t m = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, &x[i], 4);
    u &= 0x7fffffffu;
    m = u > m ? u : m;
  }
  return m;
}

inline float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

#if BOLTPACK_X86_SIMD

#define BOLTPACK_AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

// Lane-wise |x| bits of v folded into m (signed max: both are < 2^31).
BOLTPACK_AVX2_TARGET inline __m256i AbsMaxBitsStep(__m256i m, __m256 v) {
  const __m256i a = _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7fffffff));
  return _mm256_max_epi32(m, a);
}

BOLTPACK_AVX2_TARGET inline uint32_t HorizontalMaxEpi32(__m256i m) {
  __m128i x = _mm_max_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
  x = _mm_max_epi32(x, _mm_shuffle_epi32(x, _MM_SHUFFLE(1, 0, 3, 2)));
  x = _mm_max_epi32(x, _mm_shuffle_epi32(x, _MM_SHUFFLE(2, 3, 0, 1)));
  return static_cast<uint32_t>(_mm_cvtsi128_si32(x));
}

BOLTPACK_AVX2_TARGET inline uint32_t AbsMaxBitsAvx2(const float* x, uint64_t n) {
  __m256i m0 = _mm256_setzero_si256(), m1 = m0;
  uint64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = AbsMaxBitsStep(m0, _mm256_loadu_ps(x + i));
    m1 = AbsMaxBitsStep(m1, _mm256_loadu_ps(x + i + 8));
  }
  uint32_t m = HorizontalMaxEpi32(_mm256_max_epi32(m0, m1));
  const uint32_t rest = AbsMaxBits(x + i, n - i);
  return rest > m ? rest : m;
}

// roundf(p) (half away from zero) for |p| < 2^22: trunc, then one step away
// from zero where |p| >= |trunc| + 0.5 (exact comparisons).
BOLTPACK_AVX2_TARGET inline __m256 RoundHalfAway(__m256 p) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 t = _mm256_round_ps(p, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 thr = _mm256_add_ps(_mm256_andnot_ps(sign, t), _mm256_set1_ps(0.5f));
  const __m256 up = _mm256_cmp_ps(_mm256_andnot_ps(sign, p), thr, _CMP_GE_OQ);
  const __m256 step = _mm256_or_ps(_mm256_and_ps(p, sign), _mm256_set1_ps(1.0f));
  return _mm256_add_ps(t, _mm256_and_ps(up, step));
}

// BestIndexE2M1 (block_codec.h) on 8 lanes: the first of the 8 magnitudes
// k*e minimising fl(|k*e - |x||) (strict <), plus 8 for x < 0 when k > 0.
// Returns 32-bit lanes holding the 4-bit codes.
BOLTPACK_AVX2_TARGET inline __m256i BestIndexE2M1x8(__m256 x, __m256 e) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 ax = _mm256_andnot_ps(sign, x);
  __m256 best_err = ax;
  __m256 best = _mm256_setzero_ps();  // index as float bits of small ints
  static constexpr float kMag[8] = {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 6.0f, 8.0f, 12.0f};
  for (int i = 1; i < 8; ++i) {
    const __m256 kd = _mm256_mul_ps(_mm256_set1_ps(kMag[i]), e);
    const __m256 err = _mm256_andnot_ps(sign, _mm256_sub_ps(kd, ax));
    const __m256 lt = _mm256_cmp_ps(err, best_err, _CMP_LT_OQ);
    best_err = _mm256_blendv_ps(best_err, err, lt);
    best = _mm256_blendv_ps(best, _mm256_castsi256_ps(_mm256_set1_epi32(i)), lt);
  }
  const __m256i idx = _mm256_castps_si256(best);
  const __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  const __m256i nz = _mm256_cmpgt_epi32(idx, _mm256_setzero_si256());
  const __m256i add8 = _mm256_and_si256(_mm256_and_si256(_mm256_castps_si256(neg), nz), _mm256_set1_epi32(8));
  return _mm256_or_si256(idx, add8);
}

// 8 32-bit lanes holding bytes -> 8 bytes in lane order.
BOLTPACK_AVX2_TARGET inline void Store8Bytes(uint8_t* dst, __m256i v) {
  const __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), _mm_packus_epi16(w, w));
}

// Two such vectors -> 16 bytes (a's lanes, then b's).
BOLTPACK_AVX2_TARGET inline void Store16Bytes(uint8_t* dst, __m256i a, __m256i b) {
  const __m128i wa = _mm_packus_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  const __m128i wb = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_packus_epi16(wa, wb));
}

// 16 nibble codes in bytes (element order) -> 8 bytes, element 2i in the low
// nibble of byte i and 2i+1 in the high nibble.
BOLTPACK_AVX2_TARGET inline void StorePairedNibbles(uint8_t* dst, __m128i codes) {
  const __m128i lo = _mm_and_si128(codes, _mm_set1_epi16(0x000F));
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(codes, 4), _mm_set1_epi16(0x00F0));
  const __m128i b = _mm_or_si128(lo, hi);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), _mm_packus_epi16(b, b));
}

// Two vectors of 8 32-bit codes -> 16 codes in bytes, element order.
BOLTPACK_AVX2_TARGET inline __m128i CodesToBytes(__m256i a, __m256i b) {
  const __m128i wa = _mm_packus_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  const __m128i wb = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
  return _mm_packus_epi16(wa, wb);
}

#endif  // BOLTPACK_X86_SIMD

// ---- decode outputs -----------------------------------------------------------
//
// A block decoder is written once, as a template over where its values go:
// F32Out stores the f32 values; Bf16Out and F16Out round them to bf16 or f16
// in registers, with float_convert.h's rules (the same bits as decoding to
// f32 and then calling ConvertF32ToBF16 / ConvertF32ToF16), and store 16-bit
// values. Scalar is the portable kernel's rounding; Store16 the AVX2
// kernel's store of 16 values, a to y[0..8) and b to y[8..16). A kernel
// passes may_be_nan = false where it knows no lane is NaN (a finite scale
// times the format's finite codes), which spares the 16-bit stores their
// NaN check: a fifth of the bf16 store's instructions.

struct F32Out {
  using T = float;
  static T Scalar(float v) { return v; }
#if BOLTPACK_X86_SIMD
  BOLTPACK_AVX2_TARGET static void Store16(float* y, __m256 a, __m256 b, bool /*may_be_nan*/) {
    _mm256_storeu_ps(y, a);
    _mm256_storeu_ps(y + 8, b);
  }
#endif
};

#if BOLTPACK_X86_SIMD
// NaN lanes of a and b (bits 0-7 and 8-15), rare in decoded weights (only
// a NaN or infinite scale makes them): the 16-bit stores below rewrite them
// with the scalar rule afterwards, which keeps the NaN select off the
// common path.
BOLTPACK_AVX2_TARGET inline int NanLanes16(__m256 a, __m256 b) {
  return _mm256_movemask_ps(_mm256_cmp_ps(a, a, _CMP_UNORD_Q)) |
         (_mm256_movemask_ps(_mm256_cmp_ps(b, b, _CMP_UNORD_Q)) << 8);
}

template <typename Round>
BOLTPACK_AVX2_TARGET inline void PatchNanLanes(uint16_t* y, __m256 a, __m256 b, int lanes, Round round) {
  float f[16];
  _mm256_storeu_ps(f, a);
  _mm256_storeu_ps(f + 8, b);
  for (int i = 0; i < 16; ++i) {
    if ((lanes >> i) & 1) y[i] = round(f[i]);
  }
}

// F32BitsToBF16Bits' round to nearest even on 8 lanes, for lanes that are not
// NaN: (u + 0x7fff + ((u >> 16) & 1)) >> 16, below 2^16 in every lane.
BOLTPACK_AVX2_TARGET inline __m256i RoundToBf16Bits(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  return _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), odd), 16);
}
#endif

struct Bf16Out {
  using T = uint16_t;
  static T Scalar(float v) { return F32ToBF16(v); }
#if BOLTPACK_X86_SIMD
  BOLTPACK_AVX2_TARGET static void Store16(uint16_t* y, __m256 a, __m256 b, bool may_be_nan) {
    // The unsigned pack is exact (every lane < 2^16); it works per 128-bit
    // half (a0 b0 a1 b1), so the quarters are put back in order.
    const __m256i packed = _mm256_packus_epi32(RoundToBf16Bits(a), RoundToBf16Bits(b));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), _mm256_permute4x64_epi64(packed, 0xd8));
    if (__builtin_expect(may_be_nan, 0)) {
      const int nan_lanes = NanLanes16(a, b);
      if (nan_lanes != 0) PatchNanLanes(y, a, b, nan_lanes, F32ToBF16);
    }
  }
#endif
};

struct F16Out {
  using T = uint16_t;
  static T Scalar(float v) { return F32ToF16(v); }
#if BOLTPACK_X86_SIMD
  // VCVTPS2PH with immediate 0 rounds to nearest even whatever MXCSR says,
  // as float_convert.cc's F16C path does; it keeps NaN payload bits where
  // float_convert.h writes sign | 0x7e00, so NaN lanes are rewritten.
  BOLTPACK_AVX2_TARGET static void Store16(uint16_t* y, __m256 a, __m256 b, bool may_be_nan) {
    const __m256i h = _mm256_set_m128i(_mm256_cvtps_ph(b, 0), _mm256_cvtps_ph(a, 0));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), h);
    if (__builtin_expect(may_be_nan, 0)) {
      const int nan_lanes = NanLanes16(a, b);
      if (nan_lanes != 0) PatchNanLanes(y, a, b, nan_lanes, F32ToF16);
    }
  }
#endif
};

}  // namespace boltpack::quant

#endif  // BOLTPACK_CODECS_BLOCK_COMMON_QUANT_SIMD_H_
