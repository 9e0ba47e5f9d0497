// Decode kernels: every thread turns groups of 8 elements into 8 outputs
// with one 16-byte store (two for f32), so a warp's stores are one
// contiguous run and its loads read each stored byte once.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "gpu/codec_dispatch.cuh"
#include "gpu/kernels.h"

namespace boltpack::gpu {
namespace {

constexpr int kThreads = 256;

template <OutType kOut>
__device__ __forceinline__ void Store8(const float v[8], void* dst, uint64_t g) {
  if constexpr (kOut == OutType::kF32) {
    float4* p = reinterpret_cast<float4*>(dst) + 2 * g;
    p[0] = make_float4(v[0], v[1], v[2], v[3]);
    p[1] = make_float4(v[4], v[5], v[6], v[7]);
  } else {
    uint32_t w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t a = kOut == OutType::kBf16 ? F32ToBf16Bits(v[2 * j]) : F32ToF16Bits(v[2 * j]);
      const uint32_t b = kOut == OutType::kBf16 ? F32ToBf16Bits(v[2 * j + 1]) : F32ToF16Bits(v[2 * j + 1]);
      w[j] = a | b << 16;
    }
    reinterpret_cast<uint4*>(dst)[g] = make_uint4(w[0], w[1], w[2], w[3]);
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
