// An output file that appears only when complete: bytes go to a temporary
// file in the destination folder; Commit() fsyncs it, renames it over the
// destination and fsyncs the folder. Destroyed uncommitted, it is removed.
// Not durable (`--no-fsync`): no writeback requests and no fsyncs, as cp
// does; the rename still shows only a complete file while the system runs,
// but a crash soon after may leave it empty or short under its name.
#ifndef BOLTPACK_IO_ATOMIC_FILE_H_
#define BOLTPACK_IO_ATOMIC_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "io/background_writeback.h"

namespace boltpack::io {

class AtomicFile {
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

 private:
  AtomicFile(std::string path, std::string temp_path, int fd)
      : path_(std::move(path)), temp_path_(std::move(temp_path)), fd_(fd) {}
  absl::Status Flush();
  // Has the writeback thread start writeback of what was written since the
  // last request, once that is kWritebackBytes or more.
  void StartWriteback();
  std::string path_;
  std::string temp_path_;
  int fd_;
  uint64_t position_ = 0;
  uint64_t writeback_from_ = 0;  // bytes before this have had writeback requested
  std::unique_ptr<BackgroundWriteback> writeback_;  // from the first request on
  bool committed_ = false;
  bool durable_ = true;
  std::vector<uint8_t> buffer_;
};

// Fails (naming both) if `output` is the same file as one of `inputs`.
absl::Status CheckNotAnInput(const std::string& output, const std::vector<std::string>& inputs);

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_ATOMIC_FILE_H_
