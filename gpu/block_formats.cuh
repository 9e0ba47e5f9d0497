// The stored layouts of spec/codecs.md and spec/codecs-iq2_xxs.md as device
// loaders: each codec's Load8 gives the f32 values of 8 consecutive
// elements (group g of the tensor in row-major order; every codec's block is
// a multiple of 8 and rows are whole blocks), computed with the operations,
// in the order, of the CPU decoders, so the values are bit-identical.
//
// Loads use the widest alignment the layout guarantees for the group (the
// streams themselves start 16-byte aligned: bp_cuda_check): q8_0 and
// iq2_xxs blocks are 2-byte aligned (34 and 66 bytes: 16-bit loads, which
// measured faster than funnel shifts of aligned words), mxfp4 1-byte (17:
// 8 bytes from the three aligned words that hold them), nvfp4-ggml 4-byte.
#ifndef BOLTPACK_GPU_BLOCK_FORMATS_CUH_
#define BOLTPACK_GPU_BLOCK_FORMATS_CUH_

#include <cuda_fp16.h>

#include <cstdint>

#include "gpu/float_bits.cuh"
#include "gpu/packed_codes.cuh"

namespace boltpack::gpu {

struct DeviceTensor {
  const uint8_t* s[4];
  uint64_t rows;
  uint64_t cols;
  float tensor_scale;
};

// iq2_xxs' constant tables, in shared memory (lookups by data-dependent
// index: constant memory would serialise a warp's different addresses).
struct Iq2Tables {
  uint64_t grid[256];
  uint8_t signs[128];
};

__device__ __forceinline__ uint16_t Load16(const uint8_t* p) { return *reinterpret_cast<const uint16_t*>(p); }
__device__ __forceinline__ uint32_t Load32Via16(const uint8_t* p) { return Load16(p) | uint32_t{Load16(p + 2)} << 16; }
__device__ __forceinline__ uint32_t Load32(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

// Every block codec's value is MulX86(k, s): k a small exact number the
// stored code gives (an int8, a kvalue, a signed grid magnitude, an E2M1
// value), s the block's scale. K8 gives the 8 k of group g and returns s
// (the GEMV uses them as they are: gemv_kernels.cu); Load8 multiplies.
// K8<false> may give a NaN scale another payload (the hardware's f16
// conversion and multiply, fewer instructions): for the GEMV, whose output
// is not bit-exact anyway.
template <bool kExact>
__device__ __forceinline__ float HalfToF32(uint16_t h) {
  if constexpr (kExact) {
    return F16BitsToF32(h);
  } else {
    return __half2float(__ushort_as_half(h));
  }
}
template <bool kExact>
__device__ __forceinline__ float Mul(float a, float b) {
  if constexpr (kExact) {
    return MulX86(a, b);
  } else {
    return __fmul_rn(a, b);
  }
}

template <class C>
struct ScaledCodes {
  __device__ __forceinline__ static void Load8(const DeviceTensor& t, const Iq2Tables* tab, uint64_t g, float v[8]) {
    const float s = C::template K8<true>(t, tab, g, v);
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = MulFiniteX86(v[j], s);
  }
};

// 8 bf16 (16 bytes, little-endian) to f32, exactly: a weight group of the
// bf16 codec and a group of the GEMV's x.
__device__ __forceinline__ void Bf16x8(const uint4 w, float v[8]) {
  const uint32_t u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    v[2 * j] = Float(u[j] << 16);
    v[2 * j + 1] = Float(u[j] & 0xffff0000u);
  }
}

struct Bf16Raw {
  static constexpr bool kTables = false;
  __device__ __forceinline__ static void Load8(const DeviceTensor& t, const Iq2Tables*, uint64_t g, float v[8]) {
    Bf16x8(reinterpret_cast<const uint4*>(t.s[0])[g], v);
  }
  // The weights themselves, scale 1 (they may be NaN: Load8 is not K8 * s).
  template <bool kExact = true>
  __device__ __forceinline__ static float K8(const DeviceTensor& t, const Iq2Tables* tab, uint64_t g, float k[8]) {
    Load8(t, tab, g, k);
    return 1.0f;
  }
};

// Q8_0: 34-byte blocks of 32: f16 d, int8 q[32]; y = f32(q) * f32(d).
struct Q8_0 : ScaledCodes<Q8_0> {
  static constexpr bool kTables = false;
  template <bool kExact = true>
  __device__ __forceinline__ static float K8(const DeviceTensor& t, const Iq2Tables*, uint64_t g, float k[8]) {
    const uint8_t* b = t.s[0] + (g >> 2) * 34;
    const uint8_t* q = b + 2 + 8 * (g & 3);
    Int8x4(Load32Via16(q), k);
    Int8x4(Load32Via16(q + 4), k + 4);
    return HalfToF32<kExact>(Load16(b));
  }
};

// int4-g128: values (64 bytes per group of 128, element 2i the low nibble
// of byte i, stored + 8) and scales (f16 per group).
struct Int4G128 : ScaledCodes<Int4G128> {
  static constexpr bool kTables = false;
  template <bool kExact = true>
  __device__ __forceinline__ static float K8(const DeviceTensor& t, const Iq2Tables*, uint64_t g, float k[8]) {
    uint32_t first4, last4;
    NibblesToBytes(Load32(t.s[0] + g * 4), first4, last4);
#pragma unroll
    for (uint32_t i = 0; i < 4; ++i) {
      k[i] = Magic(first4, i) - (kTwo23 + 8.0f);
      k[i + 4] = Magic(last4, i) - (kTwo23 + 8.0f);
    }
    return HalfToF32<kExact>(Load16(t.s[1] + (g >> 4) * 2));
  }
};

// MXFP4: 17-byte blocks of 32: E8M0 e, qs[16]; element j < 16 the low
// nibble of qs[j], element j + 16 its high nibble.
struct Mxfp4 : ScaledCodes<Mxfp4> {
  static constexpr bool kTables = false;
  template <bool kExact = true>
  __device__ __forceinline__ static float K8(const DeviceTensor& t, const Iq2Tables*, uint64_t g, float k[8]) {
    const uint8_t* b = t.s[0] + (g >> 2) * 17;
    const uint32_t sub = g & 3;
    const uint8_t* qs = b + 1 + 8 * (sub & 1);
    const uint32_t shift = sub >= 2 ? 4 : 0;
    uint32_t lo, hi;
    Load64Unaligned(qs, lo, hi);
    Kvalues4((lo >> shift) & 0x0F0F0F0Fu, k);
    Kvalues4((hi >> shift) & 0x0F0F0F0Fu, k + 4);
    return E8m0Half(b[0]);
  }
};

// ggml NVFP4: 36-byte blocks of 64: UE4M3 d[4], qs[32]; sub-block s uses
// qs[8s..8s+7], low nibbles elements 16s..16s+7, high nibbles the next 8.
struct Nvfp4Ggml : ScaledCodes<Nvfp4Ggml> {
  static constexpr bool kTables = false;
  template <bool kExact = true>
  __device__ __forceinline__ static float K8(const DeviceTensor& t, const Iq2Tables*, uint64_t g, float k[8]) {
    const uint8_t* b = t.s[0] + (g >> 3) * 36;
    const uint32_t s = (g >> 1) & 3, shift = (g & 1) * 4;
    Kvalues4((Load32(b + 4 + 8 * s) >> shift) & 0x0F0F0F0Fu, k);
    Kvalues4((Load32(b + 8 + 8 * s) >> shift) & 0x0F0F0F0Fu, k + 4);
    return Ue4m3Half(b[s]);
  }
};

// NVIDIA two-level NVFP4: values (8 bytes per block of 16, element 2i the
// low nibble of byte i), scales (float8_e4m3fn per block), tensor_scale.
struct Nvfp4 : ScaledCodes<Nvfp4> {
  static constexpr bool kTables = false;
  template <bool kExact = true>
  __device__ __forceinline__ static float K8(const DeviceTensor& t, const Iq2Tables*, uint64_t g, float k[8]) {
    uint32_t first4, last4;
    NibblesToBytes(Load32(t.s[0] + g * 4), first4, last4);
    Kvalues4(first4, k);
    Kvalues4(last4, k + 4);
#pragma unroll
    for (int j = 0; j < 8; ++j) k[j] = __fmul_rn(k[j], 0.5f);  // E2M1 is half the kvalue, exactly
    return Mul<kExact>(E4m3fn(t.s[1][g >> 1]), t.tensor_scale);
  }
};

// IQ2_XXS: 66-byte blocks of 256: f16 d, then per 32 elements aux0 (4 grid
// indices) and aux1 (4 x 7 sign bits, 4-bit scale on top).
struct Iq2Xxs : ScaledCodes<Iq2Xxs> {
  static constexpr bool kTables = true;
  template <bool kExact = true>
  __device__ __forceinline__ static float K8(const DeviceTensor& t, const Iq2Tables* tab, uint64_t g, float k[8]) {
    const uint8_t* b = t.s[0] + (g >> 5) * 66;
    const uint32_t ib = (g >> 2) & 7, l = g & 3;
    const uint32_t aux0 = Load32Via16(b + 2 + 8 * ib), aux1 = Load32Via16(b + 6 + 8 * ib);
    const uint64_t grid = tab->grid[(aux0 >> (8 * l)) & 255u];
    const uint32_t signs = tab->signs[(aux1 >> (7 * l)) & 127u];
    const uint32_t lo = static_cast<uint32_t>(grid), hi = static_cast<uint32_t>(grid >> 32);
#pragma unroll
    for (uint32_t i = 0; i < 4; ++i) {
      // Grid magnitudes are never 0: the sign goes on the float's bit.
      k[i] = __uint_as_float(__float_as_uint(Magic(lo, i) - kTwo23) ^ (((signs >> i) & 1u) << 31));
      k[i + 4] = __uint_as_float(__float_as_uint(Magic(hi, i) - kTwo23) ^ (((signs >> (i + 4)) & 1u) << 31));
    }
    // MulX86: a NaN d keeps its payload through both products, as on the CPU.
    const float d = HalfToF32<kExact>(Load16(b));
    return Mul<kExact>(Mul<kExact>(d, 0.5f + static_cast<float>(aux1 >> 28)), 0.25f);
  }
};

// bf16-mx (spec/codecs-bf16-exp.md §6): blocks of 32 elements, a shared
// exponent E each (stream 0), 32 3-bit offsets t (stream 1: 12 bytes, field
// j at bits [3j, 3j + 3) of their little-endian 96 bits) and the
// sign+mantissa bytes (stream 2). The bf16 of (E, sm, t) is the CPU's
// MxDecode (codecs/bf16_mx), on integers.
__device__ __forceinline__ uint32_t MxComposeF32(uint32_t sig, int k) {
  if (sig == 0) return 0;
  const int p = 31 - __clz(sig);
  const int ef = p + k + 127;
  if (ef >= 1) return static_cast<uint32_t>(ef) << 23 | ((sig << (23 - p)) & 0x7fffffu);
  return sig << (k + 149);
}

__device__ __forceinline__ uint32_t MxDecode(uint32_t E, uint32_t sm, uint32_t t) {
  const uint32_t sign = (sm & 0x80u) << 8;
  const uint32_t m = sm & 0x7fu;
  if (t <= 6 && E >= t + 1) return sign | (E - t) << 7 | m;
  const uint32_t f = t <= 6 ? MxComposeF32(128 + m, static_cast<int>(E) - static_cast<int>(t) - 134)
                            : MxComposeF32(m, static_cast<int>(E) - 140);
  return sign | F32ToBf16Bits(Float(f));  // f is finite: no NaN rule applies
}

struct Bf16Mx {
  static constexpr bool kTables = false;
  // The bf16 bits of group g's 8 elements (a quarter of a block).
  __device__ __forceinline__ static void Bits8(const DeviceTensor& t, uint64_t g, uint32_t bits[8]) {
    const uint64_t b = g >> 2;
    const uint32_t* o = reinterpret_cast<const uint32_t*>(t.s[1] + 12 * b);  // 4-byte aligned
    uint32_t f24;
    switch (g & 3) {
      case 0: f24 = o[0]; break;
      case 1: f24 = o[0] >> 24 | o[1] << 8; break;
      case 2: f24 = o[1] >> 16 | o[2] << 16; break;
      default: f24 = o[2] >> 8; break;
    }
    const uint32_t E = t.s[0][b];
    const uint2 sm = reinterpret_cast<const uint2*>(t.s[2])[g];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const uint32_t byte = ((j < 4 ? sm.x : sm.y) >> (8 * (j & 3))) & 0xffu;
      bits[j] = MxDecode(E, byte, (f24 >> (3 * j)) & 7u);
    }
  }
  __device__ __forceinline__ static void Load8(const DeviceTensor& t, const Iq2Tables*, uint64_t g, float v[8]) {
    uint32_t bits[8];
    Bits8(t, g, bits);
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = Float(bits[j] << 16);
  }
  template <bool kExact = true>
  __device__ __forceinline__ static float K8(const DeviceTensor& t, const Iq2Tables* tab, uint64_t g, float k[8]) {
    Load8(t, tab, g, k);
    return 1.0f;
  }
};

