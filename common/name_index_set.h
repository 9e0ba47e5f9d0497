// A set of items of a list (tensors, declarations) held as their indices,
// hashed and compared by the names they index: 4 bytes a slot where a set
// of views takes 16 and a node set ~56, so the names of 1M tensors are
// checked for duplicates with 10 MB. Transparent: found by a name too.
#ifndef BOLTPACK_COMMON_NAME_INDEX_SET_H_
#define BOLTPACK_COMMON_NAME_INDEX_SET_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"

namespace boltpack {

// T has a `name` a std::string_view is made from.
template <typename T>
struct ByNameHash {
  using is_transparent = void;
  const T* items = nullptr;
  size_t operator()(std::string_view name) const { return absl::Hash<std::string_view>()(name); }
  size_t operator()(uint32_t i) const { return (*this)(items[i].name); }
};
template <typename T>
struct ByNameEq {
  using is_transparent = void;
  const T* items = nullptr;
  std::string_view Name(std::string_view name) const { return name; }
  std::string_view Name(uint32_t i) const { return items[i].name; }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const { return Name(a) == Name(b); }
};
template <typename T>
using NameIndexSet = absl::flat_hash_set<uint32_t, ByNameHash<T>, ByNameEq<T>>;

// An empty set over `items` (which must not move while it is used), room for `n`.
template <typename T>
NameIndexSet<T> MakeNameIndexSet(const T* items, size_t n) {
  return NameIndexSet<T>(n, ByNameHash<T>{items}, ByNameEq<T>{items});
}

}  // namespace boltpack

#endif  // BOLTPACK_COMMON_NAME_INDEX_SET_H_
