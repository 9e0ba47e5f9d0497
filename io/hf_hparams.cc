// config.json to `{arch}.*` keys: the fields llama.cpp's TextModel (and,
// for llama, LlamaModel) writes, in its order.
#include <limits>

#include "common/status_macros.h"
#include "common/str_cat.h"
#include "io/hf_arch.h"
#include "io/hf_arch_tables.h"

namespace boltpack::io {
namespace {

// TextModel.set_gguf_parameters: each key from the first config field
// present (older or GPT-style configs name some differently); a key whose
// fields are all absent is left out, as llama.cpp leaves it.
constexpr HfHparam kDecoderHparams[] = {
    {"block_count", "num_hidden_layers,n_layer,num_layers"},
    {"context_length", "max_position_embeddings,n_ctx,n_positions,max_length"},
    {"embedding_length", "hidden_size,n_embd"},
    {"feed_forward_length", "intermediate_size,n_inner"},
    {"attention.head_count", "num_attention_heads,n_head"},
    {"attention.head_count_kv", "num_key_value_heads"},
    {"rope.freq_base", "rope_theta", HfValue::kF32},
    {"attention.layer_norm_rms_epsilon", "rms_norm_eps", HfValue::kF32},
    {"attention.key_length", "head_dim"},
    {"attention.value_length", "head_dim"},
    // Mixture of experts (mixtral, qwen3moe).
    {"expert_count", "num_local_experts,num_experts"},
    {"expert_used_count", "num_experts_per_tok"},
    {"expert_feed_forward_length", "moe_intermediate_size"},
};

// The first of the comma-separated `fields` config.json has (not null).
const JsonValue* FirstField(const JsonValue& config, std::string_view fields, std::string_view* which) {
  while (!fields.empty()) {
    size_t comma = fields.find(',');
    std::string_view f = fields.substr(0, comma);
    const JsonValue* v = config.Find(f);
    if (v != nullptr && !v->is_null()) {
      *which = f;
      return v;
    }
    fields = comma == std::string_view::npos ? std::string_view() : fields.substr(comma + 1);
  }
  return nullptr;
}

absl::StatusOr<MetaValue> ToMeta(const JsonValue& v, HfValue type, std::string_view field, const std::string& path) {
  if (type == HfValue::kF32) {
    if (!v.is_number()) return absl::InvalidArgumentError(StrCat(path, ": \"", field, "\" is not a number"));
    return MetaValue::Float32(static_cast<float>(v.double_value()));
  }
  std::optional<uint64_t> u = v.is_number() ? v.uint64_value() : std::nullopt;
  if (!u || *u > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(StrCat(path, ": \"", field, "\" is not an integer in 0..2^32-1"));
  }
  return MetaValue::Uint(ValueType::kUint32, *u);
}

// LlamaModel's two extra keys: the vocabulary size and the rotary width
// (head_dim, else hidden_size / num_attention_heads).
absl::Status AddLlamaKeys(const HfArch& arch, const JsonValue& config, const std::string& path, Metadata* kv) {
  BP_ASSIGN_OR_RETURN(std::optional<uint64_t> vocab, ConfigUint(config, "vocab_size", path));
  if (vocab) kv->emplace_back(StrCat(arch.gguf, ".vocab_size"), MetaValue::Uint(ValueType::kUint32, *vocab));
  BP_ASSIGN_OR_RETURN(std::optional<uint64_t> dims, ConfigUint(config, "head_dim", path));
  if (!dims) {
    BP_ASSIGN_OR_RETURN(std::optional<uint64_t> hidden, ConfigUint(config, "hidden_size", path));
    BP_ASSIGN_OR_RETURN(std::optional<uint64_t> heads, ConfigUint(config, "num_attention_heads", path));
    if (hidden && heads && *heads != 0) dims = *hidden / *heads;
  }
  if (dims) kv->emplace_back(StrCat(arch.gguf, ".rope.dimension_count"), MetaValue::Uint(ValueType::kUint32, *dims));
  return absl::OkStatus();
}

}  // namespace

// rope_scaling: linear and yarn carry over as keys; llama3 is a tensor
// (rope_freqs.weight, Llama3RopeFactors), no key; another type is refused
// rather than converted into a model that runs wrong past its original
// context.
absl::Status AddRopeScaling(const HfArch& arch, const JsonValue& config, const std::string& path, Metadata* kv) {
  const JsonValue* rs = config.Find("rope_scaling");
  if (rs == nullptr || rs->is_null()) return absl::OkStatus();
  if (!rs->is_object()) return absl::InvalidArgumentError(StrCat(path, ": \"rope_scaling\" is not an object"));
  const JsonValue* type = rs->Find("rope_type");
  if (type == nullptr) type = rs->Find("type");
  const JsonValue* factor = rs->Find("factor");
  if (type == nullptr || !type->is_string() || factor == nullptr || !factor->is_number()) {
    return absl::InvalidArgumentError(StrCat(path, ": \"rope_scaling\" needs a string \"rope_type\" and a \"factor\""));
  }
  const std::string& t = type->string_value();
  if (t == "llama3" && arch.writes_vocab_and_rope_dims) return absl::OkStatus();
  if (t != "linear" && t != "yarn") {
    return absl::UnimplementedError(StrCat(path, ": rope_scaling type \"", t,
                                           "\" is not converted yet (linear, yarn and, for llama, llama3 are)"));
  }
  kv->emplace_back(StrCat(arch.gguf, ".rope.scaling.type"), MetaValue::String(t));
  kv->emplace_back(StrCat(arch.gguf, ".rope.scaling.factor"),
                   MetaValue::Float32(static_cast<float>(factor->double_value())));
  if (const JsonValue* orig = rs->Find("original_max_position_embeddings"); orig != nullptr && !orig->is_null()) {
    BP_ASSIGN_OR_RETURN(MetaValue v, ToMeta(*orig, HfValue::kU32, "rope_scaling.original_max_position_embeddings", path));
    kv->emplace_back(StrCat(arch.gguf, ".rope.scaling.original_context_length"), std::move(v));
  }
  return absl::OkStatus();
}

absl::Status AddHfHparams(const HfArch& arch, const JsonValue& config, const std::string& path,
                          absl::Span<const HfHparam> table, Metadata* kv) {
  for (const HfHparam& h : table) {
    std::string_view field;
    const JsonValue* v = FirstField(config, h.fields, &field);
    if (v == nullptr && h.fallback >= 0) {
      kv->emplace_back(StrCat(arch.gguf, ".", h.key), h.type == HfValue::kF32
                                                          ? MetaValue::Float32(static_cast<float>(h.fallback))
                                                          : MetaValue::Uint(ValueType::kUint32,
                                                                            static_cast<uint64_t>(h.fallback)));
      continue;
    }
    if (v == nullptr) continue;
    BP_ASSIGN_OR_RETURN(MetaValue m, ToMeta(*v, h.type, field, path));
    kv->emplace_back(StrCat(arch.gguf, ".", h.key), std::move(m));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<uint64_t>> ConfigUint(const JsonValue& config, std::string_view field,
                                                    const std::string& path) {
  const JsonValue* v = config.Find(field);
  if (v == nullptr || v->is_null()) return std::optional<uint64_t>();
  std::optional<uint64_t> u = v->is_number() ? v->uint64_value() : std::nullopt;
  if (!u) return absl::InvalidArgumentError(StrCat(path, ": \"", field, "\" is not a non-negative integer"));
  return u;
}

absl::StatusOr<Metadata> HfHyperparameters(const HfArch& arch, const JsonValue& config, const std::string& path) {
  Metadata kv;
  kv.emplace_back("general.architecture", MetaValue::String(std::string(arch.gguf)));
  if (arch.hparams != nullptr) {
    BP_RETURN_IF_ERROR(arch.hparams(arch, config, path, &kv));
    return kv;
  }
  BP_RETURN_IF_ERROR(AddHfHparams(arch, config, path, kDecoderHparams, &kv));
  if (arch.writes_vocab_and_rope_dims) BP_RETURN_IF_ERROR(AddLlamaKeys(arch, config, path, &kv));
  BP_RETURN_IF_ERROR(AddRopeScaling(arch, config, path, &kv));
  return kv;
}

}  // namespace boltpack::io
