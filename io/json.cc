#include "io/json.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <system_error>
#include <unordered_set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace boltpack::io {
namespace {

// Debian's Abseil has its own string_view type, which StrCat needs.
absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }

bool IsJsonSpace(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }

// Length of the valid UTF-8 sequence starting at p[0], or 0 when it is not
// one (Unicode Table 3-7: this rejects overlong forms, surrogates and code
// points past U+10FFFF).
size_t Utf8SequenceLength(const unsigned char* p, size_t n) {
  unsigned char c = p[0];
  if (c < 0x80) return 1;
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i < n && p[i] >= lo && p[i] <= hi;
  };
  if (c < 0xC2) return 0;  // stray continuation byte or overlong 2-byte form
  if (c < 0xE0) return cont(1) ? 2 : 0;
  if (c < 0xF0) {
    unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;  // overlong 3-byte
    unsigned char hi = c == 0xED ? 0x9F : 0xBF;  // UTF-16 surrogates
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (c < 0xF5) {
    unsigned char lo = c == 0xF0 ? 0x90 : 0x80;  // overlong 4-byte
    unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;  // past U+10FFFF
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// How a byte reads in an error message; never echoes raw control bytes.
std::string DescribeByte(unsigned char c) {
  if (c >= 0x21 && c < 0x7F) return absl::StrCat("'", std::string(1, static_cast<char>(c)), "'");
  static const char kHex[] = "0123456789abcdef";
  return absl::StrCat("byte 0x", std::string(1, kHex[c >> 4]), std::string(1, kHex[c & 15]));
}

// A key for an error message: quoted and cut short, since keys come from
// untrusted input and could be megabytes long.
std::string KeyForMessage(std::string_view key) {
  constexpr size_t kMax = 120;
  if (key.size() <= kMax) return JsonQuote(key);
  // Cut on a UTF-8 boundary so the message stays valid text.
  size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(key[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat(JsonQuote(key.substr(0, cut)), "...");
}

}  // namespace

std::string_view JsonTypeName(JsonType type) {
  switch (type) {
    case JsonType::kNull: return "null";
    case JsonType::kBool: return "a boolean";
    case JsonType::kNumber: return "a number";
    case JsonType::kString: return "a string";
    case JsonType::kArray: return "an array";
    case JsonType::kObject: return "an object";
  }
  return "?";
}

// ---- JsonValue --------------------------------------------------------------

JsonValue JsonValue::Bool(bool b) {
  JsonValue v;
  v.type_ = JsonType::kBool;
  v.bool_ = b;
  return v;
}

JsonValue JsonValue::String(std::string s) {
  JsonValue v;
  v.type_ = JsonType::kString;
  v.text_ = std::move(s);
  return v;
}

JsonValue JsonValue::Uint(uint64_t u) {
  JsonValue v;
  v.type_ = JsonType::kNumber;
  v.text_ = std::to_string(u);
  v.is_integer_ = true;
  v.has_u64_ = true;
  v.u64_ = u;
  if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    v.has_i64_ = true;
    v.i64_ = static_cast<int64_t>(u);
  }
  v.double_ = static_cast<double>(u);
  return v;
}

JsonValue JsonValue::Int(int64_t i) {
  if (i >= 0) return Uint(static_cast<uint64_t>(i));
  JsonValue v;
  v.type_ = JsonType::kNumber;
  v.text_ = std::to_string(i);
  v.is_integer_ = true;
  v.has_i64_ = true;
  v.i64_ = i;
  v.double_ = static_cast<double>(i);
  return v;
}

JsonValue JsonValue::Double(double d) {
  if (!std::isfinite(d)) return Null();
  JsonValue v;
  v.type_ = JsonType::kNumber;
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d);  // shortest round-trip form
  v.text_.assign(buf, r.ptr);
  v.double_ = d;
  return v;
}

JsonValue JsonValue::Array(std::vector<JsonValue> elements) {
  JsonValue v;
  v.type_ = JsonType::kArray;
  v.array_ = std::move(elements);
  return v;
}

JsonValue JsonValue::Object(std::vector<Member> members) {
  JsonValue v;
  v.type_ = JsonType::kObject;
  v.object_ = std::move(members);
  return v;
}

std::optional<uint64_t> JsonValue::uint64_value() const {
  if (type_ != JsonType::kNumber || !has_u64_) return std::nullopt;
  return u64_;
}

std::optional<int64_t> JsonValue::int64_value() const {
  if (type_ != JsonType::kNumber || !has_i64_) return std::nullopt;
  return i64_;
}

const JsonValue* JsonValue::Find(std::string_view key) const {
  for (const auto& [k, v] : object_) {
    if (k == key) return &v;
  }
  return nullptr;
}

bool operator==(const JsonValue& a, const JsonValue& b) {
  if (a.type_ != b.type_) return false;
  switch (a.type_) {
    case JsonType::kNull: return true;
    case JsonType::kBool: return a.bool_ == b.bool_;
    case JsonType::kNumber:  // by spelling: "1.0" and "1" are different documents
    case JsonType::kString: return a.text_ == b.text_;
    case JsonType::kArray: return a.array_ == b.array_;
    case JsonType::kObject: return a.object_ == b.object_;
  }
  return false;
}

// ---- parser -------------------------------------------------------------------

class JsonParser {
 public:
  JsonParser(std::string_view text, const JsonLimits& limits)
      : p_(reinterpret_cast<const unsigned char*>(text.data())), n_(text.size()), limits_(limits) {}

  absl::StatusOr<JsonValue> ParseDocument() {
    JsonValue v;
    SkipSpace();
    if (absl::Status s = ParseValue(0, &v); !s.ok()) return s;
    SkipSpace();
    if (pos_ != n_) {
      return Error(pos_, absl::StrCat("unexpected ", DescribeByte(p_[pos_]), " after the JSON value"));
    }
    return v;
  }

 private:
  absl::Status Error(size_t at, std::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("byte ", at, ": ", AV(what)));
  }
  absl::Status Unexpected(std::string_view expected) const {
    if (pos_ >= n_) return Error(pos_, absl::StrCat("unexpected end of input, expected ", AV(expected)));
    return Error(pos_, absl::StrCat("unexpected ", DescribeByte(p_[pos_]), ", expected ", AV(expected)));
  }

  void SkipSpace() {
    while (pos_ < n_ && IsJsonSpace(p_[pos_])) ++pos_;
  }

  bool Literal(std::string_view word) {
    if (n_ - pos_ < word.size() || std::memcmp(p_ + pos_, word.data(), word.size()) != 0) {
      return false;
    }
    pos_ += word.size();
    return true;
  }

  absl::Status ParseValue(int depth, JsonValue* out) {
    if (pos_ >= n_) return Unexpected("a value");
    if (++values_ > limits_.max_values) {
      return absl::ResourceExhaustedError(
          absl::StrCat("byte ", pos_, ": more than ", limits_.max_values, " values (the limit of a document)"));
    }
    unsigned char c = p_[pos_];
    switch (c) {
      case '{': return ParseObject(depth + 1, out);
      case '[': return ParseArray(depth + 1, out);
      case '"':
        out->type_ = JsonType::kString;
        return ParseString(&out->text_);
      case 't':
      case 'f':
      case 'n': {
        size_t start = pos_;
        if (Literal("true")) {
          *out = JsonValue::Bool(true);
        } else if (Literal("false")) {
          *out = JsonValue::Bool(false);
        } else if (Literal("null")) {
          *out = JsonValue();
        } else {
          return Error(start, "invalid literal (expected true, false or null)");
        }
        return absl::OkStatus();
      }
      default:
        if (c == '-' || IsDigit(c)) return ParseNumber(out);
        return Unexpected("a value");
    }
  }

  absl::Status CheckDepth(int depth) const {
    if (depth > limits_.max_depth) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "byte ", pos_, ": nesting is deeper than the limit of ", limits_.max_depth));
    }
    return absl::OkStatus();
  }

  absl::Status ParseArray(int depth, JsonValue* out) {
    if (absl::Status s = CheckDepth(depth); !s.ok()) return s;
    ++pos_;  // '['
    out->type_ = JsonType::kArray;
    SkipSpace();
    if (pos_ < n_ && p_[pos_] == ']') {
      ++pos_;
      return absl::OkStatus();
    }
    while (true) {
      SkipSpace();
      out->array_.emplace_back();
      if (absl::Status s = ParseValue(depth, &out->array_.back()); !s.ok()) return s;
      SkipSpace();
      if (pos_ < n_ && p_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < n_ && p_[pos_] == ']') {
        ++pos_;
        return absl::OkStatus();
      }
      return Unexpected("',' or ']' in array");
    }
  }

  absl::Status ParseObject(int depth, JsonValue* out) {
    if (absl::Status s = CheckDepth(depth); !s.ok()) return s;
    ++pos_;  // '{'
    out->type_ = JsonType::kObject;
    SkipSpace();
    if (pos_ < n_ && p_[pos_] == '}') {
      ++pos_;
      return absl::OkStatus();
    }
    // Small objects are checked for duplicates by a scan; big ones (a
    // safetensors header with 100k tensors) through a set, so hostile input
    // cannot make the check quadratic.
    constexpr size_t kScanLimit = 16;
    std::unordered_set<std::string> seen;
    auto& members = out->object_;
    while (true) {
      SkipSpace();
      if (pos_ >= n_ || p_[pos_] != '"') return Unexpected("a string key");
      size_t key_at = pos_;
      std::string key;
      if (absl::Status s = ParseString(&key); !s.ok()) return s;
      bool dup = false;
      if (members.size() < kScanLimit) {
        for (const auto& m : members) dup = dup || m.first == key;
      } else {
        if (seen.empty()) {
          for (const auto& m : members) seen.insert(m.first);
        }
        dup = !seen.insert(key).second;
      }
      if (dup) return Error(key_at, absl::StrCat("duplicate key ", KeyForMessage(key)));
      SkipSpace();
      if (pos_ >= n_ || p_[pos_] != ':') return Unexpected("':' after an object key");
      ++pos_;
      SkipSpace();
      members.emplace_back(std::move(key), JsonValue());
      if (absl::Status s = ParseValue(depth, &members.back().second); !s.ok()) return s;
      SkipSpace();
      if (pos_ < n_ && p_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < n_ && p_[pos_] == '}') {
        ++pos_;
        return absl::OkStatus();
      }
      return Unexpected("',' or '}' in object");
    }
  }

  absl::StatusOr<uint32_t> Hex4() {
    if (n_ - pos_ < 4) return Error(pos_, "truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      unsigned char c = p_[pos_ + i];
      uint32_t d;
      if (c >= '0' && c <= '9') d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      else return Error(pos_ + i, absl::StrCat("invalid hex digit ", DescribeByte(c), " in \\u escape"));
      v = v * 16 + d;
    }
    pos_ += 4;
    return v;
  }

  absl::Status ParseString(std::string* out) {
    size_t start = pos_;
    ++pos_;  // opening quote
    while (true) {
      // Copy the plain run in one go; most strings have no escapes.
      size_t run = pos_;
      while (pos_ < n_) {
        unsigned char c = p_[pos_];
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++pos_;
      }
      out->append(reinterpret_cast<const char*>(p_ + run), pos_ - run);
      if (pos_ >= n_) return Error(start, "unterminated string");
      unsigned char c = p_[pos_];
      if (c == '"') {
        ++pos_;
        return absl::OkStatus();
      }
      if (c < 0x20) {
        return Error(pos_, absl::StrCat("unescaped control character ", DescribeByte(c), " in string"));
      }
      if (c >= 0x80) {
        size_t len = Utf8SequenceLength(p_ + pos_, n_ - pos_);
        if (len == 0) return Error(pos_, "invalid UTF-8 in string");
        out->append(reinterpret_cast<const char*>(p_ + pos_), len);
        pos_ += len;
        continue;
      }
      // Backslash escape.
      size_t esc_at = pos_;
      ++pos_;
      if (pos_ >= n_) return Error(start, "unterminated string");
      unsigned char e = p_[pos_++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          absl::StatusOr<uint32_t> cp = Hex4();
          if (!cp.ok()) return cp.status();
          uint32_t code = *cp;
          if (code >= 0xDC00 && code <= 0xDFFF) {
            return Error(esc_at, "unpaired low surrogate in \\u escape");
          }
          if (code >= 0xD800 && code <= 0xDBFF) {
            // A high surrogate is only meaningful followed by a low one.
            if (n_ - pos_ < 2 || p_[pos_] != '\\' || p_[pos_ + 1] != 'u') {
              return Error(esc_at, "unpaired high surrogate in \\u escape");
            }
            pos_ += 2;
            absl::StatusOr<uint32_t> low = Hex4();
            if (!low.ok()) return low.status();
            if (*low < 0xDC00 || *low > 0xDFFF) {
              return Error(esc_at, "high surrogate not followed by a low surrogate in \\u escape");
            }
            code = 0x10000 + ((code - 0xD800) << 10) + (*low - 0xDC00);
          }
          AppendUtf8(code, out);
          break;
        }
        default:
          return Error(esc_at, absl::StrCat("invalid escape \\", DescribeByte(e), " in string"));
      }
    }
  }

  absl::Status ParseNumber(JsonValue* out) {
    size_t start = pos_;
    bool negative = false;
    if (p_[pos_] == '-') {
      negative = true;
      ++pos_;
    }
    size_t int_begin = pos_;
    if (pos_ >= n_ || !IsDigit(p_[pos_])) return Unexpected("a digit");
    if (p_[pos_] == '0') {
      ++pos_;
      if (pos_ < n_ && IsDigit(p_[pos_])) return Error(start, "leading zero in number");
    } else {
      while (pos_ < n_ && IsDigit(p_[pos_])) ++pos_;
    }
    size_t int_end = pos_;
    bool integer = true;
    if (pos_ < n_ && p_[pos_] == '.') {
      integer = false;
      ++pos_;
      if (pos_ >= n_ || !IsDigit(p_[pos_])) return Unexpected("a digit after '.'");
      while (pos_ < n_ && IsDigit(p_[pos_])) ++pos_;
    }
    if (pos_ < n_ && (p_[pos_] == 'e' || p_[pos_] == 'E')) {
      integer = false;
      ++pos_;
      if (pos_ < n_ && (p_[pos_] == '+' || p_[pos_] == '-')) ++pos_;
      if (pos_ >= n_ || !IsDigit(p_[pos_])) return Unexpected("a digit in the exponent");
      while (pos_ < n_ && IsDigit(p_[pos_])) ++pos_;
    }
    const char* text = reinterpret_cast<const char*>(p_ + start);
    size_t len = pos_ - start;
    out->type_ = JsonType::kNumber;
    out->text_.assign(text, len);
    out->is_integer_ = integer;
    if (integer) {
      // Exact integer value, when it fits, straight from the digits.
      uint64_t mag = 0;
      bool fits = true;
      for (size_t i = int_begin; i < int_end; ++i) {
        if (__builtin_mul_overflow(mag, uint64_t{10}, &mag) ||
            __builtin_add_overflow(mag, uint64_t(p_[i] - '0'), &mag)) {
          fits = false;
          break;
        }
      }
      if (fits && !negative) {
        out->has_u64_ = true;
        out->u64_ = mag;
        if (mag <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          out->has_i64_ = true;
          out->i64_ = static_cast<int64_t>(mag);
        }
      } else if (fits && mag <= uint64_t{1} << 63) {
        out->has_i64_ = true;
        out->i64_ = mag == uint64_t{1} << 63 ? std::numeric_limits<int64_t>::min()
                                             : -static_cast<int64_t>(mag);
      }
    }
    double d = 0;
    auto r = std::from_chars(text, text + len, d);
    if (r.ec == std::errc::result_out_of_range) {
      d = OutOfRangeValue(int_begin, int_end, negative);
    } else if (r.ec != std::errc() || r.ptr != text + len) {
      return Error(start, "number cannot be converted");  // not reached for valid syntax
    }
    out->double_ = d;
    return absl::OkStatus();
  }

  // from_chars leaves the value unset when it is out of range; decide from
  // the decimal exponent of the leading digit whether it overflowed (inf) or
  // underflowed (0). The source text is kept either way.
  double OutOfRangeValue(size_t int_begin, size_t int_end, bool negative) const {
    int64_t lead = 0;  // decimal exponent of the first nonzero digit
    bool found = false;
    for (size_t i = int_begin; i < int_end && !found; ++i) {
      if (p_[i] != '0') {
        lead = static_cast<int64_t>(int_end - i) - 1;
        found = true;
      }
    }
    size_t i = int_end;
    if (!found && i < pos_ && p_[i] == '.') {
      ++i;
      for (int64_t k = 1; i < pos_ && IsDigit(p_[i]); ++i, ++k) {
        if (p_[i] != '0') {
          lead = -k;
          found = true;
          break;
        }
      }
    }
    while (i < pos_ && p_[i] != 'e' && p_[i] != 'E') ++i;
    int64_t exp = 0;
    if (i < pos_) {
      ++i;
      bool eneg = false;
      if (p_[i] == '+' || p_[i] == '-') eneg = p_[i++] == '-';
      for (; i < pos_; ++i) {
        exp = exp * 10 + (p_[i] - '0');
        if (exp > 1'000'000'000) break;  // saturate: only the sign matters now
      }
      if (eneg) exp = -exp;
    }
    double mag = found && lead + exp > 0 ? std::numeric_limits<double>::infinity() : 0.0;
    return negative ? -mag : mag;
  }

  const unsigned char* p_;
  size_t n_;
  size_t pos_ = 0;
  const JsonLimits& limits_;
  uint64_t values_ = 0;
};

