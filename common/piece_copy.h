// Moving a PieceSource to a sink in parts of at most kPiecePartBytes: the
// part's check (source checksums) and hashing run on a side thread while
// the caller writes it, so a copy costs about its write alone. Memory is
// bounded by a part; the parts of a piece are consecutive in it.
#ifndef BOLTPACK_COMMON_PIECE_COPY_H_
#define BOLTPACK_COMMON_PIECE_COPY_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "absl/status/status.h"
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

// Copies every piece of `src` (exactly src.size() bytes) to `write`, part by
// part; `hash` (may be empty) sees every part in order after its Check
// passed. With `side` the check and hash of a part run there while `write`
// runs here (parts of fewer than 64 KiB run inline: a thread hand-off would
// cost more); without it, a part is checked before it is written.
absl::Status CopyPieces(PieceSource& src, SideWorker* side,
                        const std::function<absl::Status(absl::Span<const uint8_t>)>& write,
                        const std::function<void(absl::Span<const uint8_t>)>& hash);

}  // namespace boltpack

#endif  // BOLTPACK_COMMON_PIECE_COPY_H_
