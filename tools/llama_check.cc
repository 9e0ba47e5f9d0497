// llama.cpp loadability rules. Sources (ggml-org/llama.cpp):
// src/llama-model-loader.cpp (get_key: exact GGUF type, get_key_or_arr:
// scalar or INT32/UINT32 array of block_count elements, at most 512 layers;
// check_tensor_dims: ne must match, trailing dims 1; done_getting_tensors:
// every tensor in the file must be one the architecture creates),
// src/llama-model.cpp (load_hparams: context_length, embedding_length,
// block_count required; rope.freq_base optional, defaults to 10000;
// load_tensors: per-architecture tensor shapes), src/llama-vocab.cpp
// (tokenizer.ggml.model required; tokens required; scores/token_type read
// for every token; merges required for BPE).
// The `.scale` rules follow the loader of llama.cpp 80fb11ac73e6 (2026-09-12,
// the source node-llama-cpp 3.21.1 ships as llama/gitRelease.bundle):
// llama_model::load_tensors, after load_arch_tensors, creates "<w>.scale" and
// "<w>.input_scale" as optional tensors of ne {1} beside each block matmul
// weight the architecture created (attn_q/k/v/output/qkv/gate, ffn_gate/down/
// up and their _shexp forms, ssm_in/out/alpha/beta, nextn.eh_proj,
// nextn.shared_head_head), {n_expert} beside ffn_{gate,down,up}_exps, and
// "output.scale" only when output.weight is NVFP4; never beside token_embd.
// A tied NVFP4 output (no output.weight) with an output.scale aborts
// (GGML_ASSERT), and build_ffn aborts on an NVFP4 weight with both a scale
// and a bias. No scale is required: an absent one means 1.
#include "tools/llama_check.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "common/escape.h"
#include "common/str_cat.h"

namespace boltpack::tools {
namespace {

constexpr uint64_t kLlamaMaxLayers = 512;  // LLAMA_MAX_LAYERS
constexpr int kGgmlNvfp4 = 40;              // GGML_TYPE_NVFP4

// Block weights ("blk.N.<local>.weight") beside which llama.cpp reads a
// per-tensor scale of ne {1}, and those (experts) that take one per expert.
constexpr std::string_view kScaledBlockWeights[] = {
    "attn_q",         "attn_k",         "attn_v",        "attn_output", "attn_qkv", "attn_gate",
    "ffn_gate",       "ffn_down",       "ffn_up",        "ffn_gate_shexp", "ffn_down_shexp", "ffn_up_shexp",
    "ssm_in",         "ssm_out",        "ssm_alpha",     "ssm_beta",    "nextn.eh_proj", "nextn.shared_head_head",
};
constexpr std::string_view kScaledExpertWeights[] = {"ffn_gate_exps", "ffn_down_exps", "ffn_up_exps"};

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// "blk.0.attn_q.scale" -> "blk.0.attn_q"; nullopt for other names.
std::optional<std::string> ScaleBase(std::string_view name) {
  for (std::string_view suffix : {".input_scale", ".scale"}) {
    if (name.size() > suffix.size() && EndsWith(name, suffix)) {
      return std::string(name.substr(0, name.size() - suffix.size()));
    }
  }
  return std::nullopt;
}

enum class Norm { kRms, kLayer };

// What an architecture's load_hparams requires beyond the common keys.
struct ArchSpec {
  std::string_view name;
  Norm norm;
  bool rope;           // uses RoPE and its converter writes rope.freq_base: a missing one is a warning
  bool ffn_up_double;  // phi3: ffn_up holds gate and up ([n_embd, 2*n_ff])
  bool n_rot_is_head;  // llama, falcon: rope.dimension_count must be n_embd/n_head
  bool complete;       // the tensor table below is complete for this arch
  std::vector<std::pair<std::string_view, ValueType>> required;  // "{arch}." + key
};

std::vector<std::pair<std::string_view, ValueType>> NemotronRequired() {
  return {{"attention.layer_norm_epsilon", ValueType::kFloat32}, {"ssm.conv_kernel", ValueType::kUint32},
          {"ssm.inner_size", ValueType::kUint32},               {"ssm.state_size", ValueType::kUint32},
          {"ssm.time_step_rank", ValueType::kUint32},           {"ssm.group_count", ValueType::kUint32}};
}

const std::vector<ArchSpec>& Archs() {
  static const auto* archs = new std::vector<ArchSpec>{
      {"llama", Norm::kRms, true, false, true, true, {}},
      {"baichuan", Norm::kRms, true, false, false, false, {}},
      {"falcon", Norm::kLayer, true, false, true, false, {}},
      {"gpt2", Norm::kLayer, false, false, false, false, {}},
      {"gptneox", Norm::kLayer, true, false, false, false, {{"use_parallel_residual", ValueType::kBool}}},
      {"mpt", Norm::kLayer, false, false, false, false, {{"attention.max_alibi_bias", ValueType::kFloat32}}},
      {"phi3", Norm::kRms, true, true, false, false, {}},
      {"refact", Norm::kRms, false, false, false, false, {}},
      {"starcoder", Norm::kLayer, false, false, false, false, {}},
      {"starcoder2", Norm::kLayer, true, false, false, false, {}},
      {"bert", Norm::kLayer, false, false, false, false, {}},
      {"qwen2", Norm::kRms, true, false, false, false, {}},
      {"qwen3", Norm::kRms, true, false, false, false, {}},
      // GemmaModel and Gemma2Model write no rope.freq_base: llama.cpp's
      // default 10000 is Gemma's and Gemma 2's.
      {"gemma", Norm::kRms, false, false, false, false, {}},
      {"gemma2", Norm::kRms, false, false, false, false, {}},
      {"gemma3", Norm::kRms, true, false, false, false, {}},
      // Both epsilons: llama.cpp's nemotron_h loader requires the plain one
      // as well as the RMS one. The ssm.* keys size the Mamba-2 tensors.
      {"nemotron_h", Norm::kRms, false, false, false, true, NemotronRequired()},
      {"nemotron_h_moe", Norm::kRms, false, false, false, true, NemotronRequired()},
  };
  return *archs;
}

std::string Quoted(std::string_view s) { return QuoteForDisplay(s, 200); }

std::string Dims(const std::vector<uint64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += StrCat(i ? ", " : "", d[i]);
  return s + "]";
}

// Keys after "{arch}." that llama.cpp reads with get_key, as one number:
// an array (such as the per-layer values a slice with different expert
// counts per layer writes) makes it refuse the file. Per-layer arrays are
// accepted only where it uses get_key_or_arr: feed_forward_length,
// attention.head_count, attention.head_count_kv and expert_used_count for
// every architecture, and expert_feed_forward_length for nemotron_h and
// nemotron_h_moe (llama_model_nemotron_h::load_arch_hparams).
constexpr std::string_view kScalarOnlySuffixes[] = {
    "context_length",       "embedding_length",        "block_count",
    "expert_count",         "expert_feed_forward_length",
    "expert_shared_count",  "expert_shared_feed_forward_length", "expert_group_count",
    "expert_group_used_count", "leading_dense_block_count", "vocab_size",
    "attention.key_length", "attention.value_length",  "rope.dimension_count",
};

// The hybrid Mamba-2 architectures whose layer kinds come from the
// per-layer head_count_kv and feed_forward_length (see NemotronTable).
bool IsNemotronH(std::string_view arch) { return arch == "nemotron_h" || arch == "nemotron_h_moe"; }

// Whether llama.cpp takes "{arch}.<suffix>" as a per-layer array.
bool PerLayerKey(std::string_view arch, std::string_view suffix) {
  if (suffix == "expert_feed_forward_length") return IsNemotronH(arch);
  for (std::string_view s : kScalarOnlySuffixes) {
    if (suffix == s) return false;
  }
  return true;
}

std::string ScalarArrayMessage(const MetaValue& v, ValueType want) {
  return StrCat("is an array of ", v.array_size(), " ", ValueTypeName(v.element_type),
                " (per-layer values?), but llama.cpp reads it as a single ", ValueTypeName(want),
                " (get_key, not get_key_or_arr) and refuses the file (\"wrong type\"); only feed_forward_length, "
                "attention.head_count, attention.head_count_kv, expert_used_count (and for nemotron_h, "
                "nemotron_h_moe expert_feed_forward_length) may be per-layer arrays");
}

// One expected GGUF dimension: a value when the hyperparameters give it.
struct Dim {
  std::optional<uint64_t> value;
  std::string label;
};

class Checker {
 public:
  Checker(const Metadata& kv, const std::vector<LlamaCheckTensor>& tensors) : tensors_(tensors) {
    for (const auto& [k, v] : kv) {
      if (k.rfind("gguf.", 0) == 0 || k.rfind("split.", 0) == 0) continue;  // layout, not model keys
      kv_.emplace(k, &v);
    }
  }

