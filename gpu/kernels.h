// The kernels' launchers (decode_kernels.cu, gemv_kernels.cu), for the C API
// (cuda_api.cu), which has checked every argument before it calls them.
#ifndef BOLTPACK_GPU_KERNELS_H_
#define BOLTPACK_GPU_KERNELS_H_

#include <cuda_runtime.h>

#include "gpu/block_formats.cuh"

namespace boltpack::gpu {

enum class OutType { kF32, kBf16, kF16 };

// The whole tensor (rows * cols elements) into dst.
cudaError_t LaunchDecode(int codec, const DeviceTensor& t, OutType out, void* dst, cudaStream_t stream);

// y[b][r] = sum_c W[r][c] x[b][c], b < batch (1..8), y f32 or bf16.
cudaError_t LaunchGemv(int codec, const DeviceTensor& t, const void* x, int batch, bool bf16_out, void* y,
                       cudaStream_t stream);

// bf16-huffman and bf16-unary (entropy_kernels.cu): the two streams (16
// readable bytes past the exponents' end) and the device index.
struct EntropyTensor {
  bool unary = false;
  const uint8_t* sm = nullptr;
  const uint8_t* ex = nullptr;
  const void* index = nullptr;
  uint64_t segments = 0;
  uint64_t rows = 0;
  uint64_t cols = 0;
  void* workspace = nullptr;  // rows x 8 floats: the f32 sums of a bf16 y
};

cudaError_t LaunchEntropyDecode(const EntropyTensor& t, OutType out, void* dst, cudaStream_t stream);
cudaError_t LaunchEntropyGemv(const EntropyTensor& t, const void* x, int batch, bool bf16_out, void* y,
                              cudaStream_t stream);

}  // namespace boltpack::gpu

#endif  // BOLTPACK_GPU_KERNELS_H_
