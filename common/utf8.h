// UTF-8 validity (Unicode Table 3-7: no overlong forms, surrogates or code
// points past U+10FFFF), as protobuf checks a `string` field when it parses:
// a manifest whose tensor name or key is not UTF-8 serializes but never
// parses back, so writers check names with this before they write them.
#ifndef BOLTPACK_COMMON_UTF8_H_
#define BOLTPACK_COMMON_UTF8_H_

#include <cstddef>
#include <optional>
#include <string_view>

namespace boltpack {

// Offset of the first byte that does not start a valid sequence, if any.
inline std::optional<size_t> FirstNonUtf8Byte(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i < n && p[i] >= lo && p[i] <= hi;
  };
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    size_t len = 0;
    if (c < 0x80) len = 1;
    else if (c < 0xC2) len = 0;  // stray continuation byte or overlong 2-byte form
    else if (c < 0xE0) len = cont(i + 1) ? 2 : 0;
    else if (c < 0xF0) len = cont(i + 1, c == 0xE0 ? 0xA0 : 0x80, c == 0xED ? 0x9F : 0xBF) && cont(i + 2) ? 3 : 0;
    else if (c < 0xF5) len = cont(i + 1, c == 0xF0 ? 0x90 : 0x80, c == 0xF4 ? 0x8F : 0xBF) && cont(i + 2) && cont(i + 3) ? 4 : 0;
    if (len == 0) return i;
    i += len;
  }
  return std::nullopt;
}

inline bool IsUtf8(std::string_view s) { return !FirstNonUtf8Byte(s).has_value(); }

}  // namespace boltpack

#endif  // BOLTPACK_COMMON_UTF8_H_