  LlamaCheckResult Run() {
    result_.architecture = "";
    auto arch = Str("general.architecture", true, "llama.cpp fails with \"unknown model architecture\"");
    if (arch) result_.architecture = *arch;
    for (const auto& a : Archs()) {
      if (arch && a.name == *arch) spec_ = &a;
    }
    result_.known_architecture = spec_ != nullptr;
    if (arch && spec_ == nullptr) {
      std::string known;
      for (const auto& a : Archs()) known += StrCat(known.empty() ? "" : ", ", a.name);
      Warn("general.architecture", "",
           StrCat("architecture ", Quoted(*arch), " has no specific rules here (known: ", known,
                  "); only the keys every architecture needs are checked, and llama.cpp refuses the file if it "
                  "does not know the architecture either"));
    }
    Str("general.name", false);
    U32("general.file_type", false);
    U32("general.quantization_version", false);
    if (arch) Hparams(*arch);
    Vocab();
    Tensors();
    return std::move(result_);
  }

 private:
  void Add(LlamaProblem::Severity sev, std::string key, std::string tensor, std::string message) {
    result_.problems.push_back({sev, std::move(key), std::move(tensor), std::move(message)});
  }
  void Error(std::string key, std::string tensor, std::string message) {
    Add(LlamaProblem::Severity::kError, std::move(key), std::move(tensor), std::move(message));
  }
  void Warn(std::string key, std::string tensor, std::string message) {
    Add(LlamaProblem::Severity::kWarning, std::move(key), std::move(tensor), std::move(message));
  }

  const MetaValue* Get(const std::string& key) const {
    auto it = kv_.find(key);
    return it == kv_.end() ? nullptr : it->second;
  }

  // The value of `key` when present with type `want`; records a problem
  // when it is missing (and required) or has another type.
  const MetaValue* Typed(const std::string& key, ValueType want, bool required, std::string_view why = "") {
    const MetaValue* v = Get(key);
    if (v == nullptr) {
      if (required) {
        Error(key, "", StrCat("missing (", why.empty() ? "llama.cpp fails with \"key not found in model\"" : why, ")"));
      }
      return nullptr;
    }
    if (v->type != want) {
      if (v->type == ValueType::kArray && want != ValueType::kArray) {
        Error(key, "", ScalarArrayMessage(*v, want));
      } else {
        Error(key, "", StrCat("has type ", ValueTypeName(v->type), "; llama.cpp reads it as ", ValueTypeName(want),
                              " and fails with \"wrong type\""));
      }
      return nullptr;
    }
    return v;
  }
  std::optional<uint64_t> U32(const std::string& key, bool required, std::string_view why = "") {
    const MetaValue* v = Typed(key, ValueType::kUint32, required, why);
    return v ? std::optional<uint64_t>(v->u) : std::nullopt;
  }
  std::optional<float> F32(const std::string& key, bool required) {
    const MetaValue* v = Typed(key, ValueType::kFloat32, required);
    return v ? std::optional<float>(v->f32) : std::nullopt;
  }
  std::optional<std::string> Str(const std::string& key, bool required, std::string_view why = "") {
    const MetaValue* v = Typed(key, ValueType::kString, required, why);
    return v ? std::optional<std::string>(v->s) : std::nullopt;
  }
  void Bool(const std::string& key, bool required) { Typed(key, ValueType::kBool, required); }

  // A UINT32 scalar or an INT32/UINT32 array of n_layer elements
  // (get_key_or_arr). Empty when absent or unusable.
  std::vector<uint64_t> PerLayer(const std::string& key, std::optional<uint64_t> n_layer, bool required) {
    const MetaValue* v = Get(key);
    if (v == nullptr) {
      if (required) Error(key, "", "missing (llama.cpp then has no value for it)");
      return {};
    }
    uint64_t n = n_layer.value_or(0);
    if (v->type == ValueType::kArray) {
      if (v->element_type != ValueType::kInt32 && v->element_type != ValueType::kUint32) {
        Error(key, "", StrCat("is an array of ", ValueTypeName(v->element_type),
                              "; llama.cpp takes a UINT32 or an array of INT32/UINT32 (one per layer)"));
        return {};
      }
      if (!n_layer) return {};
      if (v->array_size() != n) {
        Error(key, "", StrCat("is an array of ", v->array_size(), " elements but block_count is ", n,
                              " (llama.cpp: \"wrong array length\")"));
        return {};
      }
      std::vector<uint64_t> out;
      const bool is_signed = v->element_type == ValueType::kInt32;
      for (size_t k = 0; k < n; ++k) {
        if (is_signed && v->int_element(k) < 0) {
          Error(key, "", StrCat("has a negative element ", v->int_element(k)));
          return {};
        }
        out.push_back(v->uint_element(k));
      }
      return out;
    }
    if (v->type != ValueType::kUint32) {
      Error(key, "", StrCat("has type ", ValueTypeName(v->type),
                            "; llama.cpp takes a UINT32 or an array of INT32/UINT32 (one per layer)"));
      return {};
    }
    if (!n_layer) return {};
    return std::vector<uint64_t>(n, v->u);
  }

  std::string K(std::string_view suffix) const { return StrCat(arch_, ".", suffix); }

