// Gemma's RMS norms (Gemma2RMSNorm, Gemma3RMSNorm) scale by 1 + weight;
// llama.cpp's kernels scale by the weight, so its converter
// (convert_hf_to_gguf.py's Gemma2Model / Gemma3Model.modify_tensors) adds
// 1 to every tensor whose name ends in "norm.weight". It does so after
// widening anything but F16 and F32 to F32 (prepare_tensors), so a BF16 or
// F32 checkpoint's sum is an F32 one, an F16 checkpoint's an F16 one; the
// 1-D result is written F32 either way.
#include <cstring>

#include "codecs/float_convert.h"
#include "common/str_cat.h"
#include "io/hf_arch.h"

namespace boltpack::io {

absl::StatusOr<std::vector<uint8_t>> NormPlusOneF32(DType dtype, absl::Span<const uint8_t> bytes,
                                                    const std::string& where) {
  const size_t width = dtype == DType::kF32 ? 4 : (dtype == DType::kF16 || dtype == DType::kBF16) ? 2 : 0;
  if (width == 0 || bytes.size() % width != 0) {
    return absl::InvalidArgumentError(StrCat(where, ": a Gemma norm weight must be F32, F16 or BF16"));
  }
  const size_t n = bytes.size() / width;
  std::vector<uint8_t> out(n * 4);
  for (size_t i = 0; i < n; ++i) {
    float x;
    if (width == 4) {
      std::memcpy(&x, bytes.data() + 4 * i, 4);
    } else {
      const uint16_t h = static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
      x = dtype == DType::kF16 ? F16ToF32(h) : BF16ToF32(h);
    }
    float y = x + 1.0f;
    if (dtype == DType::kF16) y = F16ToF32(F32ToF16(y));  // torch's F16 add: rounded to F16
    std::memcpy(out.data() + 4 * i, &y, 4);
  }
  return out;
}

}  // namespace boltpack::io
