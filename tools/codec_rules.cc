#include "tools/codec_rules.h"

#include <charconv>

#include "boltpack/codec_registry.h"
#include "common/status_macros.h"
#include "common/str_cat.h"

namespace boltpack::tools {
absl::StatusOr<CodecParams> ParseRuleParams(std::string_view codec_id, absl::Span<const ParamText> given,
                                            std::string_view where) {
  if (codec_id == kKeepCodec) {
    if (given.empty()) return CodecParams();
    return absl::InvalidArgumentError(
        StrCat(where, ": \"", kKeepCodec, "\" takes no parameters, got \"", given[0].key, "\""));
  }
  const Codec* codec = FindCodec(codec_id);
  if (codec == nullptr) return absl::NotFoundError(StrCat(where, ": unknown codec \"", codec_id, "\""));
  return ParseCodecParams(*codec, given, where);
}

absl::StatusOr<CodecRule> ParseCodecRule(std::string_view text) {
  size_t eq = text.rfind('=', text.find(':'));
  if (eq == std::string_view::npos || eq == 0) {
    return absl::InvalidArgumentError(StrCat("--codec \"", text, "\": expected PATTERN=CODEC[:key=value,...]"));
  }
  CodecRule rule;
  rule.pattern = std::string(text.substr(0, eq));
  std::string_view rest = text.substr(eq + 1);
  size_t colon = rest.find(':');
  rule.codec_id = std::string(rest.substr(0, colon));
  if (rule.codec_id != kKeepCodec && FindCodec(rule.codec_id) == nullptr) {
    std::string known;
    for (const auto& id : RegisteredCodecIds()) known += (known.empty() ? "" : ", ") + id;
    return absl::InvalidArgumentError(StrCat("--codec \"", text, "\": unknown codec \"", rule.codec_id,
                                             "\" (known: ", known, ")"));
  }
  const std::string where = StrCat("--codec \"", text, "\"");
  std::vector<ParamText> given;
  if (colon != std::string_view::npos) {
    std::string_view params = rest.substr(colon + 1);
    while (!params.empty()) {
      size_t comma = params.find(',');
      std::string_view kv = params.substr(0, comma);
      size_t peq = kv.find('=');
      if (peq == std::string_view::npos || peq == 0) {
        return absl::InvalidArgumentError(StrCat("--codec \"", text, "\": parameter \"", kv, "\" is not key=value"));
      }
      given.push_back({std::string(kv.substr(0, peq)), std::string(kv.substr(peq + 1))});
      if (comma == std::string_view::npos) break;
      params.remove_prefix(comma + 1);
    }
  }
  BP_ASSIGN_OR_RETURN(rule.params, ParseRuleParams(rule.codec_id, given, where));
  return rule;
}

std::string CodecListing() {
  std::string out = "Codecs (--codec PATTERN=CODEC[:key=value,...]; (stored): written by the encoder, not set):\n";
  std::vector<std::string> copied;
  for (const std::string& id : RegisteredCodecIds()) {
    const Codec* codec = FindCodec(id);
    if (codec == nullptr) continue;
    if (codec->traits().copy_only) {
      copied.push_back(id);
      continue;
    }
    out += StrCat("  ", id, ": ", codec->description(), "\n");
    const std::string params = DescribeCodecParams(*codec, "      ");
    out += params.empty() ? "      (no parameters)\n" : params;
  }
  if (copied.empty()) return out;
  out += "Copied, not encoded (GGUF blocks passed through; parameter ggml_type stored):\n ";
  size_t line = 1;
  for (size_t i = 0; i < copied.size(); ++i) {
    const std::string item = StrCat(" ", copied[i], i + 1 < copied.size() ? "," : "");
    if (line + item.size() > 100) {
      out += "\n ";
      line = 1;
    }
    out += item;
    line += item.size();
  }
  return out + "\n";
}

bool GlobMatch(std::string_view pattern, std::string_view name) {
  // Iterative matcher with single-star backtracking: linear in practice and
  // never exponential on hostile patterns.
  size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

const CodecRule* FindRule(const std::vector<CodecRule>& rules, std::string_view name) {
  for (const auto& r : rules) {
    if (GlobMatch(r.pattern, name)) return &r;
  }
  return nullptr;
}

}  // namespace boltpack::tools
