// The C API of boltpack/cuda.h over the kernels: every argument checked
// against the codec's layout before anything is queued.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "boltpack/cuda.h"
#include "codecs/iq2_xxs/iq2_xxs_tables.h"
#include "gpu/codec_layouts.h"
#include "gpu/kernels.h"
#include "gpu/last_error.h"
#include "gpu/layout_check.h"

namespace boltpack::gpu {

CodecExtra<Iq2Xxs> Iq2Extra() {
  static const CodecExtra<Iq2Xxs> extra = [] {
    CodecExtra<Iq2Xxs> e;
    std::memcpy(e.tables.grid, iq2_xxs::kIq2xxsGrid, sizeof e.tables.grid);
    std::memcpy(e.tables.signs, iq2_xxs::kKsignsIq2xs, sizeof e.tables.signs);
    return e;
  }();
  return extra;
}

namespace {


DeviceTensor ToDevice(const bp_cuda_tensor& t) {
  DeviceTensor d{};
  for (uint32_t i = 0; i < t.stream_count; ++i) d.s[i] = static_cast<const uint8_t*>(t.streams[i]);
  d.rows = t.rows;
  d.cols = t.cols;
  d.tensor_scale = t.tensor_scale;
  return d;
}

bool IsEntropy(int codec) { return codec == BP_CUDA_CODEC_BF16_HUFFMAN || codec == BP_CUDA_CODEC_BF16_UNARY; }

EntropyTensor ToEntropy(const bp_cuda_tensor& t) {
  EntropyTensor e;
  e.unary = t.codec == BP_CUDA_CODEC_BF16_UNARY;
  e.sm = static_cast<const uint8_t*>(t.streams[0]);
  e.ex = static_cast<const uint8_t*>(t.streams[1]);
  e.index = t.index;
  e.segments = t.segments;
  e.rows = t.rows;
  e.cols = t.cols;
  e.workspace = t.workspace;
  return e;
}

bp_status LaunchStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Ok();
  return Fail(BP_ERR_INTERNAL, std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace
}  // namespace boltpack::gpu

using boltpack::gpu::Fail;

extern "C" {

bp_status bp_cuda_codec_from_id(const char* codec_id, int* codec) {
  if (codec_id == nullptr || codec == nullptr) return Fail(BP_ERR_INVALID_ARGUMENT, "null argument");
  const auto* l = boltpack::gpu::FindLayout(std::string_view(codec_id));
  if (l == nullptr) return Fail(BP_ERR_UNSUPPORTED, std::string("codec '") + codec_id + "' has no GPU kernels");
  *codec = l->codec;
  return boltpack::gpu::Ok();
}

bp_status bp_cuda_check(const bp_cuda_tensor* t) {
  if (t == nullptr) return Fail(BP_ERR_INVALID_ARGUMENT, "null tensor");
  return boltpack::gpu::CheckTensorLayout(*t, /*device_pointers=*/true);
}

bp_status bp_cuda_decode(const bp_cuda_tensor* t, bp_output out, void* dst, uint64_t dst_bytes,
                         bp_cuda_stream stream) {
  using namespace boltpack::gpu;
  if (bp_status s = bp_cuda_check(t); s != BP_OK) return s;
  OutType type;
  switch (out) {
    case BP_OUT_F32: type = OutType::kF32; break;
    case BP_OUT_BF16: type = OutType::kBf16; break;
    case BP_OUT_F16: type = OutType::kF16; break;
    default: return Fail(BP_ERR_INVALID_ARGUMENT, "decode to f32, bf16 or f16 only");
  }
  const uint64_t need = t->rows * t->cols * (type == OutType::kF32 ? 4 : 2);
  if (dst_bytes < need) {
    return Fail(BP_ERR_INVALID_ARGUMENT, "output of " + std::to_string(dst_bytes) + " bytes, the tensor needs " +
                                             std::to_string(need));
  }
  if (need > 0 && (dst == nullptr || !Aligned(dst, 16))) {
    return Fail(BP_ERR_INVALID_ARGUMENT, "output is NULL or not 16-byte aligned");
  }
  if (IsEntropy(t->codec)) return LaunchStatus(LaunchEntropyDecode(ToEntropy(*t), type, dst, stream), "decode launch");
  return LaunchStatus(LaunchDecode(t->codec, ToDevice(*t), type, dst, stream), "decode launch");
}

bp_status bp_cuda_gemv(const bp_cuda_tensor* w, const void* x, int batch, bp_output y_type, void* y,
                       bp_cuda_stream stream) {
  using namespace boltpack::gpu;
  if (bp_status s = bp_cuda_check(w); s != BP_OK) return s;
  if (batch < 1 || batch > 8) return Fail(BP_ERR_INVALID_ARGUMENT, "batch " + std::to_string(batch) + ": 1 to 8");
  if (y_type != BP_OUT_F32 && y_type != BP_OUT_BF16) return Fail(BP_ERR_INVALID_ARGUMENT, "y is f32 or bf16");
  if (x == nullptr || !Aligned(x, 16)) return Fail(BP_ERR_INVALID_ARGUMENT, "x is NULL or not 16-byte aligned");
  if (y == nullptr || !Aligned(y, y_type == BP_OUT_F32 ? 4 : 2)) {
    return Fail(BP_ERR_INVALID_ARGUMENT, "y is NULL or misaligned");
  }
  if (IsEntropy(w->codec)) {
    const uint64_t need = w->rows * static_cast<uint64_t>(batch) * sizeof(float);
    if (y_type == BP_OUT_BF16 && (w->workspace == nullptr || w->workspace_bytes < need)) {
      return Fail(BP_ERR_INVALID_ARGUMENT, "a bf16 y needs the tensor's workspace of rows x batch floats");
    }
    return LaunchStatus(LaunchEntropyGemv(ToEntropy(*w), x, batch, y_type == BP_OUT_BF16, y, stream), "gemv launch");
  }
  return LaunchStatus(LaunchGemv(w->codec, ToDevice(*w), x, batch, y_type == BP_OUT_BF16, y, stream),
                      "gemv launch");
}

const char* bp_cuda_last_error(void) { return boltpack::gpu::LastError(); }

}  // extern "C"
