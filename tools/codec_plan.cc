#include "tools/codec_plan.h"

#include "boltpack/codec_registry.h"
#include "common/escape.h"
#include "common/str_cat.h"

namespace boltpack::tools {
namespace {

// The block-quantizing codecs. llama-quantize never quantizes a tensor of
// fewer than two dimensions (norm weights, biases): ggml's kernels take them
// in float only, so a quantized norm makes llama.cpp abort at run time.
bool IsQuantizing(const std::string& codec_id) {
  return codec_id == "q8_0" || codec_id == "iq2_xxs" || codec_id == "mxfp4" || codec_id == "nvfp4" ||
         codec_id == "nvfp4-ggml" || codec_id == "int4-g128";
}

absl::Status CanTake(const std::string& codec_id, const CodecParams& params, const InputTensor& t) {
  const Codec* codec = FindCodec(codec_id);
  if (codec == nullptr) return absl::NotFoundError(StrCat("unknown codec \"", codec_id, "\""));
  if (t.shape.size() < 2 && IsQuantizing(codec_id)) {
    return absl::FailedPreconditionError("a 1-D tensor stays in float, as llama-quantize keeps it");
  }
  return codec->CanEncode(t.dtype, t.shape, params);
}

}  // namespace

std::vector<std::optional<CodecRule>> PlanCodecs(const Inputs& in, const std::vector<CodecRule>& rules,
                                                 std::vector<std::string>* fallbacks) {
  std::vector<std::optional<CodecRule>> plan;
  plan.reserve(in.tensors().size());
  for (const auto& t : in.tensors()) {
    const CodecRule* rule = FindRule(rules, t.name);
    if (rule == nullptr || rule->codec_id == kKeepCodec) {
      plan.emplace_back();
      continue;
    }
    absl::Status can = CanTake(rule->codec_id, rule->params, t);
    if (can.ok()) {
      plan.emplace_back(*rule);
      continue;
    }
    std::string why(can.message());
    if (!rule->fallback_codec_id.empty() &&
        CanTake(rule->fallback_codec_id, rule->fallback_params, t).ok()) {
      CodecRule fb = *rule;
      fb.codec_id = rule->fallback_codec_id;
      fb.params = rule->fallback_params;
      fallbacks->push_back(StrCat(EscapeForDisplay(t.name), ": ", rule->codec_id, " -> ", fb.codec_id, " (", why, ")"));
      plan.emplace_back(std::move(fb));
    } else {
      fallbacks->push_back(
          StrCat(EscapeForDisplay(t.name), ": ", rule->codec_id, " -> kept as ", DTypeName(t.dtype), " (", why, ")"));
      plan.emplace_back();
    }
  }
  return plan;
}

}  // namespace boltpack::tools
