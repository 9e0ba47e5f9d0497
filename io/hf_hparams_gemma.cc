// gemma2's and gemma3's `{arch}.*` keys: convert_hf_to_gguf.py's
// Gemma2Model and Gemma3Model.set_gguf_parameters. A field config.json
// leaves out takes transformers' Gemma2Config / Gemma3TextConfig default,
// which the converter sees (it reads the config through AutoConfig) and
// which Gemma3Model also names.
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "io/hf_arch_tables.h"

namespace boltpack::io {
namespace {

// Gemma2Model writes its own keys, in this order, and no rope.freq_base
// (llama.cpp's 10000 is Gemma 2's).
constexpr HfHparam kGemma2Hparams[] = {
    {"context_length", "max_position_embeddings", HfValue::kU32, 8192},
    {"embedding_length", "hidden_size"},
    {"block_count", "num_hidden_layers"},
    {"feed_forward_length", "intermediate_size"},
    {"attention.head_count", "num_attention_heads"},
    {"attention.head_count_kv", "num_key_value_heads,num_attention_heads"},
    {"attention.layer_norm_rms_epsilon", "rms_norm_eps", HfValue::kF32, 1e-6},
    {"attention.key_length", "head_dim", HfValue::kU32, 256},
    {"attention.value_length", "head_dim", HfValue::kU32, 256},
    {"attn_logit_softcapping", "attn_logit_softcapping", HfValue::kF32, 50.0},
    {"final_logit_softcapping", "final_logit_softcapping", HfValue::kF32, 30.0},
    {"attention.sliding_window", "sliding_window", HfValue::kU32, 4096},
};

// Gemma3Model: TextModel's keys (overwritten in place with its defaults),
// rope.freq_base between the head counts and the epsilon.
constexpr HfHparam kGemma3Sizes[] = {
    {"block_count", "num_hidden_layers"},
    {"context_length", "max_position_embeddings", HfValue::kU32, 131072},
    {"embedding_length", "hidden_size"},
    {"feed_forward_length", "intermediate_size"},
    {"attention.head_count", "num_attention_heads", HfValue::kU32, 8},
    {"attention.head_count_kv", "num_key_value_heads", HfValue::kU32, 4},
};
constexpr HfHparam kGemma3Heads[] = {
    {"attention.layer_norm_rms_epsilon", "rms_norm_eps", HfValue::kF32, 1e-6},
    {"attention.key_length", "head_dim", HfValue::kU32, 256},
    {"attention.value_length", "head_dim", HfValue::kU32, 256},
};

bool Present(const JsonValue& config, std::string_view field) {
  const JsonValue* v = config.Find(field);
  return v != nullptr && !v->is_null();
}

// The global layers' rope theta: rope_theta, or (transformers 5's
// rope_parameters) full_attention's; 1e6 when neither is there.
absl::Status AddGemma3RopeBase(const HfArch& arch, const JsonValue& config, const std::string& path,
                               Metadata* kv) {
  const JsonValue* theta = config.Find("rope_theta");
  const JsonValue* rp = config.Find("rope_parameters");
  if (!Present(config, "rope_theta") && rp != nullptr && rp->is_object()) {
    const JsonValue* full = rp->Find("full_attention");
    const JsonValue* params = full != nullptr && full->is_object() ? full : rp;
    const JsonValue* type = params->Find("rope_type");
    if (type != nullptr && !(type->is_string() && type->string_value() == "default")) {
      return absl::UnimplementedError(StrCat(path, ": rope_parameters with a rope_type other than \"default\" ",
                                             "are not converted yet (rope_scaling is)"));
    }
    theta = params->Find("rope_theta");
  }
  if (theta != nullptr && !theta->is_null() && !theta->is_number()) {
    return absl::InvalidArgumentError(StrCat(path, ": \"rope_theta\" is not a number"));
  }
  const double base = theta != nullptr && theta->is_number() ? theta->double_value() : 1e6;
  kv->emplace_back(StrCat(arch.gguf, ".rope.freq_base"), MetaValue::Float32(static_cast<float>(base)));
  return absl::OkStatus();
}

}  // namespace

absl::Status Gemma2Hparams(const HfArch& arch, const JsonValue& config, const std::string& path, Metadata* kv) {
  return AddHfHparams(arch, config, path, kGemma2Hparams, kv);
}

absl::Status Gemma3Hparams(const HfArch& arch, const JsonValue& config, const std::string& path, Metadata* kv) {
  if (Present(config, "attn_logit_softcapping")) {
    return absl::InvalidArgumentError(StrCat(path, ": \"attn_logit_softcapping\" is set, which Gemma 3 does not ",
                                             "have (llama.cpp's converter refuses it too): is this a Gemma 2 config?"));
  }
  BP_RETURN_IF_ERROR(AddHfHparams(arch, config, path, kGemma3Sizes, kv));
  BP_RETURN_IF_ERROR(AddGemma3RopeBase(arch, config, path, kv));
  BP_RETURN_IF_ERROR(AddHfHparams(arch, config, path, kGemma3Heads, kv));
  // Written only when set and not 0 (Gemma 3's default is none).
  if (const JsonValue* cap = config.Find("final_logit_softcapping"); cap != nullptr && !cap->is_null()) {
    if (!cap->is_number()) return absl::InvalidArgumentError(StrCat(path, ": \"final_logit_softcapping\" is not a number"));
    if (cap->double_value() != 0) {
      kv->emplace_back(StrCat(arch.gguf, ".final_logit_softcapping"),
                       MetaValue::Float32(static_cast<float>(cap->double_value())));
    }
  }
  // Every layer global (sliding_window_pattern 1): no window.
  BP_ASSIGN_OR_RETURN(std::optional<uint64_t> pattern, ConfigUint(config, "sliding_window_pattern", path));
  if (pattern.value_or(0) != 1) {
    constexpr HfHparam kWindow[] = {{"attention.sliding_window", "sliding_window", HfValue::kU32, 4096}};
    BP_RETURN_IF_ERROR(AddHfHparams(arch, config, path, kWindow, kv));
  }
  return AddRopeScaling(arch, config, path, kv);
}

}  // namespace boltpack::io
