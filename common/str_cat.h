// StrCat that takes std::string_view. Debian's Abseil is built with its own
// absl::string_view (not std::string_view), so absl::StrCat rejects
// std::string_view arguments; this one takes both, plus numbers.
#ifndef BOLTPACK_COMMON_STR_CAT_H_
#define BOLTPACK_COMMON_STR_CAT_H_

#include <charconv>
#include <concepts>
#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/string_view.h"

namespace boltpack {
namespace str_cat_internal {

inline void Append(std::string& out, std::string_view s) { out.append(s.data(), s.size()); }
inline void Append(std::string& out, const std::string& s) { out.append(s); }
inline void Append(std::string& out, const char* s) { out.append(s); }
inline void Append(std::string& out, char c) { out.push_back(c); }
template <typename T>
  requires std::same_as<T, absl::string_view> && (!std::same_as<absl::string_view, std::string_view>)
inline void Append(std::string& out, T s) {
  out.append(s.data(), s.size());
}
template <typename T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, char> && !std::is_same_v<T, bool>)
inline void Append(std::string& out, T v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, r.ptr);
}
inline void Append(std::string& out, bool v) { out.append(v ? "true" : "false"); }
// Enums print as their number.
template <typename T>
  requires std::is_enum_v<T>
inline void Append(std::string& out, T v) {
  Append(out, static_cast<std::underlying_type_t<T>>(v));
}
template <typename T>
  requires std::is_floating_point_v<T>
inline void Append(std::string& out, T v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, r.ptr);
}

}  // namespace str_cat_internal

template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  (str_cat_internal::Append(out, args), ...);
  return out;
}

}  // namespace boltpack

#endif  // BOLTPACK_COMMON_STR_CAT_H_
