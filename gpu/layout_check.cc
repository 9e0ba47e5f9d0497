// CheckTensorLayout: see layout_check.h.
#include "gpu/layout_check.h"

#include <cmath>
#include <numeric>
#include <string>

#include "gpu/codec_layouts.h"
#include "gpu/entropy_index.h"
#include "gpu/last_error.h"

namespace boltpack::gpu {

bool Aligned(const void* p, uintptr_t alignment) {
  return (reinterpret_cast<uintptr_t>(p) & (alignment - 1)) == 0;
}

namespace {

// bf16-huffman, bf16-unary: a sign+mantissa byte per element, exponents of
// any size, and (with device pointers) the index of `segments` points.
bp_status CheckEntropyLayout(const bp_cuda_tensor& t, const std::string& name, bool device_pointers) {
  if (t.rows > 0 && t.cols > UINT64_MAX / t.rows) return Fail(BP_ERR_INVALID_ARGUMENT, name + "rows x cols overflows");
  const uint64_t n = t.rows * t.cols;
  if (n >= (uint64_t{1} << 56)) return Fail(BP_ERR_INVALID_ARGUMENT, name + "rows x cols reaches 2^56 elements");
  if (t.stream_count != 2) return Fail(BP_ERR_INVALID_ARGUMENT, name + "2 streams, not " + std::to_string(t.stream_count));
  if (t.stream_bytes[0] != n) {
    return Fail(BP_ERR_INVALID_ARGUMENT, name + "sign_mantissa has " + std::to_string(t.stream_bytes[0]) +
                                             " bytes for " + std::to_string(n) + " elements");
  }
  if (!device_pointers) return Ok();
  if (t.segments > n || (n > 0) != (t.segments > 0) || t.index == nullptr ||
      t.index_bytes != EntropyIndexBytes(t.segments) || !Aligned(t.index, 16)) {
    return Fail(BP_ERR_INVALID_ARGUMENT, name + "no index of its sync points, or one of the wrong size "
                                                "(bp_cuda_upload builds it)");
  }
  for (uint32_t i = 0; i < 2; ++i) {
    if (n > 0 && (t.streams[i] == nullptr || !Aligned(t.streams[i], 16))) {
      return Fail(BP_ERR_INVALID_ARGUMENT, name + "stream " + std::to_string(i) + " is NULL or not 16-byte aligned");
    }
  }
  return Ok();
}

}  // namespace

bp_status CheckTensorLayout(const bp_cuda_tensor& t, bool device_pointers) {
  const CodecLayout* l = FindLayout(t.codec);
  if (l == nullptr) return Fail(BP_ERR_UNSUPPORTED, "GPU codec number " + std::to_string(t.codec) + " is unknown");
  const std::string name = "codec '" + std::string(l->id) + "': ";
  if (l->entropy) return CheckEntropyLayout(t, name, device_pointers);
  if (t.cols == 0 || t.cols % l->block_elems != 0 || t.cols % 8 != 0) {
    // The GEMV reads 8 columns per step; block codecs also need whole blocks.
    const uint64_t need = std::lcm(uint64_t{l->block_elems}, uint64_t{8});
    return Fail(BP_ERR_INVALID_ARGUMENT,
                name + std::to_string(t.cols) + " columns: the kernels need a non-zero multiple of " +
                    std::to_string(need) + (l->block_elems > 1 ? " (whole blocks of " + std::to_string(l->block_elems) +
                                                                     " and 8-column steps)" : " (8-column steps)"));
  }
  if (t.rows > UINT64_MAX / t.cols || t.rows * t.cols >= (uint64_t{1} << 56)) {
    return Fail(BP_ERR_INVALID_ARGUMENT, name + "rows x cols reaches the format's limit of 2^56 elements");
  }
  if (t.stream_count != l->stream_count) {
    return Fail(BP_ERR_INVALID_ARGUMENT, name + std::to_string(t.stream_count) + " streams, the codec has " +
                                             std::to_string(l->stream_count));
  }
  const uint64_t blocks = t.rows * t.cols / l->block_elems;  // < 2^56: times <= 66 cannot overflow
  for (uint32_t i = 0; i < l->stream_count; ++i) {
    const uint64_t want = blocks * l->block_bytes[i];
    if (t.stream_bytes[i] != want) {
      return Fail(BP_ERR_INVALID_ARGUMENT, name + "stream " + std::to_string(i) + " has " +
                                               std::to_string(t.stream_bytes[i]) + " bytes, " +
                                               std::to_string(t.rows) + " x " + std::to_string(t.cols) +
                                               " needs " + std::to_string(want));
    }
    if (device_pointers && want > 0 && (t.streams[i] == nullptr || !Aligned(t.streams[i], 16))) {
      return Fail(BP_ERR_INVALID_ARGUMENT, name + "stream " + std::to_string(i) + " is NULL or not 16-byte aligned");
    }
  }
  if (t.codec == BP_CUDA_CODEC_NVFP4 && !(std::isfinite(t.tensor_scale) && t.tensor_scale > 0)) {
    return Fail(BP_ERR_INVALID_ARGUMENT, name + "tensor_scale must be a finite positive float");
  }
  return Ok();
}

}  // namespace boltpack::gpu
