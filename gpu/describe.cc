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
    void* dev = nullptr;
    // cudaMalloc's 256-byte alignment satisfies the kernels' 16.
    cudaError_t e = cudaMalloc(&dev, size == 0 ? 16 : size);
    if (e == cudaSuccess) e = cudaMemcpy(dev, host, size, cudaMemcpyHostToDevice);
    out->streams[s] = dev;
    if (e != cudaSuccess) {
      bp_cuda_free(out);
      return Fail(BP_ERR_RESOURCE, Where(r, tensor) + ": copy to the device: " + cudaGetErrorString(e));
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
}

}  // extern "C"
