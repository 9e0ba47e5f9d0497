#include "io/gguf_nvfp4.h"

#include "codecs/nvfp4/nvfp4_codec.h"
#include "common/str_cat.h"

namespace boltpack::io {

std::string Nvfp4ScaleTensorName(std::string_view name) {
  constexpr std::string_view kWeight = ".weight";
  if (name.size() > kWeight.size() && name.substr(name.size() - kWeight.size()) == kWeight) {
    name.remove_suffix(kWeight.size());
  }
  return StrCat(name, ".scale");
}

std::optional<double> Nvfp4NumericTensorScale(const CodecParams& params) {
  for (const auto& [key, v] : params) {
    if (key != kNvfp4TensorScaleParam) continue;
    switch (v.type) {
      case ValueType::kFloat32: return v.f32;
      case ValueType::kFloat64: return v.f64;
      default:
        if (IsUnsignedInt(v.type)) return static_cast<double>(v.u);
        if (IsSignedInt(v.type)) return static_cast<double>(v.i);
        return std::nullopt;
    }
  }
  return std::nullopt;
}

bool Nvfp4RecordHasScaleTensor(const CodecParams& params) { return Nvfp4NumericTensorScale(params) != 1.0; }

}  // namespace boltpack::io