// What a kernel of codec C takes beside the tensor: iq2_xxs its tables, by
// value (2176 bytes of kernel parameters, copied to shared memory by each
// block), so no per-device global state has to be set up first.
template <class C>
struct CodecExtra {};
template <>
struct CodecExtra<Iq2Xxs> {
  Iq2Tables tables;
};

// The tables for Load8: in shared memory for iq2_xxs (every thread of the
// block must call it, before any Load8), nullptr otherwise.
template <class C>
__device__ __forceinline__ const Iq2Tables* SharedTables(const CodecExtra<C>& extra) {
  if constexpr (C::kTables) {
    __shared__ Iq2Tables smem;
    const uint32_t* src = reinterpret_cast<const uint32_t*>(&extra.tables);
    uint32_t* dst = reinterpret_cast<uint32_t*>(&smem);
    for (uint32_t i = threadIdx.x; i < sizeof(Iq2Tables) / 4; i += blockDim.x) dst[i] = src[i];
    __syncthreads();
    return &smem;
  } else {
    return nullptr;
  }
}

// Host: the iq2_xxs tables as the kernels take them (from the codec's own
// constants, codecs/iq2_xxs/iq2_xxs_tables.h).
CodecExtra<Iq2Xxs> Iq2Extra();

}  // namespace boltpack::gpu

#endif  // BOLTPACK_GPU_BLOCK_FORMATS_CUH_
