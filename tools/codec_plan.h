// Which codec each tensor of a conversion gets: the first matching rule, or
// its fallback when the rule's codec cannot take the tensor (a row length
// not a multiple of its block, say), as llama-quantize does — never a crash,
// never a wrong file.
#ifndef BOLTPACK_TOOLS_CODEC_PLAN_H_
#define BOLTPACK_TOOLS_CODEC_PLAN_H_

#include <optional>
#include <string>
#include <vector>

#include "tools/codec_rules.h"
#include "tools/inputs.h"

namespace boltpack::tools {

// One entry per input tensor: the rule to apply (its codec is the one to
// use), or nullopt to keep the source form. `fallbacks` gets one line per
// tensor that fell back: "name: codec -> fallback (why)".
CodecPlan PlanCodecs(const Inputs& in, const std::vector<CodecRule>& rules,
                                                 std::vector<std::string>* fallbacks);

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_CODEC_PLAN_H_
