#include "codecs/codec_params.h"

#include <charconv>
#include <cmath>
#include <cstdint>

#include "common/str_cat.h"

namespace boltpack {
namespace {

// Bounds this far out mean "no bound" (the CodecParamSpec defaults).
constexpr double kUnbounded = 1.0e300;

std::string Quoted(std::string_view s) { return StrCat("\"", s, "\""); }

// "keep, mbits" of the settable ones, or nullopt-like empty.
std::string SettableKeys(const std::vector<CodecParamSpec>& specs) {
  std::string keys;
  for (const auto& s : specs) {
    if (s.settable) keys += StrCat(keys.empty() ? "" : ", ", s.name);
  }
  return keys;
}

std::string TakesClause(const std::vector<CodecParamSpec>& specs) {
  const std::string keys = SettableKeys(specs);
  return keys.empty() ? "it takes no parameters" : StrCat("it takes: ", keys);
}

std::string RangeText(const CodecParamSpec& spec) {
  const bool low = spec.min > -kUnbounded, high = spec.max < kUnbounded;
  if (spec.kind == ParamKind::kInteger && !spec.min_exclusive && !spec.max_exclusive && low && high) {
    return StrCat(static_cast<int64_t>(spec.min), "..", static_cast<int64_t>(spec.max));
  }
  if (low && high) {
    return StrCat("in ", spec.min_exclusive ? "(" : "[", spec.min, ", ", spec.max, spec.max_exclusive ? ")" : "]");
  }
  if (low) return StrCat(spec.min_exclusive ? "> " : ">= ", spec.min);
  if (high) return StrCat(spec.max_exclusive ? "< " : "<= ", spec.max);
  return "";
}

bool InRange(const CodecParamSpec& spec, double x) {
  if (spec.min_exclusive ? !(x > spec.min) : !(x >= spec.min)) return false;
  if (spec.max_exclusive ? !(x < spec.max) : !(x <= spec.max)) return false;
  return true;
}

template <typename T>
bool ParseWhole(std::string_view text, T* out) {
  if (text.empty()) return false;
  auto r = std::from_chars(text.data(), text.data() + text.size(), *out);
  return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

// The typed value of `text` for `spec`; an error message (without `where`)
// when it is of the wrong kind or out of range.
absl::StatusOr<MetaValue> TypedValue(const CodecParamSpec& spec, std::string_view text) {
  const std::string want = StrCat("must be ", DescribeParamValues(spec), ", got ", Quoted(text));
  switch (spec.kind) {
    case ParamKind::kNumber: {
      double d;
      if (!ParseWhole(text, &d) || !std::isfinite(d)) return absl::InvalidArgumentError(want);
      if (!InRange(spec, d)) return absl::OutOfRangeError(StrCat("is out of range: ", want));
      return MetaValue::Float64(d);
    }
    case ParamKind::kInteger: {
      int64_t i;
      if (!ParseWhole(text, &i)) return absl::InvalidArgumentError(want);
      if (!InRange(spec, static_cast<double>(i))) return absl::OutOfRangeError(StrCat("is out of range: ", want));
      return MetaValue::Int(ValueType::kInt64, i);
    }
    case ParamKind::kBool:
      if (text != "true" && text != "false") return absl::InvalidArgumentError(want);
      return MetaValue::Bool(text == "true");
    case ParamKind::kChoice:
      for (std::string_view c : spec.choices) {
        if (text == c) return MetaValue::String(std::string(text));
      }
      return absl::InvalidArgumentError(want);
    case ParamKind::kText:
      return MetaValue::String(std::string(text));
  }
  return absl::InvalidArgumentError(want);
}

// Whether typed `v` is of `spec`'s kind and in its range.
bool FitsSpec(const CodecParamSpec& spec, const MetaValue& v) {
  switch (spec.kind) {
    case ParamKind::kNumber: {
      double d;
      if (v.type == ValueType::kFloat64) {
        d = v.f64;
      } else if (v.type == ValueType::kFloat32) {
        d = v.f32;
      } else if (IsUnsignedInt(v.type)) {
        d = static_cast<double>(v.u);
      } else if (IsSignedInt(v.type)) {
        d = static_cast<double>(v.i);
      } else {
        return false;
      }
      return std::isfinite(d) && InRange(spec, d);
    }
    case ParamKind::kInteger:
      if (IsUnsignedInt(v.type)) return v.u <= (uint64_t{1} << 62) && InRange(spec, static_cast<double>(v.u));
      return IsSignedInt(v.type) && InRange(spec, static_cast<double>(v.i));
    case ParamKind::kBool: return v.type == ValueType::kBool;
    case ParamKind::kChoice:
      if (v.type != ValueType::kString) return false;
      for (std::string_view c : spec.choices) {
        if (v.s == c) return true;
      }
      return false;
    case ParamKind::kText: return v.type == ValueType::kString;
  }
  return false;
}

std::string_view KindPlaceholder(ParamKind kind) {
  switch (kind) {
    case ParamKind::kNumber: return "NUMBER";
    case ParamKind::kInteger: return "INTEGER";
    case ParamKind::kBool: return "BOOL";
    case ParamKind::kChoice: return "CHOICE";
    case ParamKind::kText: return "TEXT";
  }
  return "VALUE";
}

}  // namespace

std::string DescribeParamValues(const CodecParamSpec& spec) {
  switch (spec.kind) {
    case ParamKind::kNumber: {
      const std::string range = RangeText(spec);
      return range.empty() ? "a number" : StrCat("a number ", range);
    }
    case ParamKind::kInteger: {
      const std::string range = RangeText(spec);
      return range.empty() ? "an integer" : StrCat("an integer ", range);
    }
    case ParamKind::kBool: return "true or false";
    case ParamKind::kChoice: {
      std::string list;
      for (std::string_view c : spec.choices) list += StrCat(list.empty() ? "" : ", ", c);
      return StrCat("one of ", list);
    }
    case ParamKind::kText: return "text";
  }
  return "a value";
}

absl::StatusOr<CodecParams> ParseCodecParams(const Codec& codec, absl::Span<const ParamText> given,
                                             std::string_view where) {
  const std::vector<CodecParamSpec> specs = codec.ParamSpecs();
  const std::string head = StrCat(where, ": codec ", Quoted(codec.id()), ": ");
  CodecParams out;
  for (size_t i = 0; i < given.size(); ++i) {
    const ParamText& p = given[i];
    const CodecParamSpec* spec = nullptr;
    for (const auto& s : specs) spec = s.name == p.key ? &s : spec;
    if (spec == nullptr) {
      return absl::InvalidArgumentError(
          StrCat(head, "unknown parameter ", Quoted(p.key), " (", TakesClause(specs), ")"));
    }
    if (!spec->settable) {
      return absl::InvalidArgumentError(StrCat(head, "parameter ", Quoted(p.key),
                                               " is stored by the encoder, not set by users (",
                                               TakesClause(specs), ")"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (given[j].key == p.key) {
        return absl::InvalidArgumentError(StrCat(head, "parameter ", Quoted(p.key), " is given twice"));
      }
    }
    absl::StatusOr<MetaValue> value = TypedValue(*spec, p.value);
    if (!value.ok()) {
      return absl::Status(value.status().code(),
                          StrCat(head, "parameter ", Quoted(p.key), " ", value.status().message()));
    }
    out.emplace_back(p.key, *std::move(value));
  }
  return out;
}

absl::Status CheckEncoderParams(const Codec& codec, const CodecParams& params) {
  const std::vector<CodecParamSpec> specs = codec.ParamSpecs();
  const std::string head = StrCat("codec '", codec.id(), "': ");
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& [key, value] = params[i];
    const CodecParamSpec* spec = nullptr;
    for (const auto& s : specs) spec = s.name == key ? &s : spec;
    if (spec == nullptr || !spec->settable) {
      return absl::InvalidArgumentError(StrCat(head, spec == nullptr ? "unknown parameter '" : "stored parameter '",
                                               key, "' (", TakesClause(specs), ")"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (params[j].first == key) return absl::InvalidArgumentError(StrCat(head, "parameter '", key, "' appears twice"));
    }
    if (!FitsSpec(*spec, value)) {
      return absl::InvalidArgumentError(StrCat(head, "parameter '", key, "' must be ", DescribeParamValues(*spec),
                                               ", got ", ValueTypeName(value.type)));
    }
  }
  return absl::OkStatus();
}

std::string DescribeCodecParams(const Codec& codec, std::string_view indent) {
  std::string out;
  for (const CodecParamSpec& s : codec.ParamSpecs()) {
    out += StrCat(indent, s.name, "=", KindPlaceholder(s.kind), "  ", s.settable ? "" : "(stored) ",
                  DescribeParamValues(s));
    if (!s.default_text.empty()) out += StrCat(", default ", s.default_text);
    if (!s.help.empty()) out += StrCat(": ", s.help);
    out += "\n";
  }
  return out;
}

}  // namespace boltpack
