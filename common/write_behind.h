// Writing behind the caller: one thread writes queued spans in order while
// the caller goes on producing the next ones. `bolt-pack slice` reads,
// verifies and hashes tensor after tensor on its own thread and queues the
// kept bytes here, so the writes of one tensor overlap the reads of the
// next; a copy that waits for its own writes at every tensor's end stalled
// one thread or the other for 15-20 ms in 60 ms (warm, 33 tensors).
//
// Memory stays bounded: Queue blocks while kWriteBehindBytes are queued.
// Bytes queued by reference must stay valid until written; a queued
// `keep` (the owner of those bytes) is dropped once every write queued
// before it and its own are done: by the caller's next call, so that the
// writing thread does only writes. The first write error stops
// the writes after it (they are skipped, their keeps still dropped in
// order) and every later call returns it. One thread at a time calls
// Queue, WaitWritten and Drain: the file's owner.
#ifndef BOLTPACK_COMMON_WRITE_BEHIND_H_
#define BOLTPACK_COMMON_WRITE_BEHIND_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace boltpack::io {

// A few pieces (common/piece_copy.h) in flight: enough that the thread
// always has the next one while the caller produces.
inline constexpr uint64_t kWriteBehindBytes = uint64_t{4} << 20;

class WriteBehind {
 public:
  using WriteFn = std::function<absl::Status(absl::Span<const uint8_t>)>;
  // `write` runs on the thread, one span at a time, in queue order.
  explicit WriteBehind(WriteFn write);
  // Skips what is still queued (dropping the keeps) and joins the thread.
  ~WriteBehind();
  WriteBehind(const WriteBehind&) = delete;
  WriteBehind& operator=(const WriteBehind&) = delete;

  // Queues `bytes` (or, when `owned` is not empty, `owned`, which the
  // queue keeps) and returns the write's ticket, counted from 1. `keep` is
  // dropped once the write is done (by a later Queue or Drain, or the
  // destructor). Waits while the queue is full; the
  // first write error, if one happened (the entry is queued all the same,
  // so its keep is dropped in order).
  absl::StatusOr<uint64_t> Queue(absl::Span<const uint8_t> bytes, std::vector<uint8_t> owned = {},
                                 std::shared_ptr<const void> keep = nullptr);
  // Waits until the write with `ticket` and every one before it are done.
  void WaitWritten(uint64_t ticket);
  // Waits until every queued write is done; the first error of any.
  absl::Status Drain();

 private:
  struct Entry {
    absl::Span<const uint8_t> bytes;
    std::vector<uint8_t> owned;
    std::shared_ptr<const void> keep;
  };
  void Loop();
  // Waits until `count` writes are done; the thread wakes the caller only
  // then, not at every write.
  void WaitUntilDone(std::unique_lock<std::mutex>& lock, uint64_t count);
  // The first write error, after dropping the keeps of writes done (the
  // lock is released).
  absl::Status StatusDroppingRetired(std::unique_lock<std::mutex>& lock);

  const WriteFn write_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Entry> queue_;      // guarded by mu_
  uint64_t queued_bytes_ = 0;    // guarded by mu_: bytes in queue_ and the write in progress
  uint64_t queued_ = 0;          // guarded by mu_: tickets given
  uint64_t done_ = 0;            // guarded by mu_: writes done (or skipped)
  absl::Status status_;          // guarded by mu_: the first write error
  bool stop_ = false;            // guarded by mu_
  uint64_t wake_at_ = UINT64_MAX;  // guarded by mu_: the count of writes done the caller waits for
  std::vector<std::shared_ptr<const void>> retired_;  // guarded by mu_: keeps of writes done
  std::thread thread_;
};

}  // namespace boltpack::io

#endif  // BOLTPACK_COMMON_WRITE_BEHIND_H_
