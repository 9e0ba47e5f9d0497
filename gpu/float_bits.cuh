// Device versions of codecs/float_convert.h and the scale decoders of
// codecs/block_common and codecs/mxfp4, on bit patterns, so the GPU writes
// the bytes the CPU writes: f32 -> bf16 and f16 round to nearest even with
// the CPU's NaN rules, and products that are NaN get the NaN an x86 multiply
// gives (a NaN operand's payload, quieted; the default NaN 0xffc00000 for
// inf x 0) where CUDA would give its canonical 0x7fffffff.
#ifndef BOLTPACK_GPU_FLOAT_BITS_CUH_
#define BOLTPACK_GPU_FLOAT_BITS_CUH_

#include <cstdint>

namespace boltpack::gpu {

__device__ __forceinline__ uint32_t Bits(float f) { return __float_as_uint(f); }
__device__ __forceinline__ float Float(uint32_t u) { return __uint_as_float(u); }
__device__ __forceinline__ bool IsNanBits(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

// a * b as SSE's mulss computes it, NaNs included; __fmul_rn is never
// contracted into an FMA.
__device__ __forceinline__ float MulX86(float a, float b) {
  const float r = __fmul_rn(a, b);
  if (!IsNanBits(Bits(r))) return r;
  if (IsNanBits(Bits(a))) return Float(Bits(a) | 0x00400000u);
  if (IsNanBits(Bits(b))) return Float(Bits(b) | 0x00400000u);
  return Float(0xffc00000u);
}

// MulX86(k, d) for a k that is never NaN (a decoded integer code): the
// product is NaN only for a NaN d (its payload, quieted) or inf x 0 (the
// default NaN), so no branch: a select on the product, the NaN's bits the
// same for every k of a block.
__device__ __forceinline__ float MulFiniteX86(float k, float d) {
  const float r = __fmul_rn(k, d);
  const uint32_t nan = IsNanBits(Bits(d)) ? (Bits(d) | 0x00400000u) : 0xffc00000u;
  return r != r ? Float(nan) : r;
}

__device__ __forceinline__ uint16_t F32ToBf16Bits(float f) {
  const uint32_t u = Bits(f);
  const uint32_t rounded = (u + (0x7fffu + ((u >> 16) & 1u))) >> 16;
  return static_cast<uint16_t>(IsNanBits(u) ? (u >> 16) | 0x40u : rounded);
}

__device__ __forceinline__ uint16_t F32ToF16Bits(float f) {
  const uint32_t x = Bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7fffffffu;
  const uint32_t rebiased = a - (112u << 23);
  const uint32_t normal = (rebiased + 0x0fffu + ((rebiased >> 13) & 1u)) >> 13;
  const uint32_t subnormal = Bits(__fadd_rn(Float(a), 0.5f)) - 0x3f000000u;
  uint32_t r = a < 0x38800000u ? subnormal : normal;
  r = a >= 0x477ff000u ? 0x7c00u : r;
  r = a > 0x7f800000u ? 0x7e00u : r;
  return static_cast<uint16_t>(sign | r);
}

__device__ __forceinline__ float F16BitsToF32(uint16_t h) {
  const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;
  const uint32_t normal = (em << 13) + (112u << 23);
  const uint32_t inf_nan = (em << 13) | 0x7f800000u | (em > 0x7c00u ? 0x00400000u : 0u);
  const uint32_t subnormal = Bits(__fmul_rn(static_cast<float>(static_cast<int32_t>(em)), 0x1p-24f));
  uint32_t r = em < 0x0400u ? subnormal : normal;
  r = em >= 0x7c00u ? inf_nan : r;
  return Float(sign | r);
}

// ggml's E8M0 scale, halved (mxfp4).
__device__ __forceinline__ float E8m0Half(uint32_t e) {
  return Float(e < 2 ? (0x00200000u << e) : (e - 1u) << 23);
}

// ggml's unsigned E4M3 scale, halved (nvfp4-ggml): 0x00 and 0x7f are 0,
// bit 7 is not masked.
__device__ __forceinline__ float Ue4m3Half(uint32_t x) {
  if (x == 0 || x == 0x7f) return 0.0f;
  const uint32_t e = (x >> 3) & 15u, m = x & 7u;
  return e == 0 ? __fmul_rn(static_cast<float>(m), 0x1p-10f) : Float(((e + 119u) << 23) | (m << 20));
}

// float8_e4m3fn (nvfp4 block scales); 0x7f and 0xff are the quiet NaN
// with the byte's sign (0x7fc00000, 0xffc00000), as the CPU table holds them
// (codecs.md §4).
__device__ __forceinline__ float E4m3fn(uint32_t x) {
  const uint32_t a = x & 0x7fu;
  if (a == 0x7f) return Float((x & 0x80u) ? 0xffc00000u : 0x7fc00000u);
  const uint32_t e = a >> 3, m = a & 7u;
  const float v = e == 0 ? __fmul_rn(static_cast<float>(m), 0x1p-9f) : Float(((e + 120u) << 23) | (m << 20));
  return (x & 0x80u) ? -v : v;
}

}  // namespace boltpack::gpu

#endif  // BOLTPACK_GPU_FLOAT_BITS_CUH_
