// nemotron_h / nemotron_h_moe `{arch}.*` keys from config.json, as
// convert_hf_to_gguf.py's NemotronHModel (over GraniteHybridModel,
// Mamba2Model and TextModel) writes them. The layer kinds are not a key:
// llama.cpp reads them from the per-layer head_count_kv and
// feed_forward_length arrays (Mamba-2: both 0; attention: ff 0 and
// head_count_kv > 0; else MLP or MoE), which come from
// hybrid_override_pattern (M Mamba-2, * attention, - MLP, E MoE).
#include <limits>

#include "common/status_macros.h"
#include "common/str_cat.h"
#include "io/hf_arch_tables.h"

namespace boltpack::io {
namespace {

enum class Layer : uint8_t { kMamba, kAttention, kMlp, kMoe };

// The layer kinds of hybrid_override_pattern (or the list form
// layers_block_type), one per num_hidden_layers.
absl::StatusOr<std::vector<Layer>> LayerKinds(const JsonValue& config, uint64_t layers, const std::string& path) {
  const JsonValue* p = config.Find("hybrid_override_pattern");
  if (p == nullptr || p->is_null()) p = config.Find("layers_block_type");
  if (p == nullptr || p->is_null()) {
    return absl::InvalidArgumentError(StrCat(path, ": no \"hybrid_override_pattern\" (the layer kinds, e.g. \"M-M*-\")"));
  }
  std::vector<std::string> names;
  if (p->is_string()) {
    for (char c : p->string_value()) names.emplace_back(1, c);
  } else if (p->is_array()) {
    for (const JsonValue& e : p->array()) names.push_back(e.is_string() ? e.string_value() : "?");
  }
  if (names.size() != layers) {
    return absl::InvalidArgumentError(StrCat(path, ": the layer pattern names ", names.size(), " layers, \"num_hidden_layers\" ",
                                             layers));
  }
  std::vector<Layer> kinds;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    if (n == "M" || n == "mamba") kinds.push_back(Layer::kMamba);
    else if (n == "*" || n == "attention") kinds.push_back(Layer::kAttention);
    else if (n == "-" || n == "mlp") kinds.push_back(Layer::kMlp);
    else if (n == "E" || n == "moe") kinds.push_back(Layer::kMoe);
    else return absl::InvalidArgumentError(StrCat(path, ": layer ", i, " is of kind \"", n, "\" (M, *, - or E)"));
  }
  return kinds;
}

// The first present field of `fields` as an integer; an error naming them
// when `required` and none is present.
absl::StatusOr<std::optional<uint64_t>> Uint(const JsonValue& config, std::initializer_list<std::string_view> fields,
                                             const std::string& path, bool required = true) {
  for (std::string_view f : fields) {
    BP_ASSIGN_OR_RETURN(std::optional<uint64_t> v, ConfigUint(config, f, path));
    if (v) {
      if (*v > std::numeric_limits<uint32_t>::max()) {
        return absl::InvalidArgumentError(StrCat(path, ": \"", f, "\" is above 2^32-1"));
      }
      return v;
    }
  }
  if (!required) return std::optional<uint64_t>();
  return absl::InvalidArgumentError(StrCat(path, ": no \"", *fields.begin(), "\""));
}

std::optional<float> Float(const JsonValue& config, std::initializer_list<std::string_view> fields) {
  for (std::string_view f : fields) {
    const JsonValue* v = config.Find(f);
    if (v != nullptr && v->is_number()) return static_cast<float>(v->double_value());
  }
  return std::nullopt;
}

MetaValue U32(uint64_t v) { return MetaValue::Uint(ValueType::kUint32, v); }

// A per-layer INT32 array (gguf-py writes Python int lists as INT32).
MetaValue PerLayer(const std::vector<Layer>& kinds, Layer kind, uint64_t value) {
  std::vector<MetaValue> v;
  for (Layer k : kinds) v.push_back(MetaValue::Int(ValueType::kInt32, k == kind ? static_cast<int64_t>(value) : 0));
  return MetaValue::Array(ValueType::kInt32, std::move(v));
}

// The Mamba-2 sizes (GraniteHybridModel: "mamba_"-prefixed fields too;
// d_inner = heads * head_dim, ssm.time_step_rank is the head count).
absl::Status AddSsmKeys(const std::string& a, const JsonValue& config, const std::string& path, Metadata* kv) {
  BP_ASSIGN_OR_RETURN(auto conv, Uint(config, {"conv_kernel", "d_conv", "mamba_conv_kernel", "mamba_d_conv"}, path));
  BP_ASSIGN_OR_RETURN(auto state, Uint(config, {"ssm_state_size", "state_size", "d_state", "mamba_d_state"}, path));
  BP_ASSIGN_OR_RETURN(auto groups, Uint(config, {"n_groups", "num_groups", "mamba_n_groups"}, path));
  BP_ASSIGN_OR_RETURN(auto heads, Uint(config, {"mamba_num_heads", "num_heads", "mamba_n_heads", "n_heads"}, path));
  BP_ASSIGN_OR_RETURN(auto head_dim, Uint(config, {"mamba_head_dim", "mamba_d_head"}, path));
  kv->emplace_back(a + "ssm.conv_kernel", U32(*conv));
  kv->emplace_back(a + "ssm.state_size", U32(*state));
  kv->emplace_back(a + "ssm.group_count", U32(*groups));
  kv->emplace_back(a + "ssm.inner_size", U32(*heads * *head_dim));  // both < 2^32: no overflow in 64 bits
  kv->emplace_back(a + "ssm.time_step_rank", U32(*heads));
  return absl::OkStatus();
}

// The MoE keys NemotronHModel adds for nemotron_h_moe.
absl::Status AddMoeKeys(const std::string& a, const JsonValue& config, const std::string& path, Metadata* kv) {
  BP_ASSIGN_OR_RETURN(auto used, Uint(config, {"num_experts_per_tok"}, path));
  BP_ASSIGN_OR_RETURN(auto ff, Uint(config, {"moe_intermediate_size"}, path));
  BP_ASSIGN_OR_RETURN(auto shared_ff, Uint(config, {"moe_shared_expert_intermediate_size"}, path));
  BP_ASSIGN_OR_RETURN(auto experts, Uint(config, {"n_routed_experts"}, path));
  BP_ASSIGN_OR_RETURN(auto shared, Uint(config, {"n_shared_experts"}, path, false));
  BP_ASSIGN_OR_RETURN(auto groups, Uint(config, {"n_group"}, path, false));
  BP_ASSIGN_OR_RETURN(auto groups_used, Uint(config, {"topk_group"}, path, false));
  BP_ASSIGN_OR_RETURN(auto latent, Uint(config, {"moe_latent_size"}, path, false));
  kv->emplace_back(a + "expert_used_count", U32(*used));
  kv->emplace_back(a + "expert_feed_forward_length", U32(*ff));
  kv->emplace_back(a + "expert_shared_feed_forward_length", U32(*shared_ff));
  kv->emplace_back(a + "expert_count", U32(*experts));
  if (shared) kv->emplace_back(a + "expert_shared_count", U32(*shared));
  const JsonValue* norm = config.Find("norm_topk_prob");
  if (norm != nullptr && norm->is_bool()) kv->emplace_back(a + "expert_weights_norm", MetaValue::Bool(norm->bool_value()));
  if (auto scale = Float(config, {"routed_scaling_factor"})) kv->emplace_back(a + "expert_weights_scale", MetaValue::Float32(*scale));
  if (groups) kv->emplace_back(a + "expert_group_count", U32(*groups));
  if (groups_used) kv->emplace_back(a + "expert_group_used_count", U32(*groups_used));
  if (latent) kv->emplace_back(a + "moe_latent_size", U32(*latent));
  return absl::OkStatus();
}

}  // namespace

