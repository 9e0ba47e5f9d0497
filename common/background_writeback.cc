#include "common/background_writeback.h"

#include <fcntl.h>

namespace boltpack::io {

BackgroundWriteback::BackgroundWriteback(int fd) : fd_(fd), thread_([this] { Loop(); }) {}

BackgroundWriteback::~BackgroundWriteback() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void BackgroundWriteback::Request(uint64_t end) {
  std::lock_guard<std::mutex> lock(mu_);
  if (end <= requested_) return;
  requested_ = end;
  if (idle_) cv_.notify_one();
}

void BackgroundWriteback::Loop() {
  uint64_t started = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    idle_ = true;
    cv_.wait(lock, [this, started] { return stop_ || requested_ > started; });
    idle_ = false;
    if (stop_) return;
    uint64_t end = requested_;
    lock.unlock();
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
    // Asynchronous and best effort: Commit's fsync is what guarantees the
    // bytes are on disk, so a failure here changes nothing.
    ::sync_file_range(fd_, static_cast<off_t>(started), static_cast<off_t>(end - started), SYNC_FILE_RANGE_WRITE);
#endif
    started = end;
    lock.lock();
  }
}

}  // namespace boltpack::io
