// Fuzzes what a Hugging Face folder's JSON files become (tools/hf_input.cc
// reads them from untrusted checkpoints): the input, parsed, is taken as a
// config.json (architecture lookup, every table's hyperparameters, Llama 3
// rope factors, Q/K row reordering by its head counts) and as a
// tokenizer.json with it as tokenizer_config.json too.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "io/hf_arch.h"
#include "io/hf_tokenizer.h"
#include "io/json.h"

namespace {

void Config(const boltpack::io::JsonValue& config) {
  using namespace boltpack::io;
  (void)FindHfArch(config, "config.json");
  for (const char* cls : {"LlamaForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM", "Qwen3MoeForCausalLM"}) {
    std::vector<JsonValue> names;
    names.push_back(JsonValue::String(cls));
    auto arch = FindHfArch(JsonValue::Object({{"architectures", JsonValue::Array(std::move(names))}}), "c");
    if (!arch.ok()) __builtin_trap();  // the tables know these
    (void)HfHyperparameters(**arch, config, "config.json");
    (void)MapHfTensorName(**arch, "model.layers.7.self_attn.q_proj.weight");
    (void)MapHfTensorName(**arch, "model.layers.7.mlp.experts.999999999.up_proj.weight");
  }
  (void)Llama3RopeFactors(config, "config.json");
  // A reordering sized by the config's head count: refused unless it fits.
  std::vector<uint8_t> rows(64 * 4);
  auto heads = ConfigUint(config, "num_attention_heads", "config.json");
  if (heads.ok() && heads->has_value()) {
    auto out = PermuteRotaryRows(rows, 64, 4, **heads);
    if (out.ok() && out->size() != rows.size()) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace boltpack::io;
  JsonLimits limits;
  limits.max_values = 4096;
  auto json = ParseJson(std::string_view(reinterpret_cast<const char*>(data), size), limits);
  if (!json.ok() || !json->is_object()) return 0;
  Config(*json);
  const JsonValue empty = JsonValue::Object();
  (void)HfTokenizerFromJson({&*json, &*json, &*json, &*json}, "tokenizer.json");
  (void)HfTokenizerFromJson({&*json, nullptr, nullptr, &empty}, "tokenizer.json");
  return 0;
}