  void Hparams(const std::string& arch) {
    arch_ = arch;
    nemotron_ = spec_ != nullptr && IsNemotronH(arch);
    n_ctx_ = U32(K("context_length"), true);
    n_embd_ = U32(K("embedding_length"), true);
    n_layer_ = U32(K("block_count"), true);
    if (n_layer_ && *n_layer_ > kLlamaMaxLayers) {
      Error(K("block_count"), "", StrCat("is ", *n_layer_, "; llama.cpp supports at most ", kLlamaMaxLayers, " layers"));
      n_layer_.reset();
    }
    // Attention-free architectures may omit head_count; every one listed has it.
    n_ff_ = PerLayer(K("feed_forward_length"), n_layer_, spec_ != nullptr);
    ExpertHparams();
    HeadHparams();
    RopeHparams();
    n_vocab_key_ = U32(K("vocab_size"), false);
    // Scalar-only keys this checker does not read above: an array is still
    // fatal to llama.cpp wherever it reads the key.
    for (std::string_view suffix : {"expert_shared_count", "expert_shared_feed_forward_length", "expert_group_count",
                                    "expert_group_used_count", "leading_dense_block_count"}) {
      const MetaValue* v = Get(K(suffix));
      if (v != nullptr && v->type == ValueType::kArray) Error(K(suffix), "", ScalarArrayMessage(*v, ValueType::kUint32));
    }
    if (spec_ != nullptr) {
      if (spec_->norm == Norm::kRms) F32(K("attention.layer_norm_rms_epsilon"), true);
      else F32(K("attention.layer_norm_epsilon"), true);
      for (const auto& [suffix, type] : spec_->required) Typed(K(suffix), type, true);
    } else {
      F32(K("attention.layer_norm_rms_epsilon"), false);
      F32(K("attention.layer_norm_epsilon"), false);
    }
    if (nemotron_) NemotronHparams();
  }

  // expert_count is one number (get_key); expert_used_count may be one per
  // layer in every architecture (get_key_or_arr), expert_feed_forward_length
  // only in nemotron_h and nemotron_h_moe.
  void ExpertHparams() {
    n_expert_ = U32(K("expert_count"), false);
    n_expert_used_ = PerLayer(K("expert_used_count"), n_layer_, false);
    if (nemotron_) {
      n_ff_exp_ = PerLayer(K("expert_feed_forward_length"), n_layer_, false);
    } else if (auto v = U32(K("expert_feed_forward_length"), false)) {
      n_ff_exp_.assign(n_layer_.value_or(0), *v);
    }
    const uint64_t ne = n_expert_.value_or(0);
    const bool per_layer = Get(K("expert_used_count")) && Get(K("expert_used_count"))->type == ValueType::kArray;
    for (size_t i = 0; i < n_expert_used_.size(); ++i) {
      if (n_expert_used_[i] > ne) {
        Error(K("expert_used_count"), "", StrCat(per_layer ? StrCat("layer ", i, ": ") : "", "is ", n_expert_used_[i],
                                                 " but expert_count is ", ne, " (llama.cpp aborts)"));
        return;
      }
    }
    const bool any_used =
        std::any_of(n_expert_used_.begin(), n_expert_used_.end(), [](uint64_t n) { return n > 0; });
    if (ne > 0 && !any_used && n_layer_) {  // without block_count: reported
      Error(K("expert_used_count"), "", StrCat("is missing or 0 while expert_count is ", ne, " (llama.cpp aborts)"));
    }
  }

  void HeadHparams() {
    n_head_ = PerLayer(K("attention.head_count"), n_layer_, spec_ != nullptr);
    if (Get(K("attention.head_count_kv")) != nullptr) {
      n_head_kv_ = PerLayer(K("attention.head_count_kv"), n_layer_, false);
    } else {
      n_head_kv_ = n_head_;  // llama.cpp's default
    }
    CheckHeadRatios();
    uint64_t n_head0 = n_head_.empty() ? 0 : n_head_[0];
    head_k_ = U32(K("attention.key_length"), false);
    head_v_ = U32(K("attention.value_length"), false);
    // load_hparams derives the head size (n_embd/head_count, or the
    // key_length/value_length keys) only when layer 0 has heads; otherwise
    // it is 0, and the attention tensors of later layers get a 0 dimension
    // (GGML_ASSERT(t_meta.ne[dim] >= 1) aborts the load).
    if (n_head0 == 0 && std::any_of(n_head_.begin(), n_head_.end(), [](uint64_t n) { return n > 0; })) {
      Error(K("attention.head_count"), "",
            "layer 0 has 0 heads while later layers have heads: llama.cpp derives the head size (n_embd/head_count, "
            "attention.key_length) only from layer 0, so it is 0 and the load aborts (GGML_ASSERT(t_meta.ne[dim] >= "
            "1)); give layer 0 a nonzero head_count (any layer's count, it is used only for the head size)");
      head_k_.reset();
      head_v_.reset();
    }
    if (n_head0 > 0 && n_embd_) {
      if (!head_k_) head_k_ = *n_embd_ / n_head0;
      if (!head_v_) head_v_ = *n_embd_ / n_head0;
      if (*n_embd_ % n_head0 != 0 && Get(K("attention.key_length")) == nullptr) {
        Error(K("attention.head_count"), "", StrCat(n_head0, " does not divide embedding_length ", *n_embd_,
                                                    " and attention.key_length is absent"));
      }
    }
  }

  // Each layer's head_count a multiple of its head_count_kv. head_count_kv
  // 0 means no attention (n_gqa is 0 there): in nemotron_h that is how the
  // Mamba-2 and MoE layers are marked, and other hybrid architectures
  // without rules here (granitehybrid, jamba, ...) do the same; in the
  // attention-only architectures listed, heads need KV heads.
  void CheckHeadRatios() {
    const bool kv_zero_ok = spec_ == nullptr || nemotron_;
    for (size_t i = 0; i < n_head_.size() && i < n_head_kv_.size(); ++i) {
      const uint64_t h = n_head_[i], kv = n_head_kv_[i];
      if (kv == 0 ? (h != 0 && !kv_zero_ok) : h % kv != 0) {
        Error(K("attention.head_count_kv"), "", StrCat("layer ", i, ": head_count ", h,
                                                       " is not a multiple of head_count_kv ", kv));
        return;
      }
      if (nemotron_ && kv > 0 && h == 0 && At(n_ff_, i) == std::optional<uint64_t>(0)) {
        Error(K("attention.head_count"), "", StrCat("layer ", i, " is an attention layer (head_count_kv ", kv,
                                                    ", feed_forward_length 0) with head_count 0: its attn_q and "
                                                    "attn_output get a 0 dimension and llama.cpp aborts"));
        return;
      }
    }
  }

