// Tiny Hugging Face checkpoint folders for the HF-import tests: tensors of
// given shapes whose element i is i * step (exact in F32 and, for small i
// and a power-of-two step, in BF16), written as model.safetensors.
#ifndef BOLTPACK_TESTS_HF_FOLDER_UTIL_H_
#define BOLTPACK_TESTS_HF_FOLDER_UTIL_H_

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace boltpack::testing {

struct HfTensor {
  std::string name;
  std::vector<uint64_t> shape;
};

// F32 bytes of `t`: element i is i * step.
inline std::vector<uint8_t> HfElements(const HfTensor& t, float step) {
  uint64_t n = 1;
  for (uint64_t d : t.shape) n *= d;
  std::vector<uint8_t> bytes(n * 4);
  for (uint64_t i = 0; i < n; ++i) {
    const float f = static_cast<float>(i) * step;
    std::memcpy(bytes.data() + 4 * i, &f, 4);
  }
  return bytes;
}

// The top half of each F32 element: its BF16, exact for the values above.
inline std::vector<uint8_t> HfBf16(const std::vector<uint8_t>& f32) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < f32.size(); i += 4) out.insert(out.end(), {f32[i + 2], f32[i + 3]});
  return out;
}

inline void WriteHfText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// `tensors` as one safetensors file of `dtype` (F32 or BF16).
inline void WriteHfWeights(const std::string& path, const std::vector<HfTensor>& tensors, DType dtype, float step) {
  std::vector<io::SafetensorsTensorDecl> decls;
  for (const auto& t : tensors) decls.push_back({t.name, dtype, t.shape});
  auto w = io::SafetensorsWriter::Create(path, {}, std::move(decls), {}, false);
  ASSERT_TRUE(w.ok()) << w.status();
  for (const auto& t : tensors) {
    ASSERT_TRUE((*w)->WriteNext(dtype == DType::kBF16 ? HfBf16(HfElements(t, step)) : HfElements(t, step)).ok());
  }
  ASSERT_TRUE((*w)->Finish().ok());
}

}  // namespace boltpack::testing

#endif  // BOLTPACK_TESTS_HF_FOLDER_UTIL_H_
