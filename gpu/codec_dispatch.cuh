// One switch from a BP_CUDA_CODEC_* number to the codec's loader type, for
// the decode and GEMV launchers.
#ifndef BOLTPACK_GPU_CODEC_DISPATCH_CUH_
#define BOLTPACK_GPU_CODEC_DISPATCH_CUH_

#include <cuda_runtime.h>

#include "boltpack/cuda.h"
#include "gpu/block_formats.cuh"

namespace boltpack::gpu {

// Calls fn(C{}, CodecExtra<C>) for the codec; cudaErrorInvalidValue for a
// number without kernels (the C API has refused those already).
template <class Fn>
cudaError_t WithCodec(int codec, Fn&& fn) {
  switch (codec) {
    case BP_CUDA_CODEC_BF16: return fn(Bf16Raw{}, CodecExtra<Bf16Raw>{});
    case BP_CUDA_CODEC_Q8_0: return fn(Q8_0{}, CodecExtra<Q8_0>{});
    case BP_CUDA_CODEC_MXFP4: return fn(Mxfp4{}, CodecExtra<Mxfp4>{});
    case BP_CUDA_CODEC_NVFP4_GGML: return fn(Nvfp4Ggml{}, CodecExtra<Nvfp4Ggml>{});
    case BP_CUDA_CODEC_NVFP4: return fn(Nvfp4{}, CodecExtra<Nvfp4>{});
    case BP_CUDA_CODEC_INT4_G128: return fn(Int4G128{}, CodecExtra<Int4G128>{});
    case BP_CUDA_CODEC_IQ2_XXS: return fn(Iq2Xxs{}, Iq2Extra());
    case BP_CUDA_CODEC_BF16_MX: return fn(Bf16Mx{}, CodecExtra<Bf16Mx>{});
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace boltpack::gpu

#endif  // BOLTPACK_GPU_CODEC_DISPATCH_CUH_