  void RopeHparams() {
    n_rot_ = U32(K("rope.dimension_count"), false);
    if (!n_rot_) n_rot_ = head_k_;
    if (spec_ != nullptr && spec_->n_rot_is_head && n_rot_ && head_k_ && *n_rot_ != *head_k_) {
      Error(K("rope.dimension_count"), "", StrCat("is ", *n_rot_, " but the head size is ", *head_k_,
                                                  " (llama.cpp: \"invalid n_rot\")"));
    }
    // The silent default: llama.cpp uses 10000 when the key is absent.
    const MetaValue* fb = Get(K("rope.freq_base"));
    if (fb == nullptr) {
      if (spec_ != nullptr && spec_->rope) {
        Warn(K("rope.freq_base"), "",
             "missing: llama.cpp silently uses 10000.0; a model trained with another RoPE base (Llama 3: 500000, "
             "Qwen2: 1000000, ...) then loads without complaint and produces wrong output; add the key with the "
             "model's value");
      }
    } else if (auto v = F32(K("rope.freq_base"), false); v && !(std::isfinite(*v) && *v > 0)) {
      Error(K("rope.freq_base"), "", StrCat("is ", *v, "; must be a positive finite FLOAT32"));
    }
    if (auto st = Str(K("rope.scaling.type"), false)) {
      if (*st != "none" && *st != "linear" && *st != "yarn" && *st != "longrope") {
        Error(K("rope.scaling.type"), "", StrCat("is ", Quoted(*st),
                                                 "; llama.cpp knows none, linear, yarn, longrope (and aborts otherwise)"));
      }
    }
    F32(K("rope.scaling.factor"), false);
    F32(K("rope.scale_linear"), false);
    U32(K("rope.scaling.original_context_length"), false);
    Bool(K("rope.scaling.finetuned"), false);
  }

  // A UINT32 value without recording a problem (already judged elsewhere).
  std::optional<uint64_t> QuietU32(std::string_view suffix) const {
    const MetaValue* v = Get(K(suffix));
    return v && v->type == ValueType::kUint32 ? std::optional<uint64_t>(v->u) : std::nullopt;
  }

  // The Mamba-2 and MoE sizes nemotron_h's tensor shapes use (the ssm.*
  // keys are required: ArchSpec; their types are checked there).
  void NemotronHparams() {
    d_conv_ = QuietU32("ssm.conv_kernel");
    d_inner_ = QuietU32("ssm.inner_size");
    d_state_ = QuietU32("ssm.state_size");
    n_ssm_head_ = QuietU32("ssm.time_step_rank");
    n_group_ = QuietU32("ssm.group_count");
    n_ff_shexp_ = QuietU32("expert_shared_feed_forward_length");
    moe_latent_ = U32(K("moe_latent_size"), false);
    nextn_ = U32(K("nextn_predict_layers"), false);
    if (n_group_ && *n_group_ == 0) {
      Error(K("ssm.group_count"), "", "is 0; llama.cpp divides ssm.inner_size by it (ssm_norm {d_inner/n_group, "
                                      "n_group})");
      n_group_.reset();
    }
  }

  void Vocab() {
    auto model = Str("tokenizer.ggml.model", true, "llama.cpp reads the tokenizer type from it");
    Str("tokenizer.ggml.pre", false);
    Str("tokenizer.chat_template", false);
    U32("tokenizer.ggml.token_type_count", false);
    for (const char* b : {"add_bos_token", "add_eos_token", "add_space_prefix", "remove_extra_whitespaces"}) {
      Bool(StrCat("tokenizer.ggml.", b), false);
    }
    bool no_vocab = model && (*model == "no_vocab" || *model == "none");
    if (model && !no_vocab && *model != "llama" && *model != "bert" && *model != "gpt2" && *model != "t5" &&
        *model != "rwkv" && *model != "plamo2") {
      Error("tokenizer.ggml.model", "", StrCat("is ", Quoted(*model),
                                               "; llama.cpp knows llama, gpt2, bert, t5, rwkv, plamo2, none, no_vocab"));
    }
    if (no_vocab) {
      n_vocab_ = n_vocab_key_;
      return;
    }
    const MetaValue* tokens = Get("tokenizer.ggml.tokens");
    if (tokens == nullptr) {
      Error("tokenizer.ggml.tokens", "", "missing (llama.cpp: \"cannot find tokenizer vocab in model file\")");
    } else if (tokens->type != ValueType::kArray || tokens->element_type != ValueType::kString) {
      Error("tokenizer.ggml.tokens", "", "must be an array of STRING");
    } else if (tokens->array_size() == 0) {
      Error("tokenizer.ggml.tokens", "", "is empty");
    } else {
      n_vocab_ = tokens->array_size();
    }
    // llama.cpp reads scores[i] and token_type[i] for every token: a shorter
    // array is an out-of-bounds read, another element type is misread.
    auto parallel = [&](const char* key, ValueType element) {
      const MetaValue* v = Get(key);
      if (v == nullptr) return;
      if (v->type != ValueType::kArray || v->element_type != element) {
        Error(key, "", StrCat("must be an array of ", ValueTypeName(element), " (llama.cpp reinterprets its bytes)"));
      } else if (n_vocab_ && v->array_size() != *n_vocab_) {
        Error(key, "", StrCat("has ", v->array_size(), " elements but tokenizer.ggml.tokens has ", *n_vocab_,
                              " (llama.cpp reads one per token)"));
      }
    };
    parallel("tokenizer.ggml.scores", ValueType::kFloat32);
    parallel("tokenizer.ggml.token_type", ValueType::kInt32);
    if (model && *model == "gpt2") {
      const MetaValue* merges = Get("tokenizer.ggml.merges");
      if (merges == nullptr) {
        Error("tokenizer.ggml.merges", "", "missing for a BPE (gpt2) tokenizer (llama.cpp: \"cannot find tokenizer "
                                           "merges in model file\")");
      } else if (merges->type != ValueType::kArray || merges->element_type != ValueType::kString) {
        Error("tokenizer.ggml.merges", "", "must be an array of STRING");
      }
      if (Get("tokenizer.ggml.pre") == nullptr) {
        Warn("tokenizer.ggml.pre", "", "missing for a BPE tokenizer: llama.cpp falls back to the 'default' "
                                       "pre-tokenizer, which splits text differently from most models");
      }
    }
    for (const char* id : {"bos", "eos", "eot", "eom", "unknown", "seperator", "padding", "cls", "mask", "prefix",
                           "suffix", "middle", "fim_pre", "fim_suf", "fim_mid", "fim_pad", "fim_rep", "fim_sep"}) {
      std::string key = StrCat("tokenizer.ggml.", id, "_token_id");
      auto v = U32(key, false);
      if (v && n_vocab_ && *v >= *n_vocab_) {
        Warn(key, "", StrCat("is ", *v, ", outside the ", *n_vocab_, " tokens (llama.cpp ignores it and uses a default)"));
      }
    }
    if (n_vocab_ && n_vocab_key_ && *n_vocab_key_ != *n_vocab_) {
      Warn(K("vocab_size"), "", StrCat("is ", *n_vocab_key_, " but tokenizer.ggml.tokens has ", *n_vocab_,
                                       " (llama.cpp sizes the embeddings by the tokens)"));
    }
  }

  Dim Ff(size_t layer) const { return {layer < n_ff_.size() ? std::optional(n_ff_[layer]) : std::nullopt, "n_ff"}; }
  Dim Mul(std::optional<uint64_t> a, std::optional<uint64_t> b, std::string label) const {
    return {a && b ? std::optional(*a * *b) : std::nullopt, std::move(label)};
  }
  std::optional<uint64_t> At(const std::vector<uint64_t>& v, size_t i) const {
    return i < v.size() ? std::optional(v[i]) : std::nullopt;
  }

