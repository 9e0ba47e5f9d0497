// Moving a PieceSource to a sink in parts of at most kPiecePartBytes: the
// parts are fetched, checked (source checksums) and hashed on a side thread
// while the caller writes earlier ones, so a copy costs about its writes
// alone. Memory is bounded by a few parts; the parts of a piece are
// consecutive in it.
#ifndef BOLTPACK_COMMON_PIECE_COPY_H_
#define BOLTPACK_COMMON_PIECE_COPY_H_

#include <condition_variable>
#include <deque>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/piece_source.h"

namespace boltpack {

// Small enough that a part is still in cache when it is hashed and written.
inline constexpr uint64_t kPiecePartBytes = uint64_t{1} << 20;

// One helper thread that runs one job at a time beside its owner: Start a
// job, do other work, Wait. Jobs must not throw.
class SideWorker {
 public:
  SideWorker();
  ~SideWorker();
  SideWorker(const SideWorker&) = delete;
  SideWorker& operator=(const SideWorker&) = delete;
  void Start(std::function<void()> job);
  void Wait();

 private:
  void Loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;
  bool pending_ = false, stop_ = false;
  std::thread thread_;
};

// Streams of fewer bytes are copied inline: a thread hand-off would cost
// more than the overlap saves.
inline constexpr uint64_t kSideCopyMinBytes = uint64_t{1} << 20;

// Copies every piece of `src` (exactly src.size() bytes) to `write`, part by
// part; every part passes src.Check and is seen by `hash` (may be empty),
// in order, before it is written. With `side`, that thread fetches, checks
// and hashes parts up to a few ahead of the one `write` is writing here (as
// far as src.LivePieces() allows), so a copy costs about its writes alone;
// without it, all runs here.
absl::Status CopyPieces(PieceSource& src, SideWorker* side,
                        const std::function<absl::Status(absl::Span<const uint8_t>)>& write,
                        const std::function<void(absl::Span<const uint8_t>)>& hash);

// Where CopyPiecesBehind queues parts: a file whose own thread writes them
// in order behind the caller (io::AtomicFile::QueueWrite).
class QueuedSink {
 public:
  // Queues `bytes`, which must stay valid until written, and returns the
  // write's ticket; `keep` is dropped once it is written. An error (an
  // earlier write failed) may come after the bytes were queued.
  virtual absl::StatusOr<uint64_t> QueueWrite(absl::Span<const uint8_t> bytes, std::shared_ptr<const void> keep) = 0;
  // Waits until the write with `ticket` and those before it are done.
  virtual void WaitWritten(uint64_t ticket) = 0;

 protected:
  ~QueuedSink() = default;
};

// The same copy with the roles turned: the caller fetches, checks and
// hashes every part of `src` and queues it on `sink`, which writes it
// behind, and this returns once all are queued, so the next stream's reads
// overlap this one's writes. No piece is retired (a buffer reused by Next)
// before it is written; `src` itself is kept until its last part is
// written. Memory `src`'s pieces point into that it does not own (a
// Reader's mapping) must outlive the sink's writes.
absl::Status CopyPiecesBehind(std::shared_ptr<PieceSource> src, QueuedSink& sink,
                              const std::function<void(absl::Span<const uint8_t>)>& hash);

// The side worker a writer should use for a stream of `bytes`: null below
// kSideCopyMinBytes, else `side`, created on first use.
SideWorker* SideWorkerFor(std::unique_ptr<SideWorker>& side, uint64_t bytes);

}  // namespace boltpack

#endif  // BOLTPACK_COMMON_PIECE_COPY_H_
