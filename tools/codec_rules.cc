#include "tools/codec_rules.h"

#include <charconv>

#include "boltpack/codec_registry.h"
#include "common/str_cat.h"

namespace boltpack::tools {
MetaValue TypedParam(std::string_view text) {
  if (text == "true" || text == "false") return MetaValue::Bool(text == "true");
  int64_t i;
  auto r = std::from_chars(text.data(), text.data() + text.size(), i);
  if (r.ec == std::errc() && r.ptr == text.data() + text.size()) return MetaValue::Int(ValueType::kInt64, i);
  uint64_t u;
  r = std::from_chars(text.data(), text.data() + text.size(), u);
  if (r.ec == std::errc() && r.ptr == text.data() + text.size()) return MetaValue::Uint(ValueType::kUint64, u);
  double d;
  r = std::from_chars(text.data(), text.data() + text.size(), d);
  if (r.ec == std::errc() && r.ptr == text.data() + text.size()) return MetaValue::Float64(d);
  return MetaValue::String(std::string(text));
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
  if (colon != std::string_view::npos) {
    std::string_view params = rest.substr(colon + 1);
    while (!params.empty()) {
      size_t comma = params.find(',');
      std::string_view kv = params.substr(0, comma);
      size_t peq = kv.find('=');
      if (peq == std::string_view::npos || peq == 0) {
        return absl::InvalidArgumentError(StrCat("--codec \"", text, "\": parameter \"", kv, "\" is not key=value"));
      }
      rule.params.emplace_back(std::string(kv.substr(0, peq)), TypedParam(kv.substr(peq + 1)));
      if (comma == std::string_view::npos) break;
      params.remove_prefix(comma + 1);
    }
  }
  return rule;
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
