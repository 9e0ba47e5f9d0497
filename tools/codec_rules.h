// `--codec PATTERN=CODEC[:key=value,...]` rules: the first rule whose glob
// matches a tensor name picks its codec.
#ifndef BOLTPACK_TOOLS_CODEC_RULES_H_
#define BOLTPACK_TOOLS_CODEC_RULES_H_

#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "boltpack/types.h"
#include "codecs/codec_params.h"

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
// form). Tensors that take the same rule share one copy of it (a rule is 144
// bytes, and a plan of 1M tensors held one each, twice for a GGUF output),
// and each tensor holds the number of its rule, 4 bytes (a shared pointer
// a tensor took 16 MB for 1M tensors).
class CodecPlan {
 public:
  size_t size() const { return which_.size(); }
  const CodecRule* operator[](size_t i) const { return which_[i] == 0 ? nullptr : rules_[which_[i] - 1].get(); }
  // Whether any tensor takes a rule.
  bool any() const {
    for (uint32_t w : which_) {
      if (w != 0) return true;
    }
    return false;
  }
  void reserve(size_t n) { which_.reserve(n); }
  void push_back(std::shared_ptr<const CodecRule> rule) { which_.push_back(Number(std::move(rule))); }
  void Set(size_t i, std::shared_ptr<const CodecRule> rule) { which_[i] = Number(std::move(rule)); }

 private:
  uint32_t Number(std::shared_ptr<const CodecRule> rule) {
    if (rule == nullptr) return 0;
    auto [it, added] = numbers_.try_emplace(rule.get(), static_cast<uint32_t>(rules_.size() + 1));
    if (added) rules_.push_back(std::move(rule));
    return it->second;
  }
  std::vector<uint32_t> which_;  // per tensor: 0, or 1 + its rule's index in rules_
  std::vector<std::shared_ptr<const CodecRule>> rules_;
  absl::flat_hash_map<const CodecRule*, uint32_t> numbers_;  // of rules_
};

// The parameters of a rule for `codec_id` (a registered codec or
// kKeepCodec, which takes none), typed by the codec's ParamSpecs
// (codecs/codec_params.h); errors start with `where`.
absl::StatusOr<CodecParams> ParseRuleParams(std::string_view codec_id, absl::Span<const ParamText> given,
                                            std::string_view where);

// Parses one `--codec` argument; its parameters as ParseRuleParams does.
absl::StatusOr<CodecRule> ParseCodecRule(std::string_view text);

// Every registered codec a --codec rule can name, with its description and
// parameters (kind, range or choices, default, help), for `convert --help`;
// the copy-only ones (ggml pass-through) on one wrapped list at the end.
std::string CodecListing();

// Glob match where `*` matches any run of characters (dots included) and
// `?` exactly one.
bool GlobMatch(std::string_view pattern, std::string_view name);

// The first rule matching `name`, if any.
const CodecRule* FindRule(const std::vector<CodecRule>& rules, std::string_view name);

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_CODEC_RULES_H_
