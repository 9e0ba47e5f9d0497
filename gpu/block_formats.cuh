// The stored layouts of spec/codecs.md and spec/codecs-iq2_xxs.md as device
// loaders: each codec's Load8 gives the f32 values of 8 consecutive
// elements (group g of the tensor in row-major order; every codec's block is
// a multiple of 8 and rows are whole blocks), computed with the operations,
// in the order, of the CPU decoders, so the values are bit-identical.
//
// Loads use the widest alignment the layout guarantees for the group (the
// streams themselves start 16-byte aligned: bp_cuda_check): q8_0 and
// iq2_xxs blocks are 2-byte aligned (34 and 66 bytes), mxfp4 1-byte (17),
// nvfp4-ggml 4-byte (36).
#ifndef BOLTPACK_GPU_BLOCK_FORMATS_CUH_
#define BOLTPACK_GPU_BLOCK_FORMATS_CUH_

#include <cstdint>

#include "gpu/float_bits.cuh"

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

struct Bf16Raw {
  static constexpr bool kTables = false;
  __device__ __forceinline__ static void Load8(const DeviceTensor& t, const Iq2Tables*, uint64_t g, float v[8]) {
    const uint4 w = reinterpret_cast<const uint4*>(t.s[0])[g];
    const uint32_t u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      v[2 * j] = Float(u[j] << 16);
      v[2 * j + 1] = Float(u[j] & 0xffff0000u);
    }
  }
};

// Q8_0: 34-byte blocks of 32: f16 d, int8 q[32]; y = f32(q) * f32(d).
struct Q8_0 {
  static constexpr bool kTables = false;
  __device__ __forceinline__ static void Load8(const DeviceTensor& t, const Iq2Tables*, uint64_t g, float v[8]) {
    const uint8_t* b = t.s[0] + (g >> 2) * 34;
    const float d = F16BitsToF32(Load16(b));
    const uint8_t* q = b + 2 + 8 * (g & 3);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint16_t pair = Load16(q + 2 * j);
      v[2 * j] = MulX86(static_cast<float>(static_cast<int8_t>(pair & 0xff)), d);
      v[2 * j + 1] = MulX86(static_cast<float>(static_cast<int8_t>(pair >> 8)), d);
    }
  }
};

// int4-g128: values (64 bytes per group of 128, element 2i the low nibble
// of byte i, stored + 8) and scales (f16 per group).
struct Int4G128 {
  static constexpr bool kTables = false;
  __device__ __forceinline__ static void Load8(const DeviceTensor& t, const Iq2Tables*, uint64_t g, float v[8]) {
    const uint32_t w = Load32(t.s[0] + g * 4);
    const float d = F16BitsToF32(Load16(t.s[1] + (g >> 4) * 2));
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = MulX86(static_cast<float>(static_cast<int>((w >> (4 * j)) & 15u) - 8), d);
  }
};

// MXFP4: 17-byte blocks of 32: E8M0 e, qs[16]; element j < 16 the low
// nibble of qs[j], element j + 16 its high nibble.
struct Mxfp4 {
  static constexpr bool kTables = false;
  __device__ __forceinline__ static void Load8(const DeviceTensor& t, const Iq2Tables*, uint64_t g, float v[8]) {
    const uint8_t* b = t.s[0] + (g >> 2) * 17;
    const float d = E8m0Half(b[0]);
    const uint32_t sub = g & 3;
    const uint8_t* qs = b + 1 + 8 * (sub & 1);
    const uint32_t shift = sub >= 2 ? 4 : 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = MulX86(KvalueMxfp4((qs[j] >> shift) & 15u), d);
  }
};

// ggml NVFP4: 36-byte blocks of 64: UE4M3 d[4], qs[32]; sub-block s uses
// qs[8s..8s+7], low nibbles elements 16s..16s+7, high nibbles the next 8.
struct Nvfp4Ggml {
  static constexpr bool kTables = false;
  __device__ __forceinline__ static void Load8(const DeviceTensor& t, const Iq2Tables*, uint64_t g, float v[8]) {
    const uint8_t* b = t.s[0] + (g >> 3) * 36;
    const uint32_t s = (g >> 1) & 3, shift = (g & 1) * 4;
    const float d = Ue4m3Half(b[s]);
    const uint32_t lo = Load32(b + 4 + 8 * s), hi = Load32(b + 8 + 8 * s);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const uint32_t byte = ((j < 4 ? lo : hi) >> (8 * (j & 3))) & 0xffu;
      v[j] = MulX86(KvalueMxfp4((byte >> shift) & 15u), d);
    }
  }
};

// NVIDIA two-level NVFP4: values (8 bytes per block of 16, element 2i the
// low nibble of byte i), scales (float8_e4m3fn per block), tensor_scale.
struct Nvfp4 {
  static constexpr bool kTables = false;
  __device__ __forceinline__ static void Load8(const DeviceTensor& t, const Iq2Tables*, uint64_t g, float v[8]) {
    const uint32_t w = Load32(t.s[0] + g * 4);
    const float scale = MulX86(E4m3fn(t.s[1][g >> 1]), t.tensor_scale);
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = MulX86(E2m1((w >> (4 * j)) & 15u), scale);
  }
};

// IQ2_XXS: 66-byte blocks of 256: f16 d, then per 32 elements aux0 (4 grid
// indices) and aux1 (4 x 7 sign bits, 4-bit scale on top).
struct Iq2Xxs {
  static constexpr bool kTables = true;
  __device__ __forceinline__ static void Load8(const DeviceTensor& t, const Iq2Tables* tab, uint64_t g,
                                               float v[8]) {
    const uint8_t* b = t.s[0] + (g >> 5) * 66;
    const uint32_t ib = (g >> 2) & 7, l = g & 3;
    const float d = F16BitsToF32(Load16(b));
    const uint32_t aux0 = Load32Via16(b + 2 + 8 * ib), aux1 = Load32Via16(b + 6 + 8 * ib);
    // MulX86: a NaN d keeps its payload through both products, as on the CPU.
    const float db = MulX86(MulX86(d, 0.5f + static_cast<float>(aux1 >> 28)), 0.25f);
    const uint64_t grid = tab->grid[(aux0 >> (8 * l)) & 255u];
    const uint32_t signs = tab->signs[(aux1 >> (7 * l)) & 127u];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float m = static_cast<float>(static_cast<uint32_t>(grid >> (8 * j)) & 0xffu);
      v[j] = MulX86(db, (signs >> j) & 1u ? -m : m);
    }
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
