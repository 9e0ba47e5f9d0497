#include "tools/codec_plan.h"

#include "boltpack/codec_registry.h"
#include "common/escape.h"
#include "common/str_cat.h"

namespace boltpack::tools {
namespace {

absl::Status CanTake(const std::string& codec_id, const CodecParams& params, const InputTensor& t) {
  const Codec* codec = FindCodec(codec_id);
  if (codec == nullptr) return absl::NotFoundError(StrCat("unknown codec \"", codec_id, "\""));
  // llama-quantize never quantizes a tensor of fewer than two dimensions
  // (norm weights, biases): ggml's kernels take them in float only, so a
  // quantized norm makes llama.cpp abort at run time.
  if (t.shape.size() < 2 && !codec->traits().takes_1d) {
    return absl::FailedPreconditionError("a 1-D tensor stays in float, as llama-quantize keeps it");
  }
  return codec->CanEncode(t.dtype, t.shape, params);
}

bool IsFloat(DType d) { return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16; }

bool EndsWith(std::string_view s, std::string_view end) {
  return s.size() >= end.size() && s.substr(s.size() - end.size()) == end;
}

// The tensors llama.cpp's converter (ModelBase.prepare_tensors) writes in
// F32 whatever the output type: 1-D ones (norms, biases), any *_norm.weight
// (Mamba-2's grouped ssm_norm is 2-D), a name not ending in .weight
// (ssm_a, ssm_d, exp_probs_b.bias), the router and the Mamba-2 conv1d.
bool HfKeepsF32(const InputTensor& t) {
  return t.shape.size() < 2 || EndsWith(t.name, "_norm.weight") || !EndsWith(t.name, ".weight") ||
         EndsWith(t.name, ".ffn_gate_inp.weight") || EndsWith(t.name, ".ssm_conv1d.weight");
}

}  // namespace

CodecPlan PlanCodecs(const Inputs& in, const std::vector<CodecRule>& rules,
                                                 std::vector<std::string>* fallbacks) {
  CodecPlan plan;
  plan.reserve(in.tensors().size());
  // One shared copy of each rule and of its fallback form, made on first use.
  std::vector<std::shared_ptr<const CodecRule>> as_given(rules.size()), as_fallback(rules.size());
  std::shared_ptr<const CodecRule> hf_f32;  // made on first use
  for (const auto& t : in.tensors()) {
    const CodecRule* rule = FindRule(rules, t.name);
    if (in.hf_folder() && HfKeepsF32(t) && IsFloat(t.dtype)) {
      // llama.cpp's converter writes these in F32 whatever the output type
      // or the checkpoint's dtype: its kernels take them so (a BF16 norm
      // can abort the CPU backend).
      if (t.dtype != DType::kF32 && hf_f32 == nullptr) hf_f32 = std::make_shared<const CodecRule>(CodecRule{"*", "f32"});
      plan.push_back(t.dtype == DType::kF32 ? nullptr : hf_f32);
      continue;
    }
    if (rule == nullptr || rule->codec_id == kKeepCodec) {
      plan.push_back(nullptr);
      continue;
    }
    const size_t r = static_cast<size_t>(rule - rules.data());
    absl::Status can = CanTake(rule->codec_id, rule->params, t);
    if (can.ok()) {
      if (as_given[r] == nullptr) as_given[r] = std::make_shared<const CodecRule>(*rule);
      plan.push_back(as_given[r]);
      continue;
    }
    std::string why(can.message());
    if (!rule->fallback_codec_id.empty() &&
        CanTake(rule->fallback_codec_id, rule->fallback_params, t).ok()) {
      if (as_fallback[r] == nullptr) {
        CodecRule fb = *rule;
        fb.codec_id = rule->fallback_codec_id;
        fb.params = rule->fallback_params;
        as_fallback[r] = std::make_shared<const CodecRule>(std::move(fb));
      }
      fallbacks->push_back(
          StrCat(EscapeForDisplay(t.name), ": ", rule->codec_id, " -> ", as_fallback[r]->codec_id, " (", why, ")"));
      plan.push_back(as_fallback[r]);
    } else {
      fallbacks->push_back(
          StrCat(EscapeForDisplay(t.name), ": ", rule->codec_id, " -> kept as ", DTypeName(t.dtype), " (", why, ")"));
      plan.push_back(nullptr);
    }
  }
  return plan;
}

}  // namespace boltpack::tools
