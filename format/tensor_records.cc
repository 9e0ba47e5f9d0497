#include "format/tensor_records.h"

#include <malloc.h>

#include <algorithm>
#include <utility>

#include "format/manifest_stream.h"
#include "format/tensor_wire.h"

namespace boltpack::format {

void TensorRecords::AppendRecord(const TensorInfo& info, std::string* out) {
  AppendTensorWire(info, out, kManifestTensorsField);
}

void TensorRecords::Add(const TensorInfo& info, bool pending) {
  constexpr size_t kBlockBytes = size_t{1} << 20;
  if (pending) {
    held_.push_back({blocks_.size(), count_, info});
    blocks_.emplace_back();  // the records after it
  } else {
    if (blocks_.empty() || blocks_.back().size() >= kBlockBytes) {
      blocks_.emplace_back();
      blocks_.back().reserve(kBlockBytes + 4096);
    }
    AppendRecord(info, &blocks_.back());
  }
  ++count_;
}

TensorInfo* TensorRecords::Pending(size_t index) {
  auto it = std::lower_bound(held_.begin(), held_.end(), index, [](const Held& h, size_t i) { return h.index < i; });
  return it != held_.end() && it->index == index ? &it->info : nullptr;
}

std::string TensorRecords::Serialize(v1::Manifest& head, std::vector<std::string>& metadata) {
  // Fields after the tensors move to a tail message for the moment.
  v1::Manifest tail;
  if (head.has_elastic()) tail.set_allocated_elastic(head.release_elastic());
  tail.mutable_views()->Swap(head.mutable_views());
  tail.set_writer(head.writer());
  head.clear_writer();
  const std::string first = head.SerializeAsString();
  const std::string last = tail.SerializeAsString();
  if (tail.has_elastic()) head.set_allocated_elastic(tail.release_elastic());
  head.mutable_views()->Swap(tail.mutable_views());
  head.set_writer(tail.writer());

  size_t total = first.size() + last.size();
  for (const auto& e : metadata) total += e.size();
  for (const auto& b : blocks_) total += b.size();
  std::string out;
  out.reserve(total + held_.size() * 64);
  out += first;
  for (auto& e : metadata) {
    out += e;
    std::string().swap(e);
  }
  metadata.clear();
  size_t next_held = 0;
  for (size_t b = 0; b <= blocks_.size(); ++b) {
    for (; next_held < held_.size() && held_[next_held].block == b; ++next_held) {
      AppendRecord(held_[next_held].info, &out);
    }
    if (b == blocks_.size()) break;
    out += blocks_[b];
    std::string().swap(blocks_[b]);
    // Blocks of 1 MiB come from the heap once malloc's mmap threshold has
    // grown past them, and a freed one below the top stays resident: the
    // copy's pages would add to the blocks' instead of replacing them
    // (copying 1M records, 46 MB, held both).
    if (b % 8 == 7) malloc_trim(0);
  }
  out += last;
  blocks_.clear();
  held_.clear();
  count_ = 0;
  return out;
}

}  // namespace boltpack::format