  // The GGUF ne llama.cpp expects for `name`, or nullopt when no rule applies.
  std::optional<std::vector<Dim>> Expected(const std::string& name, std::optional<size_t> layer,
                                           const std::string& local) const {
    Dim embd{n_embd_, "n_embd"}, vocab{n_vocab_, "n_vocab"};
    if (!layer) {
      if (name == "token_embd.weight" || name == "output.weight") return std::vector<Dim>{embd, vocab};
      if (name == "output_norm.weight" || name == "output_norm.bias") return std::vector<Dim>{embd};
      if (spec_ == nullptr) return std::nullopt;
      if (name == "token_embd_norm.weight" || name == "token_embd_norm.bias") return std::vector<Dim>{embd};
      if (name == "position_embd.weight") return std::vector<Dim>{embd, {n_ctx_, "n_ctx_train"}};
      if (name == "rope_freqs.weight") {
        return std::vector<Dim>{{n_rot_ ? std::optional(*n_rot_ / 2) : std::nullopt, "n_rot/2"}};
      }
      return std::nullopt;
    }
    if (spec_ == nullptr) return std::nullopt;
    size_t i = *layer;
    if (nemotron_) {
      if (auto want = NemotronSsmExpected(local)) return want;
      if (auto want = NemotronFfnExpected(local, i)) return want;
    }
    auto nh = At(n_head_, i), nkv = At(n_head_kv_, i);
    Dim q = Mul(head_k_, nh, "n_embd_head_k*n_head"), k = Mul(head_k_, nkv, "n_embd_head_k*n_head_kv"),
        v = Mul(head_v_, nkv, "n_embd_head_v*n_head_kv"), o = Mul(head_v_, nh, "n_embd_head_v*n_head");
    Dim ff = Ff(i);
    auto fe = At(n_ff_exp_, i);
    Dim ff_exp{fe ? fe : ff.value, fe ? "n_ff_exp" : "n_ff"};
    Dim experts{n_expert_, "n_expert"};
    if (local == "attn_norm.weight" || local == "attn_norm.bias" || local == "ffn_norm.weight" ||
        local == "ffn_norm.bias" || local == "attn_output_norm.weight" || local == "attn_output_norm.bias" ||
        local == "layer_output_norm.weight" || local == "layer_output_norm.bias" || local == "attn_output.bias" ||
        local == "ffn_down.bias") {
      return std::vector<Dim>{embd};
    }
    if (local == "attn_q.weight") return std::vector<Dim>{embd, q};
    if (local == "attn_k.weight") return std::vector<Dim>{embd, k};
    if (local == "attn_v.weight") return std::vector<Dim>{embd, v};
    if (local == "attn_q.bias") return std::vector<Dim>{q};
    if (local == "attn_k.bias") return std::vector<Dim>{k};
    if (local == "attn_v.bias") return std::vector<Dim>{v};
    if (local == "attn_output.weight") return std::vector<Dim>{o, embd};
    if (local == "attn_qkv.weight" || local == "attn_qkv.bias") {
      Dim qkv{q.value && k.value && v.value ? std::optional(*q.value + *k.value + *v.value) : std::nullopt,
              "n_embd_head_k*n_head + 2*n_embd_gqa"};
      if (local == "attn_qkv.bias") return std::vector<Dim>{qkv};
      return std::vector<Dim>{embd, qkv};
    }
    if (local == "ffn_up.weight" && spec_->ffn_up_double) {
      return std::vector<Dim>{embd, {ff.value ? std::optional(*ff.value * 2) : std::nullopt, "2*n_ff"}};
    }
    if (local == "ffn_up.weight" || local == "ffn_gate.weight") return std::vector<Dim>{embd, ff};
    if (local == "ffn_up.bias" || local == "ffn_gate.bias") return std::vector<Dim>{ff};
    if (local == "ffn_down.weight") return std::vector<Dim>{ff, embd};
    if (local == "ffn_gate_inp.weight") return std::vector<Dim>{embd, experts};
    if (local == "ffn_gate_exps.weight" || local == "ffn_up_exps.weight") return std::vector<Dim>{embd, ff_exp, experts};
    if (local == "ffn_down_exps.weight") return std::vector<Dim>{ff_exp, embd, experts};
    return std::nullopt;
  }

  // llama_model_nemotron_h::load_arch_tensors, Mamba-2 layers. ssm_a and
  // ssm_d have no ".weight" suffix.
  std::optional<std::vector<Dim>> NemotronSsmExpected(const std::string& local) const {
    std::optional<uint64_t> conv, in_proj, group_width;
    if (d_inner_ && n_group_ && d_state_) conv = *d_inner_ + 2 * *n_group_ * *d_state_;
    if (conv && n_ssm_head_) in_proj = *conv + *d_inner_ + *n_ssm_head_;
    if (d_inner_ && n_group_) group_width = *d_inner_ / *n_group_;
    Dim embd{n_embd_, "n_embd"}, heads{n_ssm_head_, "n_ssm_head"}, conv_dim{conv, "d_inner+2*n_group*d_state"};
    using V = std::vector<Dim>;
    if (local == "ssm_in.weight") return V{embd, {in_proj, "2*d_inner+2*n_group*d_state+n_ssm_head"}};
    if (local == "ssm_conv1d.weight") return V{{d_conv_, "d_conv"}, conv_dim};
    if (local == "ssm_conv1d.bias") return V{conv_dim};
    if (local == "ssm_dt.bias") return V{heads};
    if (local == "ssm_a" || local == "ssm_d") return V{{1, "1"}, heads};
    if (local == "ssm_norm.weight") return V{{group_width, "d_inner/n_group"}, {n_group_, "n_group"}};
    if (local == "ssm_out.weight") return V{{d_inner_, "d_inner"}, embd};
    return std::nullopt;
  }

  // Its MoE layers (routed experts without a gate, over the latent width
  // when moe_latent_size is set; the shared expert over n_embd) and its
  // attention output (head_k wide, not head_v).
  std::optional<std::vector<Dim>> NemotronFfnExpected(const std::string& local, size_t i) const {
    Dim embd{n_embd_, "n_embd"}, experts{n_expert_, "n_expert"}, shexp{n_ff_shexp_, "n_ff_shexp"};
    Dim moe_embd = moe_latent_.value_or(0) > 0 ? Dim{moe_latent_, "moe_latent_size"} : embd;
    // A per-layer expert width, else n_ff/n_expert_used of the layer.
    auto fe = At(n_ff_exp_, i), ff = At(n_ff_, i), nu = At(n_expert_used_, i);
    Dim ff_exp = fe.value_or(0) > 0 ? Dim{fe, "n_ff_exp"}
                                    : Dim{ff && nu.value_or(0) > 0 ? std::optional(*ff / *nu) : std::nullopt,
                                          "n_ff/n_expert_used"};
    using V = std::vector<Dim>;
    if (local == "exp_probs_b.bias") return V{experts};
    if (local == "ffn_latent_down.weight") return V{embd, moe_embd};
    if (local == "ffn_latent_up.weight") return V{moe_embd, embd};
    if (local == "ffn_up_exps.weight") return V{moe_embd, ff_exp, experts};
    if (local == "ffn_down_exps.weight") return V{ff_exp, moe_embd, experts};
    if (local == "ffn_up_shexp.weight") return V{embd, shexp};
    if (local == "ffn_down_shexp.weight") return V{shexp, embd};
    if (local == "attn_output.weight") return V{Mul(head_k_, At(n_head_, i), "n_embd_head_k*n_head"), embd};
    return std::nullopt;
  }

