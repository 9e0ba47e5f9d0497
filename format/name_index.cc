#include "format/name_index.h"

#include <algorithm>
#include <cstring>

namespace boltpack::format {

std::optional<std::string_view> NameIndex::Insert(std::string_view name, uint32_t index) {
  if (index_.contains(name)) return std::nullopt;
  if (blocks_.empty() || block_size_ - block_used_ < name.size()) {
    block_size_ = std::max(kBlockBytes, name.size());
    blocks_.push_back(std::make_unique<char[]>(block_size_));
    block_used_ = 0;
  }
  char* at = blocks_.back().get() + block_used_;
  if (!name.empty()) std::memcpy(at, name.data(), name.size());
  block_used_ += name.size();
  std::string_view stored(at, name.size());
  index_.emplace(stored, index);
  return stored;
}

}  // namespace boltpack::format
