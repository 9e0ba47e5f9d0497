// Decode kernels: every thread turns groups of 8 elements into 8 outputs
// with one 16-byte store (two for f32), so a warp's stores are one
// contiguous run and its loads read each stored byte once.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "gpu/codec_dispatch.cuh"
#include "gpu/kernels.h"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "libboltpack_cuda needs sm_80 or newer (bf16 conversions)"
#endif

namespace boltpack::gpu {
namespace {

constexpr int kThreads = 256;

// Two f32 to two bf16 or f16 (lo in the low half) by the hardware's
// round-to-nearest-even conversion, which gives the CPU's bits except for
// NaN: those get the CPU's NaN (bf16: the top half, quieted; f16: 0x7e00
// with the sign) by a select.
template <OutType kOut>
__device__ __forceinline__ uint32_t Pack2(float lo, float hi) {
  uint32_t packed;
  uint32_t nan_lo, nan_hi;
  if constexpr (kOut == OutType::kBf16) {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(hi), "f"(lo));
    nan_lo = (Bits(lo) >> 16) | 0x40u;
    nan_hi = (Bits(hi) >> 16) | 0x40u;
  } else {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(hi), "f"(lo));
    nan_lo = ((Bits(lo) >> 16) & 0x8000u) | 0x7e00u;
    nan_hi = ((Bits(hi) >> 16) & 0x8000u) | 0x7e00u;
  }
  if (lo != lo) packed = (packed & 0xffff0000u) | nan_lo;
  if (hi != hi) packed = (packed & 0x0000ffffu) | nan_hi << 16;
  return packed;
}

template <OutType kOut>
__device__ __forceinline__ void Store8(const float v[8], void* dst, uint64_t g) {
  if constexpr (kOut == OutType::kF32) {
    float4* p = reinterpret_cast<float4*>(dst) + 2 * g;
    p[0] = make_float4(v[0], v[1], v[2], v[3]);
    p[1] = make_float4(v[4], v[5], v[6], v[7]);
  } else {
    reinterpret_cast<uint4*>(dst)[g] =
        make_uint4(Pack2<kOut>(v[0], v[1]), Pack2<kOut>(v[2], v[3]), Pack2<kOut>(v[4], v[5]), Pack2<kOut>(v[6], v[7]));
  }
}

template <class C, OutType kOut>
__global__ void __launch_bounds__(kThreads) DecodeKernel(DeviceTensor t, CodecExtra<C> extra, uint64_t groups,
                                                         void* dst) {
  const Iq2Tables* tables = SharedTables<C>(extra);
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  for (uint64_t g = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; g < groups; g += stride) {
    if constexpr (std::is_same_v<C, Bf16Raw> && kOut == OutType::kBf16) {
      // bf16 to bf16 is the stored bits, signalling NaNs included (through
      // f32 they would come back quieted).
      reinterpret_cast<uint4*>(dst)[g] = reinterpret_cast<const uint4*>(t.s[0])[g];
      continue;
    }
    if constexpr (std::is_same_v<C, Bf16Mx> && kOut == OutType::kBf16) {
      uint32_t b[8];  // the bits themselves: a signalling NaN stays one
      Bf16Mx::Bits8(t, g, b);
      reinterpret_cast<uint4*>(dst)[g] = make_uint4(b[0] | b[1] << 16, b[2] | b[3] << 16, b[4] | b[5] << 16, b[6] | b[7] << 16);
      continue;
    }
    float v[8];
    C::Load8(t, tables, g, v);
    Store8<kOut>(v, dst, g);
  }
}

template <class C, OutType kOut>
cudaError_t Launch(const DeviceTensor& t, const CodecExtra<C>& extra, void* dst, cudaStream_t stream) {
  const uint64_t groups = t.rows * t.cols / 8;
  if (groups == 0) return cudaSuccess;
  // Enough blocks to fill the GPU several times over; the loop strides
  // through the rest (a block's table copy is then paid once per block).
  int sms = 132;
  int device = 0;
  if (cudaGetDevice(&device) == cudaSuccess) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const uint64_t want = (groups + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(std::min<uint64_t>(want, uint64_t(sms) * 16));
  DecodeKernel<C, kOut><<<blocks, kThreads, 0, stream>>>(t, extra, groups, dst);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchDecode(int codec, const DeviceTensor& t, OutType out, void* dst, cudaStream_t stream) {
  return WithCodec(codec, [&](auto c, const auto& extra) {
    using C = decltype(c);
    switch (out) {
      case OutType::kF32: return Launch<C, OutType::kF32>(t, extra, dst, stream);
      case OutType::kBf16: return Launch<C, OutType::kBf16>(t, extra, dst, stream);
      case OutType::kF16: return Launch<C, OutType::kF16>(t, extra, dst, stream);
    }
    return cudaErrorInvalidValue;
  });
}

}  // namespace boltpack::gpu
