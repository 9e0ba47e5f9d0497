// An output file that appears only when complete: bytes go to a temporary
// file in the destination folder; Commit() fsyncs it, renames it over the
// destination and fsyncs the folder. Destroyed uncommitted, it is removed.
// Not durable (`--no-fsync`): no writeback requests and no fsyncs, as cp
// does; the rename still shows only a complete file while the system runs,
// but a crash soon after may leave it empty or short under its name.
//
// Writes are made on the caller's thread until the first QueueWrite; from
// then on a thread of the file's own makes every write, in the order they
// were asked for (io/write_behind.h), and calls that need them done
// (Overwrite, Commit, a large Write) wait for it.
#ifndef BOLTPACK_IO_ATOMIC_FILE_H_
#define BOLTPACK_IO_ATOMIC_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/piece_copy.h"
#include "io/background_writeback.h"
#include "io/write_behind.h"

namespace boltpack::io {

class AtomicFile final : public QueuedSink {
 public:
  // Fails if `path` names one of `inputs` (same file, by device and inode,
  // or the same path) or a folder that does not exist.
  static absl::StatusOr<std::unique_ptr<AtomicFile>> Create(
      const std::string& path, const std::vector<std::string>& inputs, bool durable = true);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  absl::Status Write(absl::Span<const uint8_t> bytes);
  absl::Status WriteZeros(uint64_t count);
  // Pads with zeros up to a multiple of `alignment`.
  absl::Status PadTo(uint64_t alignment);
  uint64_t position() const { return position_; }
  // Rewrites bytes already written (e.g. a header whose fields are known only
  // at the end); [offset, offset + size) must lie before position().
  absl::Status Overwrite(uint64_t offset, absl::Span<const uint8_t> bytes);
  absl::Status Commit();
  const std::string& path() const { return path_; }

  // Queues `bytes` to be written behind the caller and returns their
  // ticket; they must stay valid until WaitWritten(ticket) returns, and
  // `keep` is dropped once they are written (by a later call). The first
  // write error of the thread is returned by the next call.
  absl::StatusOr<uint64_t> QueueWrite(absl::Span<const uint8_t> bytes, std::shared_ptr<const void> keep) override;
  void WaitWritten(uint64_t ticket) override;
  // Waits for every queued write; the first error of any.
  absl::Status Drain();

 private:
  AtomicFile(std::string path, std::string temp_path, int fd)
      : path_(std::move(path)), temp_path_(std::move(temp_path)), fd_(fd) {}
  // Writes the buffered bytes (queues them, once writes go behind).
  absl::Status Flush();
  // Writes `bytes` at the end of the file, on whichever thread writes.
  absl::Status WriteOut(absl::Span<const uint8_t> bytes);
  // Reserves the file's blocks up to `end` (kReserveBytes at a time);
  // an error only when the disk is full.
  absl::Status Reserve(uint64_t end);
  // Has the writeback thread start writeback of what was written since the
  // last request, once that is kWritebackBytes or more.
  void StartWriteback();
  std::string path_;
  std::string temp_path_;
  int fd_;
  uint64_t position_ = 0;  // bytes written or queued
  uint64_t written_ = 0;   // bytes written to fd_ (by the thread that writes)
  uint64_t reserved_ = 0;  // blocks before this are allocated (by that thread)
  bool reserve_ = true;    // false where fallocate is not supported
  uint64_t writeback_from_ = 0;  // bytes before this have had writeback requested
  std::unique_ptr<BackgroundWriteback> writeback_;  // from the first request on
  bool committed_ = false;
  bool durable_ = true;
  std::vector<uint8_t> buffer_;
  // From the first QueueWrite until Commit; the destructor joins its thread
  // before it closes fd_.
  std::unique_ptr<WriteBehind> behind_;
};

// Appends every piece of `pieces` to `file`, checked part by part (source
// checksums): queued behind the caller when `behind` owns them
// (CopyPiecesBehind), else written here while `side`, created on first use
// for a large stream, fetches and checks the next parts (CopyPieces).
absl::Status AppendPieces(AtomicFile& file, PieceSource& pieces, std::shared_ptr<PieceSource> behind,
                          std::unique_ptr<SideWorker>& side);

// Fails (naming both) if `output` is the same file as one of `inputs`.
absl::Status CheckNotAnInput(const std::string& output, const std::vector<std::string>& inputs);

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_ATOMIC_FILE_H_
