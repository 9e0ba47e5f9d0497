#include "format/name_index.h"

#include <algorithm>
#include <cstring>

namespace boltpack::format {

std::optional<std::string_view> NameIndex::Insert(std::string_view name, uint32_t index) {
  // The name is copied first and taken back if it is already there: one
  // hash lookup a name, not two (1M names are mostly cache misses).
  if (blocks_.empty() || block_size_ - block_used_ < name.size()) {
    block_size_ = std::max(kBlockBytes, name.size());
    blocks_.push_back(std::make_unique<char[]>(block_size_));
    block_used_ = 0;
  }
  char* at = blocks_.back().get() + block_used_;
  if (!name.empty()) std::memcpy(at, name.data(), name.size());
  const std::string_view stored(at, name.size());
  if (!index_.emplace(stored, index).second) return std::nullopt;
  block_used_ += name.size();
  return stored;
}

}  // namespace boltpack::format
