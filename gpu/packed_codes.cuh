// Small integers packed in bytes and nibbles, to floats without
// int-to-float conversions (a quarter-rate instruction on the GPU): a
// biased byte is placed in the mantissa of 2^23 by one byte permute and the
// bias subtracted by one add; 4-bit E2M1 codes go through a byte-permute
// lookup, 4 at a time. Every value is exact (small integers), +0 where the
// CPU tables have +0. Shared by the decode loaders and the GEMV.
#ifndef BOLTPACK_GPU_PACKED_CODES_CUH_
#define BOLTPACK_GPU_PACKED_CODES_CUH_

#include <cstdint>

namespace boltpack::gpu {

// 2^23 + byte i of `word` (i = 0..3), exactly.
__device__ __forceinline__ float Magic(uint32_t word, uint32_t i) {
  return __uint_as_float(__byte_perm(word, 0x4B000000u, 0x7440u | i));
}
constexpr float kTwo23 = 8388608.0f;

// 4 bytes of signed int8 values to floats.
__device__ __forceinline__ void Int8x4(uint32_t word, float* k) {
  const uint32_t biased = word ^ 0x80808080u;  // q + 128
#pragma unroll
  for (uint32_t i = 0; i < 4; ++i) k[i] = Magic(biased, i) - (kTwo23 + 128.0f);
}

// 4 E2M1 codes (one per byte, < 16) to ggml's kvalues_mxfp4 (0, +-1, +-2,
// +-3, +-4, +-6, +-8, +-12; code 8 is 0): two 8-entry byte lookups of
// value + 128, the negative one chosen where the code's bit 3 is set.
__device__ __forceinline__ void Kvalues4(uint32_t codes, float* k) {
  const uint32_t idx = codes & 0x07070707u;
  const uint32_t sel = __byte_perm(idx | (idx >> 4), 0, 0x0020u);  // nibbles c0 c1 c2 c3
  const uint32_t pos = __byte_perm(0x83828180u, 0x8c888684u, sel);
  const uint32_t neg = __byte_perm(0x7d7e7f80u, 0x74787a7cu, sel);
  const uint32_t negative = ((codes >> 3) & 0x01010101u) * 0xffu;  // 0xff per byte whose bit 3 is set
  const uint32_t biased = (pos & ~negative) | (neg & negative);
#pragma unroll
  for (uint32_t i = 0; i < 4; ++i) k[i] = Magic(biased, i) - (kTwo23 + 128.0f);
}

// 8 codes packed as nibbles in element order (element 2i the low nibble of
// byte i) to two words of one code per byte.
__device__ __forceinline__ void NibblesToBytes(uint32_t w, uint32_t& first4, uint32_t& last4) {
  const uint32_t even = w & 0x0F0F0F0Fu, odd = (w >> 4) & 0x0F0F0F0Fu;
  first4 = __byte_perm(even, odd, 0x5140u);
  last4 = __byte_perm(even, odd, 0x7362u);
}

// 8 bytes at a 1-aligned address as two words, from the three aligned
// words that hold them (never a word past the last byte).
__device__ __forceinline__ void Load64Unaligned(const uint8_t* p, uint32_t& lo, uint32_t& hi) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uint32_t* w = reinterpret_cast<const uint32_t*>(a & ~uintptr_t{3});
  const uint32_t w0 = w[0], w1 = w[1];
  const uint32_t w2 = *reinterpret_cast<const uint32_t*>((a + 7) & ~uintptr_t{3});
  const uint32_t shift = 8 * static_cast<uint32_t>(a & 3);
  lo = __funnelshift_r(w0, w1, shift);
  hi = __funnelshift_r(w1, w2, shift);
}

}  // namespace boltpack::gpu

#endif  // BOLTPACK_GPU_PACKED_CODES_CUH_
