// The checks of a bp_cuda_tensor's description against its codec's block
// layout, shared by bp_cuda_check (every kernel call) and bp_cuda_upload,
// which runs them before it allocates device memory, so that a file's
// sizes never reach cudaMalloc unchecked.
#ifndef BOLTPACK_GPU_LAYOUT_CHECK_H_
#define BOLTPACK_GPU_LAYOUT_CHECK_H_

#include <cstdint>

#include "boltpack/cuda.h"

namespace boltpack::gpu {

bool Aligned(const void* p, uintptr_t alignment);

// Shape, stream count, each stream's byte count and nvfp4's scale; with
// `device_pointers` also that every non-empty stream points to 16-byte
// aligned memory.
bp_status CheckTensorLayout(const bp_cuda_tensor& t, bool device_pointers);

}  // namespace boltpack::gpu

#endif  // BOLTPACK_GPU_LAYOUT_CHECK_H_
