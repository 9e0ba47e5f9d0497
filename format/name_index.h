// Tensor names by index, each name stored once in blocks that never move
// (a hash map of views into them), so a manifest of 1M tensors is indexed
// in about 30 MB: no string object or allocation per name.
#ifndef BOLTPACK_FORMAT_NAME_INDEX_H_
#define BOLTPACK_FORMAT_NAME_INDEX_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace boltpack::format {

class NameIndex {
 public:
  void reserve(size_t names) { index_.reserve(names); }
  bool contains(std::string_view name) const { return index_.contains(name); }
  // Stores `name` as number `index`; false (and nothing stored) if it is
  // already there. The view returned lives as long as the index.
  std::optional<std::string_view> Insert(std::string_view name, uint32_t index);
  std::optional<size_t> Find(std::string_view name) const {
    auto it = index_.find(name);
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }

 private:
  static constexpr size_t kBlockBytes = size_t{1} << 20;
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t block_used_ = kBlockBytes;
  size_t block_size_ = kBlockBytes;
  absl::flat_hash_map<std::string_view, uint32_t> index_;
};

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_NAME_INDEX_H_