  void CheckShape(const LlamaCheckTensor& t, const std::vector<Dim>& want) {
    std::vector<uint64_t> ne(t.shape.rbegin(), t.shape.rend());
    size_t n = std::max(ne.size(), want.size());
    bool ok = true;
    for (size_t d = 0; d < n && ok; ++d) {
      uint64_t have = d < ne.size() ? ne[d] : 1;
      if (d >= want.size()) ok = have == 1;  // check_tensor_dims: trailing dims must be 1
      else if (want[d].value) ok = have == *want[d].value;
    }
    if (ok) return;
    std::string exp_ne = "[", exp_shape;
    std::vector<std::string> parts;
    for (const auto& w : want) parts.push_back(w.value ? StrCat(w.label, "=", *w.value) : StrCat(w.label, "=?"));
    for (size_t d = 0; d < parts.size(); ++d) exp_ne += StrCat(d ? ", " : "", parts[d]);
    exp_ne += "]";
    exp_shape = "[";
    for (size_t d = parts.size(); d-- > 0;) exp_shape += StrCat(d + 1 < parts.size() ? ", " : "", parts[d]);
    exp_shape += "]";
    Error("", t.name, StrCat("shape ", Dims(t.shape), " (GGUF ne ", Dims(ne), ") but llama.cpp expects ne ", exp_ne,
                             ", i.e. shape ", exp_shape, " (\"tensor has wrong shape\")"));
  }

  // blk.N.rest -> N; nullopt for names outside blocks (or N out of range).
  static std::optional<size_t> BlockOf(const std::string& name, std::string* local) {
    if (name.rfind("blk.", 0) != 0) return std::nullopt;
    size_t dot = name.find('.', 4);
    if (dot == std::string::npos || dot == 4 || dot - 4 > 9) return std::nullopt;
    size_t n = 0;
    for (size_t i = 4; i < dot; ++i) {
      if (name[i] < '0' || name[i] > '9') return std::nullopt;
      n = n * 10 + static_cast<size_t>(name[i] - '0');
    }
    *local = name.substr(dot + 1);
    return n;
  }

  void Tensors() {
    if (tensors_.empty()) {
      Warn("", "", "the file has no tensors: llama.cpp can load only its vocabulary (vocab_only)");
      return;
    }
    std::set<std::string> names;
    bool quantized = false;
    size_t max_block = 0;
    bool any_block = false;
    std::vector<bool> layer_seen(n_layer_.value_or(0), false);
    for (const auto& t : tensors_) {
      names.insert(t.name);
      quantized |= t.quantized;
      if (!t.type_problem.empty()) Error("", t.name, t.type_problem);
      if (t.quantized && t.shape.size() < 2) {
        // ggml's CPU kernels take norm weights and biases in float only.
        Error("", t.name, "is a quantized 1-D tensor; llama.cpp aborts on it at run time (binary_op: unsupported "
                          "types); llama-quantize keeps 1-D tensors in F32");
      }
      std::string local;
      auto layer = BlockOf(t.name, &local);
      if (layer) {
        any_block = true;
        max_block = std::max(max_block, *layer);
        if (n_layer_ && *layer >= *n_layer_) {
          Error("", t.name, StrCat("is in block ", *layer, " but ", K("block_count"), " is ", *n_layer_,
                                   "; llama.cpp never loads it and fails with \"wrong number of tensors\""));
          continue;
        }
        if (*layer < layer_seen.size()) layer_seen[*layer] = true;
      }
      if (auto want = Expected(t.name, layer, local)) CheckShape(t, *want);
    }
    if (quantized && Get("general.quantization_version") == nullptr) {
      Warn("general.quantization_version", "", "missing although tensors are quantized (gguf-py writes 2)");
    }
    if (n_layer_ && any_block) {
      std::vector<size_t> empty;
      for (size_t i = 0; i < layer_seen.size(); ++i) {
        if (!layer_seen[i]) empty.push_back(i);
      }
      if (!empty.empty()) {
        Error(K("block_count"), "", StrCat("is ", *n_layer_, " but ", empty.size(), " of those blocks have no tensors "
                                           "(first: blk.", empty[0], "; the file's highest block is blk.", max_block,
                                           ")"));
      }
    }
    if (n_layer_ && !any_block && *n_layer_ > 0) {
      Error(K("block_count"), "", StrCat("is ", *n_layer_, " but no tensor is named blk.N.*"));
    }
    if (!names.count("token_embd.weight") && spec_ != nullptr) {
      Error("", "token_embd.weight", "missing (llama.cpp: \"missing tensor\")");
    }
    Scales();
    if (nemotron_) NemotronTable(names);
    else if (spec_ != nullptr && spec_->complete) LlamaTable(names);
  }

  static std::vector<uint64_t> Ne(const LlamaCheckTensor& t) { return {t.shape.rbegin(), t.shape.rend()}; }

  // Every "<base>.scale" / "<base>.input_scale": one llama.cpp reads (see
  // the top of this file), of the ne it expects; and NVFP4 weights whose
  // scale looks lost.
  void Scales() {
    std::map<std::string, const LlamaCheckTensor*> by_name;
    for (const auto& t : tensors_) by_name.emplace(t.name, &t);
    const bool complete = spec_ != nullptr && spec_->complete;
    for (const auto& t : tensors_) {
      auto base = ScaleBase(t.name);
      if (!base) continue;
      const std::string weight_name = *base + ".weight";
      auto it = by_name.find(weight_name);
      const LlamaCheckTensor* weight = it == by_name.end() ? nullptr : it->second;
      if (weight == nullptr) {
        ScaleWithoutWeight(t, weight_name, by_name);
        continue;
      }
      auto want = LlamaScaleNe(weight_name, Ne(*weight));
      if (!want) {
        // Other architectures may read scales of their own beside other
        // weights; the embedding and 1-D tensors never take one.
        if (complete || weight_name == "token_embd.weight" || weight->shape.size() < 2) {
          Error("", t.name, StrCat("llama.cpp reads no scale beside ", Quoted(weight_name),
                                   " (only beside block matmul weights and an NVFP4 output.weight), so it never "
                                   "loads this tensor and fails with \"wrong number of tensors\"",
                                   weight_name == "token_embd.weight"
                                       ? "; an embedding needs a type without a tensor scale (F16, Q8_0, ...)"
                                       : ""));
        }
        continue;
      }
      if (weight_name == "output.weight" && weight->ggml_type != kGgmlNvfp4) {
        Error("", t.name, "llama.cpp reads output's scale only when output.weight is NVFP4, so it never loads this "
                          "tensor and fails with \"wrong number of tensors\"");
        continue;
      }
      if (Ne(t) != *want) {
        Error("", t.name, StrCat("GGUF ne ", Dims(Ne(t)), " but llama.cpp expects ne ", Dims(*want), " beside ",
                                 Quoted(weight_name), " (\"tensor has wrong shape\")"));
      }
      if (weight->ggml_type == kGgmlNvfp4 && EndsWith(t.name, ".scale") && FfnWeight(weight_name) &&
          by_name.count(*base + ".bias")) {
        Error("", t.name, StrCat(Quoted(weight_name), " is NVFP4 with both a scale and a bias; llama.cpp aborts "
                                 "building the graph (build_ffn: GGML_ASSERT, the scale would apply after the bias)"));
      }
    }
    LostScales(by_name);
  }

