#include "common/write_behind.h"

#include <pthread.h>

#include <utility>

#include "common/status_macros.h"

namespace boltpack::io {

WriteBehind::WriteBehind(WriteFn write) : write_(std::move(write)), thread_([this] { Loop(); }) {}

WriteBehind::~WriteBehind() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    if (status_.ok()) status_ = absl::CancelledError("the file was abandoned");  // skip the rest
  }
  work_cv_.notify_all();
  thread_.join();
  retired_.clear();
}

void WriteBehind::Loop() {
  // Named, so profiles and `top -H` tell the writing thread from the reading one.
  pthread_setname_np(pthread_self(), "bolt-pack-write");
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [this] { return !queue_.empty() || stop_; });
    if (queue_.empty()) return;
    Entry e = std::move(queue_.front());
    queue_.pop_front();
    const bool write = status_.ok();
    lock.unlock();
    absl::Span<const uint8_t> bytes = e.owned.empty() ? e.bytes : absl::MakeConstSpan(e.owned);
    absl::Status st = write && !bytes.empty() ? write_(bytes) : absl::OkStatus();
    const uint64_t size = bytes.size();
    std::shared_ptr<const void> keep = std::move(e.keep);
    e = Entry();
    lock.lock();
    // Dropped by the caller (a source's destructor releases its pages: work
    // this thread, the busier one, need not do).
    if (keep != nullptr) retired_.push_back(std::move(keep));
    if (!st.ok() && status_.ok()) status_ = std::move(st);
    queued_bytes_ -= size;
    ++done_;
    if (done_ >= wake_at_) done_cv_.notify_one();
  }
}

absl::StatusOr<uint64_t> WriteBehind::Queue(absl::Span<const uint8_t> bytes, std::vector<uint8_t> owned,
                                           std::shared_ptr<const void> keep) {
  const uint64_t size = owned.empty() ? bytes.size() : owned.size();
  std::unique_lock<std::mutex> lock(mu_);
  // One entry larger than the bound still goes, alone.
  while (queued_bytes_ != 0 && queued_bytes_ + size > kWriteBehindBytes) WaitUntilDone(lock, done_ + 1);
  queue_.push_back({bytes, std::move(owned), std::move(keep)});
  queued_bytes_ += size;
  const uint64_t ticket = ++queued_;
  work_cv_.notify_one();
  BP_RETURN_IF_ERROR(StatusDroppingRetired(lock));
  return ticket;
}

absl::Status WriteBehind::StatusDroppingRetired(std::unique_lock<std::mutex>& lock) {
  absl::Status status = status_;
  std::vector<std::shared_ptr<const void>> retired;
  retired.swap(retired_);
  lock.unlock();
  retired.clear();  // outside the lock: a keep's destructor may take time
  return status;
}

void WriteBehind::WaitUntilDone(std::unique_lock<std::mutex>& lock, uint64_t count) {
  while (done_ < count) {
    wake_at_ = count;
    done_cv_.wait(lock);
  }
  wake_at_ = UINT64_MAX;
}

void WriteBehind::WaitWritten(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  WaitUntilDone(lock, ticket);
}

absl::Status WriteBehind::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  WaitUntilDone(lock, queued_);
  return StatusDroppingRetired(lock);
}

}  // namespace boltpack::io