absl::StatusOr<JsonValue> ParseJson(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("JSON document is ", text.size(),
                                                     " bytes, over the limit of ", limits.max_bytes));
  }
  return JsonParser(text, limits).ParseDocument();
}

// ---- writer -----------------------------------------------------------------

void AppendJsonQuoted(std::string_view s, std::string* out) {
  static const char kHex[] = "0123456789abcdef";
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  out->push_back('"');
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = p[i];
    if (c >= 0x80) {
      // JSON text is UTF-8 and has no escape for a byte: a byte that is not
      // part of well-formed UTF-8 is written as U+FFFD, as decoders show it.
      const size_t len = Utf8SequenceLength(p + i, s.size() - i);
      if (len > 0) {
        i += len - 1;
        continue;
      }
      out->append(s.data() + run, i - run);
      out->append("\\ufffd");
      run = i + 1;
      continue;
    }
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        out->append("\\u00");
        out->push_back(kHex[c >> 4]);
        out->push_back(kHex[c & 15]);
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

std::string JsonQuote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  AppendJsonQuoted(s, &out);
  return out;
}

void AppendJson(const JsonValue& value, std::string* out) {
  switch (value.type()) {
    case JsonType::kNull: out->append("null"); return;
    case JsonType::kBool: out->append(value.bool_value() ? "true" : "false"); return;
    case JsonType::kNumber: out->append(value.number_text()); return;
    case JsonType::kString: AppendJsonQuoted(value.string_value(), out); return;
    case JsonType::kArray: {
      out->push_back('[');
      bool first = true;
      for (const auto& e : value.array()) {
        if (!first) out->push_back(',');
        first = false;
        AppendJson(e, out);
      }
      out->push_back(']');
      return;
    }
    case JsonType::kObject: {
      out->push_back('{');
      bool first = true;
      for (const auto& [k, v] : value.object()) {
        if (!first) out->push_back(',');
        first = false;
        AppendJsonQuoted(k, out);
        out->push_back(':');
        AppendJson(v, out);
      }
      out->push_back('}');
      return;
    }
  }
}

std::string SerializeJson(const JsonValue& value) {
  std::string out;
  AppendJson(value, &out);
  return out;
}

std::optional<size_t> FirstInvalidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    size_t len = Utf8SequenceLength(p + i, s.size() - i);
    if (len == 0) return i;
    i += len;
  }
  return std::nullopt;
}

bool IsValidUtf8(std::string_view s) { return !FirstInvalidUtf8(s).has_value(); }

}  // namespace boltpack::io