absl::Status NemotronHHparams(const HfArch& arch, const JsonValue& config, const std::string& path, Metadata* kv) {
  const std::string a = StrCat(arch.gguf, ".");
  const bool moe = arch.gguf == "nemotron_h_moe";
  BP_ASSIGN_OR_RETURN(auto layers, Uint(config, {"num_hidden_layers"}, path));
  BP_ASSIGN_OR_RETURN(std::vector<Layer> kinds, LayerKinds(config, *layers, path));
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (kinds[i] == (moe ? Layer::kMlp : Layer::kMoe)) {
      // llama.cpp's loader tells an MLP from a MoE layer only by expert_count.
      return absl::InvalidArgumentError(StrCat(path, ": layer ", i, " is ", moe ? "a dense MLP (-) in a MoE" : "MoE (E) in a dense",
                                               " model; llama.cpp's nemotron_h loader takes one of the two"));
    }
  }
  BP_ASSIGN_OR_RETURN(auto hidden, Uint(config, {"hidden_size"}, path));
  BP_ASSIGN_OR_RETURN(auto heads, Uint(config, {"num_attention_heads"}, path));
  BP_ASSIGN_OR_RETURN(auto kv_heads, Uint(config, {"num_key_value_heads"}, path));
  BP_ASSIGN_OR_RETURN(auto head_dim, Uint(config, {"head_dim", "attention_head_dim"}, path));
  BP_ASSIGN_OR_RETURN(auto ff, Uint(config, {moe ? "moe_intermediate_size" : "intermediate_size"}, path));
  BP_ASSIGN_OR_RETURN(auto vocab, Uint(config, {"vocab_size"}, path, false));
  if (*heads == 0) return absl::InvalidArgumentError(StrCat(path, ": \"num_attention_heads\" is 0"));
  kv->emplace_back(a + "block_count", U32(*layers));
  // No RoPE in a hybrid model: the converter writes 2^20 (any length runs).
  kv->emplace_back(a + "context_length", U32(uint64_t{1} << 20));
  kv->emplace_back(a + "embedding_length", U32(*hidden));
  kv->emplace_back(a + "feed_forward_length", PerLayer(kinds, moe ? Layer::kMoe : Layer::kMlp, *ff));
  kv->emplace_back(a + "attention.head_count", U32(*heads));
  kv->emplace_back(a + "attention.head_count_kv", PerLayer(kinds, Layer::kAttention, *kv_heads));
  if (auto theta = Float(config, {"rope_theta"})) kv->emplace_back(a + "rope.freq_base", MetaValue::Float32(*theta));
  // The loader requires both epsilons; NemotronH's RMS norms use
  // layer_norm_epsilon when the config names no RMS one.
  auto ln_eps = Float(config, {"layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"});
  auto rms_eps = Float(config, {"rms_norm_eps", "norm_eps", "mamba_rms_norm_eps"});
  if (!rms_eps) rms_eps = ln_eps;
  if (!rms_eps) return absl::InvalidArgumentError(StrCat(path, ": no \"layer_norm_epsilon\" (or \"rms_norm_eps\")"));
  kv->emplace_back(a + "attention.layer_norm_rms_epsilon", MetaValue::Float32(*rms_eps));
  kv->emplace_back(a + "attention.layer_norm_epsilon", MetaValue::Float32(ln_eps.value_or(*rms_eps)));
  if (vocab) kv->emplace_back(a + "vocab_size", U32(*vocab));
  kv->emplace_back(a + "rope.dimension_count", U32(*hidden / *heads));  // LlamaModel's; unused without RoPE
  kv->emplace_back(a + "attention.key_length", U32(*head_dim));
  kv->emplace_back(a + "attention.value_length", U32(*head_dim));
  if (moe) BP_RETURN_IF_ERROR(AddMoeKeys(a, config, path, kv));
  BP_RETURN_IF_ERROR(AddSsmKeys(a, config, path, kv));
  kv->emplace_back(a + "rope.scaling.finetuned", MetaValue::Bool(false));
  return absl::OkStatus();
}

}  // namespace boltpack::io
