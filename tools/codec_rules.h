// `--codec PATTERN=CODEC[:key=value,...]` rules: the first rule whose glob
// matches a tensor name picks its codec.
#ifndef BOLTPACK_TOOLS_CODEC_RULES_H_
#define BOLTPACK_TOOLS_CODEC_RULES_H_

#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "boltpack/types.h"

namespace boltpack::tools {

// The codec id that means "the tensor's source form" (no re-encoding).
inline constexpr std::string_view kKeepCodec = "keep";

struct CodecRule {
  std::string pattern;
  std::string codec_id;  // a registered codec, or kKeepCodec
  CodecParams params;
  // For a tensor `codec_id` cannot take; empty id: keep the source form.
  std::string fallback_codec_id;
  CodecParams fallback_params;
};

// The rule of each input tensor of a conversion (null: it keeps its source
// form). Tensors that take the same rule share one copy of it: a rule is 144
// bytes, and a plan of 1M tensors held one each (twice for a GGUF output).
using CodecPlan = std::vector<std::shared_ptr<const CodecRule>>;

// A codec parameter typed by its text (see ParseCodecRule).
MetaValue TypedParam(std::string_view text);

// Parses one `--codec` argument. Values of params are typed by their text:
// integers as INT64 (UINT64 if they need it), decimals as FLOAT64,
// true/false as BOOL, anything else as STRING.
absl::StatusOr<CodecRule> ParseCodecRule(std::string_view text);

// Glob match where `*` matches any run of characters (dots included) and
// `?` exactly one.
bool GlobMatch(std::string_view pattern, std::string_view name);

// The first rule matching `name`, if any.
const CodecRule* FindRule(const std::vector<CodecRule>& rules, std::string_view name);

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_CODEC_RULES_H_
