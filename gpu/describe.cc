// bp_cuda_describe and bp_cuda_upload: from a tensor of an open reader
// (boltpack.h) to the description the kernels take, and its streams onto
// the device.
#include <cuda_runtime.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "boltpack/boltpack.h"
#include "boltpack/cuda.h"
#include "gpu/entropy_index_build.h"
#include "gpu/last_error.h"
#include "gpu/layout_check.h"

namespace {

using boltpack::gpu::Fail;

std::string Where(const bp_reader* r, size_t tensor) {
  struct bp_tensor_info info{};
  if (bp_tensor_info(r, tensor, &info) != BP_OK) return "tensor #" + std::to_string(tensor);
  return std::string("tensor '") + info.name + "'";
}

// nvfp4's tensor_scale from the record's params as JSON
// ({"tensor_scale":0.00212...}, shortest round-trip digits).
bp_status TensorScale(const bp_reader* r, size_t tensor, float* scale) {
  size_t len = 0;
  bp_status st = bp_tensor_codec_params(r, tensor, nullptr, 0, &len);
  if (st != BP_OK && st != BP_ERR_OUT_OF_RANGE) return Fail(st, bp_last_error_message());
  std::vector<char> json(len + 1);
  if ((st = bp_tensor_codec_params(r, tensor, json.data(), json.size(), &len)) != BP_OK) {
    return Fail(st, bp_last_error_message());
  }
  const char* key = std::strstr(json.data(), "\"tensor_scale\":");
  if (key == nullptr) return Fail(BP_ERR_CORRUPT, Where(r, tensor) + ": nvfp4 without a tensor_scale");
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(key + std::strlen("\"tensor_scale\":"), &end);
  if (errno != 0 || end == key || !std::isfinite(v) || !(v > 0)) {
    return Fail(BP_ERR_CORRUPT, Where(r, tensor) + ": nvfp4 tensor_scale is not a finite positive number");
  }
  *scale = static_cast<float>(v);  // stored as FLOAT32: exact
  return BP_OK;
}

// `size` bytes and kEntropyStreamSlack zero bytes after them (what the
// entropy kernels' bit readers may load) in fresh device memory; cudaMalloc's
// 256-byte alignment satisfies the kernels' 16.
bp_status CopyToDevice(const void* host, uint64_t size, const void** device) {
  void* dev = nullptr;
  const uint64_t slack = boltpack::gpu::kEntropyStreamSlack;
  cudaError_t e = cudaMalloc(&dev, size + slack);
  if (e == cudaSuccess && size > 0) e = cudaMemcpy(dev, host, size, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaMemset(static_cast<uint8_t*>(dev) + size, 0, slack);
  *device = dev;
  if (e != cudaSuccess) return Fail(BP_ERR_RESOURCE, std::string("copy to the device: ") + cudaGetErrorString(e));
  return BP_OK;
}

// bf16-huffman, bf16-unary: the sync index (found by the CPU decoder) and
// the GEMV's f32 workspace.
bp_status UploadIndex(const bp_reader* r, size_t tensor, bp_cuda_tensor* t) {
  std::vector<uint8_t> index;
  const bool unary = t->codec == BP_CUDA_CODEC_BF16_UNARY;
  if (bp_status st = boltpack::gpu::BuildEntropyIndex(r, tensor, unary, &index, &t->segments); st != BP_OK) {
    return st;
  }
  if (bp_status st = CopyToDevice(index.data(), index.size(), &t->index); st != BP_OK) return st;
  t->index_bytes = index.size();
  t->workspace_bytes = t->rows * 8 * sizeof(float);
  if (cudaMalloc(&t->workspace, t->workspace_bytes == 0 ? 16 : t->workspace_bytes) != cudaSuccess) {
    t->workspace = nullptr;
    return Fail(BP_ERR_RESOURCE, "no device memory for the GEMV workspace");
  }
  return BP_OK;
}

}  // namespace

extern "C" {

bp_status bp_cuda_describe(const bp_reader* r, size_t tensor, bp_cuda_tensor* out) {
  if (r == nullptr || out == nullptr) return Fail(BP_ERR_INVALID_ARGUMENT, "null argument");
  *out = bp_cuda_tensor{};
  struct bp_tensor_info info{};
  if (bp_status st = bp_tensor_info(r, tensor, &info); st != BP_OK) return Fail(st, bp_last_error_message());
  if (bp_status st = bp_cuda_codec_from_id(info.codec, &out->codec); st != BP_OK) {
    return Fail(st, Where(r, tensor) + ": codec '" + info.codec + "' has no GPU kernels");
  }
  if (info.stream_count > BP_CUDA_MAX_STREAMS) return Fail(BP_ERR_CORRUPT, Where(r, tensor) + ": too many streams");
  uint64_t elements = 1;
  for (uint32_t d = 0; d < info.ndim; ++d) {
    if (info.shape[d] != 0 && elements > UINT64_MAX / info.shape[d]) {
      return Fail(BP_ERR_CORRUPT, Where(r, tensor) + ": element count overflows");
    }
    elements *= info.shape[d];
  }
  out->cols = info.ndim == 0 ? 1 : info.shape[info.ndim - 1];
  out->rows = out->cols == 0 ? 0 : elements / out->cols;
  out->stream_count = info.stream_count;
  out->tensor_scale = 1.0f;
  for (uint32_t s = 0; s < info.stream_count; ++s) {
    struct bp_stream_info si{};
    if (bp_status st = bp_stream_info(r, tensor, s, &si); st != BP_OK) return Fail(st, bp_last_error_message());
    if (si.compression != BP_COMPRESSION_NONE) {
      return Fail(BP_ERR_UNSUPPORTED, Where(r, tensor) + ": stream '" + si.role +
                                          "' is compressed; the kernels read stored blocks");
    }
    out->stream_bytes[s] = si.raw_length;
  }
  if (out->codec == BP_CUDA_CODEC_NVFP4) {
    if (bp_status st = TensorScale(r, tensor, &out->tensor_scale); st != BP_OK) return st;
  }
  return boltpack::gpu::Ok();
}

bp_status bp_cuda_upload(const bp_reader* r, size_t tensor, bp_cuda_tensor* out) {
  if (bp_status st = bp_cuda_describe(r, tensor, out); st != BP_OK) return st;
  // The file's sizes are checked against the codec's layout before any of
  // them reaches cudaMalloc (the pointers are checked again after the copy).
  if (bp_status st = boltpack::gpu::CheckTensorLayout(*out, /*device_pointers=*/false); st != BP_OK) {
    const std::string why = bp_cuda_last_error();
    return Fail(st, Where(r, tensor) + ": " + why);
  }
  for (uint32_t s = 0; s < out->stream_count; ++s) {
    const void* host = nullptr;
    uint64_t size = 0;
    if (bp_status st = bp_stream_data_checked(r, tensor, s, &host, &size); st != BP_OK) {
      bp_cuda_free(out);
      return Fail(st, bp_last_error_message());
    }
    if (bp_status st = CopyToDevice(host, size, &out->streams[s]); st != BP_OK) {
      const std::string why = bp_cuda_last_error();
      bp_cuda_free(out);
      return Fail(st, Where(r, tensor) + ": " + why);
    }
  }
  if (out->codec == BP_CUDA_CODEC_BF16_HUFFMAN || out->codec == BP_CUDA_CODEC_BF16_UNARY) {
    if (bp_status st = UploadIndex(r, tensor, out); st != BP_OK) {
      const std::string why = bp_cuda_last_error();
      bp_cuda_free(out);
      return Fail(st, Where(r, tensor) + ": " + why);
    }
  }
  if (bp_status st = bp_cuda_check(out); st != BP_OK) {
    const std::string why = bp_cuda_last_error();
    bp_cuda_free(out);
    return Fail(st, Where(r, tensor) + ": " + why);
  }
  return boltpack::gpu::Ok();
}

void bp_cuda_free(bp_cuda_tensor* t) {
  if (t == nullptr) return;
  for (const void*& p : t->streams) {
    if (p != nullptr) cudaFree(const_cast<void*>(p));
    p = nullptr;
  }
  if (t->index != nullptr) cudaFree(const_cast<void*>(t->index));
  if (t->workspace != nullptr) cudaFree(t->workspace);
  t->index = nullptr;
  t->workspace = nullptr;
  t->index_bytes = t->segments = t->workspace_bytes = 0;
}

}  // extern "C"
