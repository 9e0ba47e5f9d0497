// What a reader has already checked of its streams, unit by unit (a chunk,
// or a whole stream that has no chunks): its checksum, and for a zstd unit
// that its frames can hold the raw length the manifest declares. Decodes
// check each unit they read the first time they read it, so a model read
// once is hashed once, however its tensors are cut into row ranges.
//
// Thread-safe: decodes on many threads mark units concurrently; two threads
// that read an unchecked unit at once may both check it, which costs time,
// never correctness.
#ifndef BOLTPACK_FORMAT_STREAM_CHECKS_H_
#define BOLTPACK_FORMAT_STREAM_CHECKS_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "boltpack/tensor_info.h"

namespace boltpack::format {

class StreamChecks {
 public:
  enum Check : uint8_t {
    kChecksum = 1,    // the unit's XXH3-64 matched
    kZstdBound = 2,   // its zstd frames can decompress to its raw length
  };

  // One unit per chunk of every stream, one for a stream without chunks:
  // Begin, then Add for each tensor in order, then Finish. The manifest was
  // validated, so the count is bounded by its size.
  void Begin(size_t tensors) {
    first_stream_.clear();
    first_stream_.reserve(tensors + 1);
    first_stream_.push_back(0);
    first_unit_.assign(1, 0);
  }
  // The next tensor, by the chunk count of each of its streams.
  void Add(const std::vector<uint64_t>& chunk_counts) {
    for (uint64_t n : chunk_counts) {
      first_unit_.push_back(static_cast<uint32_t>(first_unit_.back() + std::max<uint64_t>(n, 1)));
    }
    first_stream_.push_back(static_cast<uint32_t>(first_unit_.size() - 1));
  }
  void Finish() {
    first_unit_.shrink_to_fit();
    flags_ = std::make_unique<std::atomic<uint8_t>[]>(first_unit_.back());
  }
  static uint64_t Units(const StreamInfo& s) { return s.chunks.empty() ? 1 : s.chunks.size(); }

  bool Done(size_t tensor, size_t stream, uint64_t unit, Check c) const {
    return (Flag(tensor, stream, unit).load(std::memory_order_acquire) & c) != 0;
  }
  void Mark(size_t tensor, size_t stream, uint64_t unit, Check c) const {
    Flag(tensor, stream, unit).fetch_or(c, std::memory_order_release);
  }

 private:
  std::atomic<uint8_t>& Flag(size_t tensor, size_t stream, uint64_t unit) const {
    return flags_[first_unit_[first_stream_[tensor] + stream] + unit];
  }
  // A manifest of at most 256 MiB holds fewer than 2^32 streams and units
  // (each takes bytes of it).
  std::vector<uint32_t> first_stream_;  // per tensor: index of its first stream in first_unit_
  std::vector<uint32_t> first_unit_;    // per stream: index of its first unit
  std::unique_ptr<std::atomic<uint8_t>[]> flags_;
};

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_STREAM_CHECKS_H_
