// Batch-1..8 GEMV over stored weights: one warp per row of W, each lane
// taking groups of 8 weights straight from the stored blocks into registers
// as small exact numbers k and a scale s (K8, block_formats.cuh; nothing
// decoded is written back), summing k x per group (each product exact in
// f32) and adding s times that; x read as 16-byte runs of bf16 (it stays in
// L1/L2: every row reads it), f32 sums reduced across the warp. The weights
// are read once, in their stored size, so a codec that stores fewer bytes
// runs faster once the per-weight work is small enough.
#include <cstdint>

#include "gpu/codec_dispatch.cuh"
#include "gpu/kernels.h"

namespace boltpack::gpu {
namespace {

constexpr int kWarpsPerBlock = 8;

template <class C, int kBatch, bool kBf16Out>
__global__ void __launch_bounds__(kWarpsPerBlock * 32) GemvKernel(DeviceTensor t, CodecExtra<C> extra,
                                                                  const uint4* __restrict__ x, void* y) {
  const Iq2Tables* tables = SharedTables<C>(extra);
  const uint64_t row = uint64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32;
  const uint32_t lane = threadIdx.x % 32;
  if (row >= t.rows) return;
  const uint64_t groups = t.cols / 8;  // per row
  float acc[kBatch];
#pragma unroll
  for (int b = 0; b < kBatch; ++b) acc[b] = 0.0f;
#pragma unroll 4
  for (uint64_t c = lane; c < groups; c += 32) {
    float k[8];
    const float s = C::template K8<false>(t, tables, row * groups + c, k);
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      float xv[8];
      Bf16x8(__ldg(x + b * groups + c), xv);
      float p = k[0] * xv[0];
#pragma unroll
      for (int j = 1; j < 8; ++j) p = fmaf(k[j], xv[j], p);
      acc[b] = fmaf(s, p, acc[b]);
    }
  }
#pragma unroll
  for (int b = 0; b < kBatch; ++b) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2) acc[b] += __shfl_xor_sync(0xffffffffu, acc[b], off);
  }
  if (lane != 0) return;
#pragma unroll
  for (int b = 0; b < kBatch; ++b) {
    if constexpr (kBf16Out) {
      reinterpret_cast<uint16_t*>(y)[b * t.rows + row] = F32ToBf16Bits(acc[b]);
    } else {
      reinterpret_cast<float*>(y)[b * t.rows + row] = acc[b];
    }
  }
}

template <class C, int kBatch>
cudaError_t Launch(const DeviceTensor& t, const CodecExtra<C>& extra, const void* x, bool bf16_out, void* y,
                   cudaStream_t stream) {
  if (t.rows == 0) return cudaSuccess;
  const uint64_t blocks = (t.rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (blocks > 0x7fffffffu) return cudaErrorInvalidValue;
  const auto* xv = static_cast<const uint4*>(x);
  if (bf16_out) {
    GemvKernel<C, kBatch, true><<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0, stream>>>(t, extra, xv, y);
  } else {
    GemvKernel<C, kBatch, false><<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0, stream>>>(t, extra, xv, y);
  }
  return cudaGetLastError();
}

template <class C>
cudaError_t LaunchBatch(const DeviceTensor& t, const CodecExtra<C>& extra, const void* x, int batch,
                        bool bf16_out, void* y, cudaStream_t stream) {
  switch (batch) {
    case 1: return Launch<C, 1>(t, extra, x, bf16_out, y, stream);
    case 2: return Launch<C, 2>(t, extra, x, bf16_out, y, stream);
    case 3: return Launch<C, 3>(t, extra, x, bf16_out, y, stream);
    case 4: return Launch<C, 4>(t, extra, x, bf16_out, y, stream);
    case 5: return Launch<C, 5>(t, extra, x, bf16_out, y, stream);
    case 6: return Launch<C, 6>(t, extra, x, bf16_out, y, stream);
    case 7: return Launch<C, 7>(t, extra, x, bf16_out, y, stream);
    case 8: return Launch<C, 8>(t, extra, x, bf16_out, y, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t LaunchGemv(int codec, const DeviceTensor& t, const void* x, int batch, bool bf16_out, void* y,
                       cudaStream_t stream) {
  return WithCodec(codec, [&](auto c, const auto& extra) {
    return LaunchBatch<decltype(c)>(t, extra, x, batch, bf16_out, y, stream);
  });
}

}  // namespace boltpack::gpu
