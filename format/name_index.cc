#include "format/name_index.h"

#include <algorithm>
#include <cstring>

namespace boltpack::format {

NameIndex::NameIndex()
    : store_(std::make_unique<Store>()), set_(0, Hash{store_.get()}, Eq{store_.get()}) {}

void NameIndex::reserve(size_t names) {
  set_.reserve(names);
  reserved_ = names;
}

std::optional<std::string_view> NameIndex::Insert(std::string_view name) {
  // The name is stored first and taken back if it was already there: one
  // hash lookup a name, not two (1M names are mostly cache misses).
  Store& s = *store_;
  if (s.names.empty()) s.names.reserve(reserved_);
  // Blocks grow from 4 KiB to 1 MiB, left uninitialized: most files have a
  // few hundred names, and a zeroed 1 MiB block per index was a fifth of
  // the pipeline fuzzer's time (memset and page faults).
  constexpr size_t kFirstBlockBytes = size_t{4} << 10, kMaxBlockBytes = size_t{1} << 20;
  if (s.blocks.empty() || s.block_size - s.block_used < name.size()) {
    const size_t next = s.blocks.empty() ? kFirstBlockBytes : std::min(2 * s.block_size, kMaxBlockBytes);
    s.block_size = std::max(next, name.size());
    s.blocks.push_back(std::make_unique_for_overwrite<char[]>(s.block_size));
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
  if (!s.by_view) {
    s.by_view = true;
    s.offsets.reserve(reserved_);
    s.lengths.reserve(reserved_);
  }
  if (s.base == nullptr && !name.empty()) s.base = name.data();
  s.offsets.push_back(name.empty() ? 0 : static_cast<uint32_t>(name.data() - s.base));
  s.lengths.push_back(static_cast<uint16_t>(name.size()));
  if (!set_.insert(static_cast<uint32_t>(s.offsets.size() - 1)).second) {
    s.offsets.pop_back();
    s.lengths.pop_back();
    return std::nullopt;
  }
  return name;
}

}  // namespace boltpack::format