  static bool FfnWeight(const std::string& weight_name) {
    std::string local;
    if (!BlockOf(weight_name, &local)) return false;
    for (std::string_view w : {"ffn_gate", "ffn_down", "ffn_up", "ffn_gate_shexp", "ffn_down_shexp", "ffn_up_shexp"}) {
      if (local == StrCat(w, ".weight")) return true;
    }
    return false;
  }

  void ScaleWithoutWeight(const LlamaCheckTensor& t, const std::string& weight_name,
                          const std::map<std::string, const LlamaCheckTensor*>& by_name) {
    if (weight_name == "output.weight") {
      auto embd = by_name.find("token_embd.weight");
      if (embd != by_name.end() && embd->second->ggml_type == kGgmlNvfp4) {
        Error("", t.name, "the output is tied to an NVFP4 token_embd.weight (no output.weight): llama.cpp reads "
                          "this scale for it and then aborts (GGML_ASSERT: a tied NVFP4 output takes no scale)");
        return;
      }
    }
    Error("", t.name, StrCat("is a scale without its weight ", Quoted(weight_name),
                             "; llama.cpp never loads it and fails with \"wrong number of tensors\""));
  }

  // llama.cpp requires no scale (absent means 1), so a missing one cannot
  // make it refuse the file; but NVFP4 weights without one beside others
  // that have one most likely lost theirs, and compute with a wrong scale.
  void LostScales(const std::map<std::string, const LlamaCheckTensor*>& by_name) {
    std::vector<std::string> without;
    size_t with = 0;
    for (const auto& t : tensors_) {
      if (t.ggml_type != kGgmlNvfp4 || !EndsWith(t.name, ".weight")) continue;
      if (!LlamaScaleNe(t.name, Ne(t))) continue;
      std::string scale = t.name.substr(0, t.name.size() - 7) + ".scale";
      if (by_name.count(scale)) ++with;
      else without.push_back(std::move(scale));
    }
    if (with == 0 || without.empty()) return;
    Warn("", without[0], StrCat("missing, while ", with, " other NVFP4 weight", with == 1 ? " has" : "s have",
                                " a scale (", without.size(), " without one); llama.cpp does not require it and uses "
                                "1, which is wrong if it was lost"));
  }

  // The tensors an architecture's load_tensors creates: the required ones
  // must exist, and no other may (done_getting_tensors counts them).
  struct TensorTable {
    const std::set<std::string>& names;
    std::set<std::string> allowed;
    // Missing per-layer tensors: one entry per tensor kind, with its blocks.
    std::vector<std::pair<std::string, std::vector<uint64_t>>> missing;

    void Allow(uint64_t layer, std::string_view local) { allowed.insert(StrCat("blk.", layer, ".", local)); }
    void Need(uint64_t layer, std::string_view local) {
      std::string n = StrCat("blk.", layer, ".", local);
      allowed.insert(n);
      if (names.count(n)) return;
      auto it = std::find_if(missing.begin(), missing.end(), [&](const auto& m) { return m.first == local; });
      if (it == missing.end()) it = missing.insert(missing.end(), {std::string(local), {}});
      it->second.push_back(layer);
    }
  };

  TensorTable GlobalTable(const std::set<std::string>& names) const {
    TensorTable table{names, {"token_embd.weight", "output_norm.weight", "output.weight"}, {}};
    return table;
  }

  // Reports what `table` finds missing or extra; `what(layer)` says what
  // an extra tensor is not ("llama.cpp's ... creates", with the block's kind).
  void ReportTable(const TensorTable& table, const std::function<std::string(std::optional<size_t>)>& what) {
    if (!table.names.count("output_norm.weight")) {
      Error("", "output_norm.weight", "missing (llama.cpp: \"missing tensor\")");
    }
    const uint64_t layers = n_layer_.value_or(0);
    for (const auto& [local, blocks] : table.missing) {
      std::string list;
      for (size_t j = 0; j < blocks.size() && j < 8; ++j) list += StrCat(j ? ", " : "", blocks[j]);
      if (blocks.size() > 8) list += ", ...";
      Error("", StrCat("blk.", blocks[0], ".", local),
            StrCat("missing (llama.cpp: \"missing tensor\")",
                   blocks.size() > 1 ? StrCat("; blk.N.", local, " is missing in ", blocks.size(), " of ", layers,
                                              " blocks (N = ", list, ")")
                                     : std::string()));
    }
    if (!n_layer_) return;  // block_count unusable: already reported
    for (const auto& n : table.names) {
      std::string local;
      auto layer = BlockOf(n, &local);
      if (layer && *layer >= layers) continue;  // reported above
      if (ScaleBase(n)) continue;               // judged by Scales()
      if (!table.allowed.count(n)) {
        Error("", n, StrCat("is not a tensor ", what(layer), "; it fails with \"wrong number of tensors\""));
      }
    }
  }

