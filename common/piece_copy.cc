#include "common/piece_copy.h"

#include <algorithm>
#include <deque>

#include "common/status_macros.h"
#include "common/str_cat.h"

namespace boltpack {
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

namespace {

// Fetches every piece of `src` and cuts it into parts of at most
// kPiecePartBytes; each part passes Check and `hash` before `deliver(part,
// ends_piece)` takes it. `may_fetch(given)` runs before every Next (given:
// pieces fetched so far). Either returning false ends the loop with OK: the
// caller stopped.
absl::Status ForEachCheckedPart(PieceSource& src, const std::function<void(absl::Span<const uint8_t>)>& hash,
                                const std::function<bool(uint64_t)>& may_fetch,
                                const std::function<absl::StatusOr<bool>(absl::Span<const uint8_t>, bool)>& deliver) {
  const uint64_t size = src.size();
  uint64_t done = 0;
  for (uint64_t given = 0;; ++given) {
    if (!may_fetch(given)) return absl::OkStatus();
    BP_ASSIGN_OR_RETURN(absl::Span<const uint8_t> piece, src.Next());
    if (piece.empty()) break;
    if (piece.size() > size - done) {
      return absl::InternalError(StrCat("a piece source gave more than its ", size, " bytes"));
    }
    for (absl::Span<const uint8_t> rest = piece; !rest.empty();) {
      auto part = rest.subspan(0, std::min<uint64_t>(rest.size(), kPiecePartBytes));
      rest.remove_prefix(part.size());
      BP_RETURN_IF_ERROR(src.Check(part));
      if (hash) hash(part);
      BP_ASSIGN_OR_RETURN(bool more, deliver(part, rest.empty()));
      if (!more) return absl::OkStatus();
      done += part.size();
    }
  }
  if (done != size) return absl::InternalError(StrCat("a piece source gave ", done, " of its ", size, " bytes"));
  return absl::OkStatus();
}

// The side thread produces parts (Next, Check, hash) into a short queue;
// the caller writes them. The producer runs at most LivePieces() - 1 pieces
// ahead of the last piece written whole, so no piece is overwritten (a
// gathered buffer reused) while it is still to be written.
class PartQueue {
 public:
  struct Part {
    absl::Span<const uint8_t> bytes;
    bool ends_piece = false;
  };
  PartQueue(PieceSource& src, const std::function<void(absl::Span<const uint8_t>)>& hash)
      : src_(src), hash_(hash), live_(std::max(1, src.LivePieces())) {}

  // The side thread's job.
  void Produce() {
    absl::Status st = ProduceAll();
    std::lock_guard<std::mutex> lock(mu_);
    produced_ = std::move(st);
    producer_done_ = true;
    if (consumer_waiting_) consumer_cv_.notify_one();
  }

  // The caller's loop; returns the first error of either side.
  absl::Status Consume(const std::function<absl::Status(absl::Span<const uint8_t>)>& write) {
    for (;;) {
      Part part;
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (parts_.empty() && !producer_done_) {
          consumer_waiting_ = true;
          consumer_cv_.wait(lock, [this] { return !parts_.empty() || producer_done_; });
          consumer_waiting_ = false;
        }
        if (parts_.empty() || !produced_.ok()) return produced_;
        part = parts_.front();
        parts_.pop_front();
        if (producer_waiting_) producer_cv_.notify_one();
      }
      absl::Status written = write(part.bytes);
      std::lock_guard<std::mutex> lock(mu_);
      if (!written.ok()) {
        stop_ = true;
        if (producer_waiting_) producer_cv_.notify_one();
        return written;
      }
      if (part.ends_piece) {
        ++pieces_written_;
        if (producer_waiting_) producer_cv_.notify_one();
      }
    }
  }

 private:
  static constexpr size_t kMaxQueuedParts = 4;

  absl::Status ProduceAll() {
    return ForEachCheckedPart(
        src_, hash_,
        // Next may retire the piece given `live_` calls ago: it must be written.
        [&](uint64_t given) { return WaitUntil([&] { return given - pieces_written_ < static_cast<uint64_t>(live_); }); },
        [&](absl::Span<const uint8_t> part, bool ends_piece) -> absl::StatusOr<bool> {
          if (!WaitUntil([&] { return parts_.size() < kMaxQueuedParts; })) return false;
          std::lock_guard<std::mutex> lock(mu_);
          parts_.push_back({part, ends_piece});
          if (consumer_waiting_) consumer_cv_.notify_one();
          return true;
        });
  }

  // Waits (producer side) until `ready` holds; false when the consumer
  // stopped.
  template <typename Ready>
  bool WaitUntil(Ready ready) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!ready() && !stop_) {
      producer_waiting_ = true;
      producer_cv_.wait(lock, [&] { return ready() || stop_; });
      producer_waiting_ = false;
    }
    return !stop_;
  }

  PieceSource& src_;
  const std::function<void(absl::Span<const uint8_t>)>& hash_;
  const int live_;
  std::mutex mu_;
  std::condition_variable producer_cv_, consumer_cv_;
  bool producer_waiting_ = false, consumer_waiting_ = false;
  std::deque<Part> parts_;
  uint64_t pieces_written_ = 0;
  bool producer_done_ = false, stop_ = false;
  absl::Status produced_;
};

}  // namespace

absl::Status CopyPieces(PieceSource& src, SideWorker* side,
                        const std::function<absl::Status(absl::Span<const uint8_t>)>& write,
                        const std::function<void(absl::Span<const uint8_t>)>& hash) {
  if (side == nullptr) {
    return ForEachCheckedPart(
        src, hash, [](uint64_t) { return true; },
        [&](absl::Span<const uint8_t> part, bool) -> absl::StatusOr<bool> {
          BP_RETURN_IF_ERROR(write(part));
          return true;
        });
  }
  PartQueue queue(src, hash);
  side->Start([&queue] { queue.Produce(); });
  absl::Status st = queue.Consume(write);
  side->Wait();
  return st;
}

absl::Status CopyPiecesBehind(std::shared_ptr<PieceSource> src, QueuedSink& sink,
                              const std::function<void(absl::Span<const uint8_t>)>& hash) {
  const size_t live = static_cast<size_t>(std::max(1, src->LivePieces()));
  std::deque<uint64_t> piece_tickets;  // the last part's ticket of each live piece, oldest first
  absl::Status st = ForEachCheckedPart(
      *src, hash,
      // Next retires the piece given `live` calls ago: it must be written.
      [&](uint64_t) {
        if (piece_tickets.size() == live) {
          sink.WaitWritten(piece_tickets.front());
          piece_tickets.pop_front();
        }
        return true;
      },
      [&](absl::Span<const uint8_t> part, bool ends_piece) -> absl::StatusOr<bool> {
        BP_ASSIGN_OR_RETURN(uint64_t ticket, sink.QueueWrite(part, nullptr));
        if (ends_piece) piece_tickets.push_back(ticket);
        return true;
      });
  // Queued even after an error: parts already queued may still be written.
  absl::Status kept = sink.QueueWrite({}, std::move(src)).status();
  return st.ok() ? kept : st;
}

SideWorker* SideWorkerFor(std::unique_ptr<SideWorker>& side, uint64_t bytes) {
  if (bytes < kSideCopyMinBytes) return nullptr;
  if (side == nullptr) side = std::make_unique<SideWorker>();
  return side.get();
}

}  // namespace boltpack
