#include "tools/gguf_file_type.h"

#include <algorithm>
#include <map>
#include <string_view>

namespace boltpack::tools {
namespace {

// Sets `key` to a UINT32, in place if present, else appended.
void SetU32(Metadata* kv, std::string_view key, uint64_t value) {
  auto it = std::find_if(kv->begin(), kv->end(), [&](const auto& e) { return e.first == key; });
  MetaValue v = MetaValue::Uint(ValueType::kUint32, value);
  if (it == kv->end()) kv->emplace_back(std::string(key), std::move(v));
  else it->second = std::move(v);
}

}  // namespace

int LlamaFileType(int ggml_type) {
  switch (ggml_type) {
    case 0: return 0;    // ALL_F32
    case 1: return 1;    // MOSTLY_F16
    case 2: return 2;    // MOSTLY_Q4_0
    case 8: return 7;    // MOSTLY_Q8_0
    case 16: return 19;  // MOSTLY_IQ2_XXS
    case 30: return 32;  // MOSTLY_BF16
    case 39: return 38;  // MOSTLY_MXFP4_MOE
    case 40: return 39;  // MOSTLY_NVFP4
    default: return -1;
  }
}

GgufMix MixOf(const std::vector<io::GgufTensorDecl>& decls) {
  std::map<int, uint64_t> weights_by_type;
  GgufMix mix;
  for (const auto& d : decls) {
    const io::GgmlType* type = io::GgmlTypeById(d.type);
    mix.quantized |= type != nullptr && type->block_size > 1;
    if (d.ne.size() < 2) continue;
    uint64_t n = 1;
    for (uint64_t x : d.ne) n *= x;
    weights_by_type[d.type] += n;
  }
  if (weights_by_type.empty()) return mix;
  auto most = std::max_element(weights_by_type.begin(), weights_by_type.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  mix.ftype = LlamaFileType(most->first);
  return mix;
}

bool FileTypeMisnamed(const Metadata& kv, const GgufMix& mix) {
  if (!mix.ftype || *mix.ftype < 0) return false;
  auto it = std::find_if(kv.begin(), kv.end(), [](const auto& e) { return e.first == "general.file_type"; });
  if (it == kv.end()) return false;
  return it->second.type != ValueType::kUint32 || it->second.u != static_cast<uint64_t>(*mix.ftype);
}

void SetGgufFileType(const GgufMix& mix, Metadata* kv) {
  if (!mix.ftype) return;
  if (mix.quantized) SetU32(kv, "general.quantization_version", 2);  // GGML_QNT_VERSION
  if (*mix.ftype >= 0) {
    SetU32(kv, "general.file_type", static_cast<uint64_t>(*mix.ftype));
  } else {
    kv->erase(std::remove_if(kv->begin(), kv->end(), [](const auto& e) { return e.first == "general.file_type"; }),
              kv->end());
  }
}

}  // namespace boltpack::tools
