// Conversions between f32, f16, bf16 (and f64 as a source), bit-identical to
// ggml (ggml-org/ggml d99724f, x86-64), which is what GGUF files were written
// with and what the conformance vectors in testdata/conformance/ggml pin:
//
//   f32 -> bf16  round to nearest even; NaN -> (bits >> 16) | 0x40 (quieted,
//                sign and top payload bits kept). Overflow rounds to inf.
//   bf16 -> f32  bits << 16, exactly: a signalling NaN stays signalling.
//   f32 -> f16   IEEE round to nearest even, subnormals kept (not flushed),
//                overflow to inf; every NaN -> sign | 0x7e00 (ggml-base's
//                portable converter drops the payload).
//   f16 -> f32   exact; NaN -> quiet NaN with the payload kept
//                (sign | 0x7fc00000 | mantissa << 13), as both ggml's portable
//                converter and the F16C instruction produce.
//   f64 -> f32   C cast (then the f32 rules for f16/bf16 targets).
//   f16 <-> bf16 through f32 with the rules above.
//
// All scalar helpers work on bit patterns so no FPU ever sees a NaN (x87 or a
// compiler could quiet a signalling NaN in transit) and no DAZ/FTZ mode can
// flush a subnormal.
#ifndef BOLTPACK_CODECS_FLOAT_CONVERT_H_
#define BOLTPACK_CODECS_FLOAT_CONVERT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "boltpack/types.h"

namespace boltpack {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline uint32_t BF16BitsToF32Bits(uint16_t b) { return static_cast<uint32_t>(b) << 16; }

inline uint16_t F32BitsToBF16Bits(uint32_t u) {
  const uint32_t rounded = (u + (0x7fffu + ((u >> 16) & 1u))) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x40u;
  // Written as a select, not an early return, so bulk loops vectorise.
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

inline uint32_t F16BitsToF32Bits(uint16_t h) {
  const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;  // exponent and mantissa
  // Normal: move the fields into place and rebias the exponent (15 -> 127).
  const uint32_t normal = (em << 13) + (112u << 23);
  // Inf/NaN: all-ones exponent; a NaN gets the quiet bit, payload kept.
  const uint32_t inf_nan = (em << 13) | 0x7f800000u | (em > 0x7c00u ? 0x00400000u : 0u);
  // Subnormal (and zero): the value is mantissa * 2^-24, exact in f32 and a
  // normal f32, so neither DAZ nor FTZ can touch it.
  const uint32_t subnormal =
      FloatBits(static_cast<float>(static_cast<int32_t>(em)) * 0x1p-24f);
  uint32_t r = em < 0x0400u ? subnormal : normal;
  r = em >= 0x7c00u ? inf_nan : r;
  return sign | r;
}

inline uint16_t F32BitsToF16Bits(uint32_t x) {
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7fffffffu;
  // Normal f16 range: rebias the exponent (127 -> 15) and round the 13
  // dropped mantissa bits to nearest even; a carry correctly bumps the
  // exponent (up to inf at 65520).
  const uint32_t rebiased = a - (112u << 23);
  const uint32_t normal = (rebiased + 0x0fffu + ((rebiased >> 13) & 1u)) >> 13;
  // Below 2^-14 the result is round(|x| * 2^24): adding 0.5 (ulp 2^-24) lets
  // the FPU do the round-to-nearest-even; 1.0 * 2^-14 comes out as 0x0400,
  // the smallest normal, which is right. An f32 subnormal under DAZ reads as
  // 0 and gives 0, which is also its correct f16.
  const uint32_t subnormal = FloatBits(BitsFloat(a) + 0.5f) - 0x3f000000u;
  uint32_t r = a < 0x38800000u ? subnormal : normal;
  r = a >= 0x477ff000u ? 0x7c00u : r;  // rounds past 65504: inf (and inf)
  r = a > 0x7f800000u ? 0x7e00u : r;   // NaN: ggml's canonical quiet NaN
  return static_cast<uint16_t>(sign | r);
}

inline float F16ToF32(uint16_t h) { return BitsFloat(F16BitsToF32Bits(h)); }
inline uint16_t F32ToF16(float f) { return F32BitsToF16Bits(FloatBits(f)); }
inline float BF16ToF32(uint16_t b) { return BitsFloat(BF16BitsToF32Bits(b)); }
inline uint16_t F32ToBF16(float f) { return F32BitsToBF16Bits(FloatBits(f)); }
inline uint16_t F16ToBF16(uint16_t h) { return F32BitsToBF16Bits(F16BitsToF32Bits(h)); }
inline uint16_t BF16ToF16(uint16_t b) { return F32BitsToF16Bits(BF16BitsToF32Bits(b)); }

// Bulk conversions of n elements. src and dst may have any alignment (they
// often point into mapped files) and must not overlap.
void ConvertF16ToF32(const void* src, void* dst, size_t n);
void ConvertF32ToF16(const void* src, void* dst, size_t n);
void ConvertBF16ToF32(const void* src, void* dst, size_t n);
void ConvertF32ToBF16(const void* src, void* dst, size_t n);
void ConvertF16ToBF16(const void* src, void* dst, size_t n);
void ConvertBF16ToF16(const void* src, void* dst, size_t n);
void ConvertF64ToF32(const void* src, void* dst, size_t n);

// True when `from` -> `to` is a conversion ConvertFloats can do: from is
// F32, F16, BF16 or F64; to is F32, F16 or BF16 (or from == to).
bool CanConvertFloats(DType from, DType to);
// Converts n elements between the dtypes above (a copy when from == to).
// Returns false, writing nothing, for a pair CanConvertFloats rejects.
bool ConvertFloats(DType from, DType to, const void* src, void* dst, size_t n);

namespace float_convert_internal {

// The two implementations behind ConvertF16ToF32 / ConvertF32ToF16, exposed
// so tests can check that both give the same bits. The F16C ones may only be
// called when F16CSupported().
bool F16CSupported();
void F16ToF32Portable(const void* src, void* dst, size_t n);
void F32ToF16Portable(const void* src, void* dst, size_t n);
void F16ToF32F16C(const void* src, void* dst, size_t n);
void F32ToF16F16C(const void* src, void* dst, size_t n);
// The two behind ConvertF32ToBF16; the AVX2 one only when Avx2Supported().
bool Avx2Supported();
void F32ToBF16Portable(const void* src, void* dst, size_t n);
void F32ToBF16Avx2(const void* src, void* dst, size_t n);

}  // namespace float_convert_internal

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_FLOAT_CONVERT_H_
