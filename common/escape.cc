#include "common/escape.h"

#include <cstdint>

namespace boltpack {
namespace {

// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or 0 if there is none.
size_t Utf8SequenceAt(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

bool IsControl(std::string_view s, size_t i, size_t len) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  if (len == 1) return b0 < 0x20 || b0 == 0x7F;
  return len == 2 && b0 == 0xC2 && static_cast<uint8_t>(s[i + 1]) < 0xA0;  // U+0080..U+009F
}

void AppendHex(uint8_t b, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->append("\\x");
  out->push_back(kHex[b >> 4]);
  out->push_back(kHex[b & 15]);
}

}  // namespace

std::string EscapeForDisplay(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t len = Utf8SequenceAt(s, i);
    if (len == 0) {
      AppendHex(static_cast<uint8_t>(s[i]), &out);
      ++i;
      continue;
    }
    if (IsControl(s, i, len)) {
      for (size_t k = 0; k < len; ++k) AppendHex(static_cast<uint8_t>(s[i + k]), &out);
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

std::string QuoteForDisplay(std::string_view s, size_t max_bytes) {
  bool cut = max_bytes != 0 && s.size() > max_bytes;
  if (cut) {
    size_t end = max_bytes;
    // Back up to a character boundary, but never past 3 continuation bytes.
    for (size_t k = 0; k < 3 && end > 0 && (static_cast<uint8_t>(s[end]) & 0xC0) == 0x80; ++k) --end;
    s = s.substr(0, end);
  }
  return "\"" + EscapeForDisplay(s) + (cut ? "\"..." : "\"");
}

}  // namespace boltpack
