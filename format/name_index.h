// Tensor names by index, each name stored once in blocks that never move,
// and a hash set of 4-byte name numbers over them: a manifest of 1M tensors
// is indexed in about 35 MB (a map of string views took 105 MB), with no
// string object or allocation per name.
#ifndef BOLTPACK_FORMAT_NAME_INDEX_H_
#define BOLTPACK_FORMAT_NAME_INDEX_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"

namespace boltpack::format {

class NameIndex {
 public:
  NameIndex();
  void reserve(size_t names);
  // Stores `name` as the next number (0, 1, ...: the order of the calls
  // that returned a view); nullopt (and nothing stored) if it is already
  // there. The view returned lives as long as the index.
  std::optional<std::string_view> Insert(std::string_view name);
  // The same without a copy: the index keeps where `name` lies, so its
  // bytes must outlive the index. Every name given so must lie in one
  // buffer, at or after the first one's (a manifest's names in file
  // order), within 4 GiB of it, and be at most 65535 bytes; an index takes
  // names one way only (Insert or InsertView).
  std::optional<std::string_view> InsertView(std::string_view name);
  // Starts loading the table's slots for `name` into cache, for an Insert
  // or InsertView of it a little later (1M names: the table's cache misses
  // were most of their cost).
  void Prefetch(std::string_view name) const { set_.prefetch(name); }
  // The name numbered `n`.
  std::string_view Name(size_t n) const { return store_->Name(n); }
  size_t size() const { return store_->size(); }
  std::optional<size_t> Find(std::string_view name) const {
    auto it = set_.find(name);
    if (it == set_.end()) return std::nullopt;
    return *it;
  }

 private:
  struct Store {
    // Insert: copies in blocks that never move, and views of them.
    std::vector<std::unique_ptr<char[]>> blocks;
    size_t block_used = 0;
    size_t block_size = 0;
    std::vector<std::string_view> names;  // by number
    // InsertView: where each name lies from the first one's start, 6 bytes
    // a name where a view takes 16 (1M tensor names: 10 MB less).
    bool by_view = false;
    const char* base = nullptr;     // the first non-empty name's bytes
    std::vector<uint32_t> offsets;  // by number
    std::vector<uint16_t> lengths;
    std::string_view Name(size_t n) const {
      if (!by_view) return names[n];
      return lengths[n] == 0 ? std::string_view() : std::string_view(base + offsets[n], lengths[n]);
    }
    size_t size() const { return by_view ? offsets.size() : names.size(); }
  };
  // Hash and equality of numbers and views alike, through the store (which
  // stays where it is when the index moves).
  struct Hash {
    using is_transparent = void;
    const Store* store;
    size_t operator()(uint32_t n) const { return absl::Hash<std::string_view>{}(store->Name(n)); }
    size_t operator()(std::string_view s) const { return absl::Hash<std::string_view>{}(s); }
  };
  struct Eq {
    using is_transparent = void;
    const Store* store;
    std::string_view Of(uint32_t n) const { return store->Name(n); }
    std::string_view Of(std::string_view s) const { return s; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const { return Of(a) == Of(b); }
  };
  std::unique_ptr<Store> store_;
  size_t reserved_ = 0;  // names the caller expects
  absl::flat_hash_set<uint32_t, Hash, Eq> set_;
};

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_NAME_INDEX_H_
