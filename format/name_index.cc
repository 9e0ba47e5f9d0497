#include "format/name_index.h"

#include <algorithm>
#include <cstring>

namespace boltpack::format {

NameIndex::NameIndex()
    : store_(std::make_unique<Store>()), set_(0, Hash{store_.get()}, Eq{store_.get()}) {}

void NameIndex::reserve(size_t names) {
  set_.reserve(names);
  store_->names.reserve(names);
}

std::optional<std::string_view> NameIndex::Insert(std::string_view name) {
  // The name is stored first and taken back if it was already there: one
  // hash lookup a name, not two (1M names are mostly cache misses).
  Store& s = *store_;
  constexpr size_t kBlockBytes = size_t{1} << 20;
  if (s.blocks.empty() || s.block_size - s.block_used < name.size()) {
    s.block_size = std::max(kBlockBytes, name.size());
    s.blocks.push_back(std::make_unique<char[]>(s.block_size));
    s.block_used = 0;
  }
  char* at = s.blocks.back().get() + s.block_used;
  if (!name.empty()) std::memcpy(at, name.data(), name.size());
  const std::string_view stored(at, name.size());
  s.names.push_back(stored);
  if (!set_.insert(static_cast<uint32_t>(s.names.size() - 1)).second) {
    s.names.pop_back();
    return std::nullopt;
  }
  s.block_used += name.size();
  return stored;
}

std::optional<std::string_view> NameIndex::InsertView(std::string_view name) {
  Store& s = *store_;
  s.names.push_back(name);
  if (!set_.insert(static_cast<uint32_t>(s.names.size() - 1)).second) {
    s.names.pop_back();
    return std::nullopt;
  }
  return name;
}

}  // namespace boltpack::format
