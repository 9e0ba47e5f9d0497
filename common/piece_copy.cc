#include "common/piece_copy.h"

#include <algorithm>

#include "common/str_cat.h"

namespace boltpack {
namespace {

constexpr uint64_t kMinSideBytes = uint64_t{64} << 10;

}  // namespace

SideWorker::SideWorker() : thread_([this] { Loop(); }) {}

SideWorker::~SideWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void SideWorker::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return pending_ || stop_; });
    if (!pending_) return;
    std::function<void()> job = std::move(job_);
    lock.unlock();
    job();
    lock.lock();
    pending_ = false;
    cv_.notify_all();
  }
}

void SideWorker::Start(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = std::move(job);
    pending_ = true;
  }
  cv_.notify_all();
}

void SideWorker::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !pending_; });
}

absl::Status CopyPieces(PieceSource& src, SideWorker* side,
                        const std::function<absl::Status(absl::Span<const uint8_t>)>& write,
                        const std::function<void(absl::Span<const uint8_t>)>& hash) {
  const uint64_t size = src.size();
  uint64_t done = 0;
  for (;;) {
    absl::StatusOr<absl::Span<const uint8_t>> piece = src.Next();
    if (!piece.ok()) return piece.status();
    if (piece->empty()) break;
    if (piece->size() > size - done) {
      return absl::InternalError(StrCat("a piece source gave more than its ", size, " bytes"));
    }
    for (absl::Span<const uint8_t> rest = *piece; !rest.empty();) {
      auto part = rest.subspan(0, std::min<uint64_t>(rest.size(), kPiecePartBytes));
      rest.remove_prefix(part.size());
      absl::Status checked;
      auto job = [&] {
        checked = src.Check(part);
        if (checked.ok() && hash) hash(part);
      };
      absl::Status written;
      if (side != nullptr && part.size() >= kMinSideBytes) {
        side->Start(job);
        written = write(part);
        side->Wait();
      } else {
        job();
        if (checked.ok()) written = write(part);
      }
      if (!checked.ok()) return checked;
      if (!written.ok()) return written;
      done += part.size();
    }
  }
  if (done != size) return absl::InternalError(StrCat("a piece source gave ", done, " of its ", size, " bytes"));
  return absl::OkStatus();
}

}  // namespace boltpack
