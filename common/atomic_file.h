// An output file that appears only when complete, and never leaves a
// trace otherwise. Its bytes go to an unnamed file in the destination folder
// (O_TMPFILE); Commit() fsyncs it, links it into place (linkat through
// /proc/self/fd: AT_EMPTY_PATH would need a capability) and fsyncs the
// folder. Killed at any moment before that, even by SIGKILL, the process
// leaves nothing: the file never had a name. Where a destination exists,
// linkat cannot replace it: the file is linked to a hidden unique name and
// renamed over it, and only between those two calls (and the close between
// them) could a SIGKILL leave `.NAME.tmp-XXXXXX`; a caught signal removes
// it (common/signal_cleanup.h).
//
// Where the folder's filesystem refuses O_TMPFILE (or /proc is not there),
// the bytes go to a named temporary `.NAME.tmp-XXXXXX` beside the output,
// renamed into place at Commit, removed when the file is destroyed
// uncommitted or the process is killed by SIGINT, SIGTERM, SIGHUP or
// SIGXFSZ; only SIGKILL (or a crash) can leave it. BOLTPACK_NAMED_TEMP=1 in
// the environment forces this route (for tests).
//
// Files are created 0644 less the umask, as a plain create would.
// Not durable (`--no-fsync`): no writeback requests and no fsyncs, as cp
// does; the link still shows only a complete file while the system runs,
// but a crash soon after may leave it empty or short under its name.
//
// Writes are made on the caller's thread until the first QueueWrite; from
// then on a thread of the file's own makes every write, in the order they
// were asked for (common/write_behind.h), and calls that need them done
// (Overwrite, Commit, a large Write) wait for it.
#ifndef BOLTPACK_COMMON_ATOMIC_FILE_H_
#define BOLTPACK_COMMON_ATOMIC_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/piece_copy.h"
#include "common/background_writeback.h"
#include "common/write_behind.h"

namespace boltpack::io {

class AtomicFile final : public QueuedSink {
 public:
  // Fails if `path` names one of `inputs` (same file, by device and inode,
  // or the same path), something that is not a regular file (a folder, a
  // FIFO, a device), or a folder that does not exist.
  static absl::StatusOr<std::unique_ptr<AtomicFile>> Create(
      const std::string& path, const std::vector<std::string>& inputs, bool durable = true);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  absl::Status Write(absl::Span<const uint8_t> bytes);
  absl::Status WriteZeros(uint64_t count);
  // Leaves a hole of `count` bytes (the file grows, nothing is written or
  // allocated: a skeleton file, WriterOptions::skeleton); from then on no
  // space is reserved ahead, which would allocate the holes.
  absl::Status Skip(uint64_t count);
  // Pads with zeros up to a multiple of `alignment`.
  absl::Status PadTo(uint64_t alignment);
  uint64_t position() const { return position_; }
  // Rewrites bytes already written (e.g. a header whose fields are known only
  // at the end); [offset, offset + size) must lie before position(). Also
  // after Seal, until Publish (the bytes are then fsynced again when
  // durable): a writer's sibling shards are sealed as each fills, and their
  // headers take the format minor known only at the end.
  absl::Status Overwrite(uint64_t offset, absl::Span<const uint8_t> bytes);
  // Seal() then Publish(): the file appears under its name.
  absl::Status Commit();
  // Everything Commit does before the file gets its name: the queued writes
  // are made, the space reserved past the end is given back, and (durable)
  // the bytes are fsynced. Nothing can be written after it.
  absl::Status Seal();
  // After Seal: links (or renames) the file into place, and when
  // `sync_folder` (and durable) fsyncs its folder.
  absl::Status Publish(bool sync_folder = true);
  const std::string& path() const { return path_; }
  // True when the bytes go to a named temporary (see above).
  bool named_temporary() const { return !temp_name_.empty(); }

  // Queues `bytes` to be written behind the caller and returns their
  // ticket; they must stay valid until WaitWritten(ticket) returns, and
  // `keep` is dropped once they are written (by a later call). The first
  // write error of the thread is returned by the next call.
  absl::StatusOr<uint64_t> QueueWrite(absl::Span<const uint8_t> bytes, std::shared_ptr<const void> keep) override;
  void WaitWritten(uint64_t ticket) override;
  // Waits for every queued write; the first error of any.
  absl::Status Drain();

 private:
  AtomicFile(std::string path, std::string name, int dir_fd)
      : path_(std::move(path)), name_(std::move(name)), dir_fd_(dir_fd) {}
  // Opens fd_: unnamed where it can, else a named temporary.
  absl::Status OpenUnnamed();
  absl::Status OpenNamed();
  // Unnamed file to a name: linked, or where `name_` exists linked to a
  // hidden name and renamed over it. Closes fd_.
  absl::Status LinkIntoPlace();
  // Removes a name that Publish gave (for CommitAll, when a later file
  // fails); a destination that was replaced cannot come back.
  void Unpublish();
  friend absl::Status CommitAll(absl::Span<AtomicFile* const> files);
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
  std::string name_;       // path_'s last component, in dir_fd_
  int dir_fd_;             // the destination folder
  int fd_ = -1;
  std::string temp_name_;  // the named temporary in dir_fd_, if one
  int signal_slot_ = -1;   // common/signal_cleanup.h, while temp_name_ exists
  bool sealed_ = false;
  bool replaced_ = false;  // Publish replaced an existing file
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

// Commits several files so that they appear together: every one is sealed
// (written, fsynced) before the first gets its name, then they are linked
// in the order given, their folders fsynced before the last is linked (so
// the last, which names the others, never outlives a crash without them)
// and again at the end. If one fails,
// those already linked are removed again (those that replaced a file stay).
absl::Status CommitAll(absl::Span<AtomicFile* const> files);

// Fails (naming both) if `output` is the same file as one of `inputs`.
absl::Status CheckNotAnInput(const std::string& output, const std::vector<std::string>& inputs);

}  // namespace boltpack::io

#endif  // BOLTPACK_COMMON_ATOMIC_FILE_H_