  // The complete tensor set of LLM_ARCH_LLAMA (load_tensors).
  void LlamaTable(const std::set<std::string>& names) {
    TensorTable table = GlobalTable(names);
    table.allowed.insert("rope_freqs.weight");
    const bool moe = n_expert_.value_or(0) > 0;
    for (uint64_t i = 0; i < n_layer_.value_or(0); ++i) {
      for (const char* n : {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm"}) {
        table.Need(i, StrCat(n, ".weight"));
      }
      for (const char* n : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_down", "ffn_up"}) {
        table.Allow(i, StrCat(n, ".bias"));
      }
      if (moe) {
        for (const char* n : {"ffn_gate_inp", "ffn_gate_exps", "ffn_down_exps", "ffn_up_exps"}) {
          table.Need(i, StrCat(n, ".weight"));
        }
      } else {
        for (const char* n : {"ffn_gate", "ffn_down", "ffn_up"}) table.Need(i, StrCat(n, ".weight"));
      }
    }
    ReportTable(table, [&](std::optional<size_t>) {
      return StrCat("llama.cpp's ", Quoted(arch_), " architecture", moe ? " (MoE)" : "", " creates");
    });
  }

  // nemotron_h / nemotron_h_moe rules, after llama.cpp 80fb11ac73e6
  // (2026-09-12; llama_model_nemotron_h::load_arch_hparams/load_arch_tensors,
  // one loader for both): a block's kind comes from its head_count_kv and
  // feed_forward_length (per-layer arrays, as convert_hf_to_gguf writes
  // them): Mamba-2 where both are 0, attention where feed_forward_length is
  // 0 (head_count_kv > 0), else MoE (expert_count > 0) or a dense ReLU^2 MLP.
  //   every block  attn_norm
  //   Mamba-2      ssm_in, ssm_conv1d (+ optional bias), ssm_dt.bias, ssm_a,
  //                ssm_d, ssm_norm {d_inner/n_group, n_group}, ssm_out
  //   attention    attn_q, attn_k, attn_v (or a fused attn_qkv; biases
  //                optional), attn_output (+ optional bias); no RoPE
  //   MoE          ffn_gate_inp, exp_probs_b.bias, ffn_up_exps,
  //                ffn_down_exps (no gate), ffn_up_shexp, ffn_down_shexp,
  //                optional ffn_latent_down/up (moe_latent_size)
  //   MLP          ffn_up, ffn_down (+ optional biases)
  // Keys: both norm epsilons and the ssm.* sizes required; expert_used_count
  // and expert_feed_forward_length may be per-layer; expert_count may not.
  enum class NemotronKind { kMamba, kAttention, kMoe, kMlp };
  NemotronKind KindOf(size_t i) const {
    if (n_ff_[i] == 0) return n_head_kv_[i] == 0 ? NemotronKind::kMamba : NemotronKind::kAttention;
    return n_expert_.value_or(0) > 0 ? NemotronKind::kMoe : NemotronKind::kMlp;
  }
  static std::string_view KindName(NemotronKind k) {
    switch (k) {
      case NemotronKind::kMamba: return "a Mamba-2 layer (head_count_kv 0, feed_forward_length 0)";
      case NemotronKind::kAttention: return "an attention layer (head_count_kv > 0, feed_forward_length 0)";
      case NemotronKind::kMoe: return "a MoE layer (feed_forward_length > 0, expert_count > 0)";
      case NemotronKind::kMlp: return "an MLP layer (feed_forward_length > 0, no experts)";
    }
    return "";
  }

  void NemotronBlock(TensorTable& table, uint64_t i, NemotronKind kind) {
    auto need = [&](std::initializer_list<const char*> locals) {
      for (const char* l : locals) table.Need(i, l);
    };
    auto allow = [&](std::initializer_list<const char*> locals) {
      for (const char* l : locals) table.Allow(i, l);
    };
    need({"attn_norm.weight"});
    switch (kind) {
      case NemotronKind::kMamba:
        need({"ssm_in.weight", "ssm_conv1d.weight", "ssm_dt.bias", "ssm_a", "ssm_d", "ssm_norm.weight",
              "ssm_out.weight"});
        allow({"ssm_conv1d.bias"});
        break;
      case NemotronKind::kAttention:
        if (table.names.count(StrCat("blk.", i, ".attn_qkv.weight"))) {
          need({"attn_qkv.weight"});
          allow({"attn_qkv.bias"});
        } else {
          need({"attn_q.weight", "attn_k.weight", "attn_v.weight"});
          allow({"attn_q.bias", "attn_k.bias", "attn_v.bias"});
        }
        need({"attn_output.weight"});
        allow({"attn_output.bias"});
        break;
      case NemotronKind::kMoe:
        need({"ffn_gate_inp.weight", "exp_probs_b.bias", "ffn_up_exps.weight", "ffn_down_exps.weight",
              "ffn_up_shexp.weight", "ffn_down_shexp.weight"});
        allow({"ffn_latent_down.weight", "ffn_latent_up.weight"});
        break;
      case NemotronKind::kMlp:
        need({"ffn_up.weight", "ffn_down.weight"});
        allow({"ffn_up.bias", "ffn_down.bias"});
        break;
    }
  }

  void NemotronTable(const std::set<std::string>& names) {
    const uint64_t layers = n_layer_.value_or(0);
    // Unusable per-layer keys were reported; MTP blocks (nextn) add tensors
    // this table does not describe.
    if (!n_layer_ || n_ff_.size() != layers || n_head_kv_.size() != layers || nextn_.value_or(0) > 0) return;
    TensorTable table = GlobalTable(names);
    for (uint64_t i = 0; i < layers; ++i) NemotronBlock(table, i, KindOf(i));
    ReportTable(table, [&](std::optional<size_t> layer) {
      std::string s = StrCat("llama.cpp's ", Quoted(arch_), " architecture creates");
      if (layer) s += StrCat(" in blk.", *layer, ", ", KindName(KindOf(*layer)));
      return s;
    });
  }

  const std::vector<LlamaCheckTensor>& tensors_;
  std::map<std::string, const MetaValue*> kv_;
  LlamaCheckResult result_;
  const ArchSpec* spec_ = nullptr;
  std::string arch_;
  bool nemotron_ = false;  // nemotron_h or nemotron_h_moe (IsNemotronH)
  std::optional<uint64_t> n_ctx_, n_embd_, n_layer_, n_expert_, head_k_, head_v_, n_rot_, n_vocab_key_, n_vocab_;
  std::vector<uint64_t> n_ff_, n_head_, n_head_kv_, n_expert_used_, n_ff_exp_;
  // nemotron_h only: ssm.conv_kernel, inner_size, state_size, time_step_rank
  // (the Mamba-2 head count), group_count; the shared expert's and the
  // latent projection's widths; MTP blocks.
  std::optional<uint64_t> d_conv_, d_inner_, d_state_, n_ssm_head_, n_group_, n_ff_shexp_, moe_latent_, nextn_;
};

}  // namespace

std::optional<std::vector<uint64_t>> LlamaScaleNe(std::string_view weight_name,
                                                  const std::vector<uint64_t>& weight_ne) {
  if (weight_name == "output.weight") return std::vector<uint64_t>{1};
  if (weight_name.rfind("blk.", 0) != 0 || !EndsWith(weight_name, ".weight")) return std::nullopt;
  std::string_view rest = weight_name.substr(4, weight_name.size() - 4 - 7);  // "N.<local>"
  size_t dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  for (size_t i = 0; i < dot; ++i) {
    if (rest[i] < '0' || rest[i] > '9') return std::nullopt;
  }
  std::string_view local = rest.substr(dot + 1);
  for (std::string_view w : kScaledBlockWeights) {
    if (local == w) return std::vector<uint64_t>{1};
  }
  for (std::string_view w : kScaledExpertWeights) {
    if (local == w) return std::vector<uint64_t>{weight_ne.size() >= 3 ? weight_ne[2] : 1};
  }
  return std::nullopt;
}

size_t LlamaCheckResult::errors() const {
  return static_cast<size_t>(std::count_if(problems.begin(), problems.end(), [](const LlamaProblem& p) {
    return p.severity == LlamaProblem::Severity::kError;
  }));
}

size_t LlamaCheckResult::warnings() const { return problems.size() - errors(); }

LlamaCheckResult CheckForLlamaCpp(const Metadata& kv, const std::vector<LlamaCheckTensor>& tensors) {
  return Checker(kv, tensors).Run();
}

std::vector<std::string> LlamaScalarKeysGivenAsArrays(const Metadata& kv) {
  std::string arch;
  for (const auto& [k, v] : kv) {
    if (k == "general.architecture" && v.type == ValueType::kString) arch = v.s;
  }
  std::vector<std::string> out;
  if (arch.empty()) return out;
  for (const auto& [k, v] : kv) {
    if (v.type != ValueType::kArray || k.size() <= arch.size() + 1 || k.compare(0, arch.size(), arch) != 0 ||
        k[arch.size()] != '.') {
      continue;
    }
    if (!PerLayerKey(arch, std::string_view(k).substr(arch.size() + 1))) out.push_back(k);
  }
  return out;
}

std::vector<std::string> LlamaCheckKnownArchitectures() {
  std::vector<std::string> out;
  for (const auto& a : Archs()) out.emplace_back(a.name);
  return out;
}

}  // namespace boltpack::tools
