// The one rule for the short names a file gives its parts: codec ids
// (spec/container.md §6.8) and view names (§15.1): 1..64 bytes of
// [a-z0-9_-], starting with a letter or digit, so that they are safe in
// file names, command lines and messages as they are.
#ifndef BOLTPACK_COMMON_LOWER_NAME_H_
#define BOLTPACK_COMMON_LOWER_NAME_H_

#include <cstddef>
#include <string_view>

namespace boltpack {

inline constexpr size_t kMaxLowerNameBytes = 64;

constexpr bool IsLowerName(std::string_view name) {
  if (name.empty() || name.size() > kMaxLowerNameBytes) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (i > 0 && (c == '_' || c == '-'));
    if (!ok) return false;
  }
  return true;
}

}  // namespace boltpack

#endif  // BOLTPACK_COMMON_LOWER_NAME_H_
