// A read-only memory mapping of a whole file, and the one way every input
// file is opened: OpenRegularFile.
#ifndef BOLTPACK_COMMON_MAPPED_FILE_H_
#define BOLTPACK_COMMON_MAPPED_FILE_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace boltpack::io {

// Opens `path` read-only and returns its descriptor (close-on-exec), or an
// error: NotFound when it does not exist, PermissionDenied when it cannot be
// opened, InvalidArgument "PATH: not a regular file (a FIFO)" for a FIFO,
// device, directory or socket. The open does not block (O_NONBLOCK, cleared
// once the file is known to be regular): a FIFO would otherwise wait for a
// writer forever. `size`, if given, receives the file's size.
absl::StatusOr<int> OpenRegularFile(const std::string& path, uint64_t* size = nullptr);
// The same check by stat(2), opening nothing (for command-line arguments).
absl::Status CheckRegularFile(const std::string& path);
// "a FIFO", "a directory", "a character device", ... for a file's st_mode.
const char* FileKind(mode_t mode);
// The whole of a small file (a recipe, a JSON file): ResourceExhausted,
// naming it, when it holds more than `max_bytes`.
absl::StatusOr<std::string> ReadRegularFile(const std::string& path, uint64_t max_bytes);

class MappedFile {
 public:
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  absl::Span<const uint8_t> bytes() const { return {data_, size_}; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const uint8_t* data, uint64_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const uint8_t* data_;
  uint64_t size_;
};

// Drops the whole pages inside `bytes`, a part of a read-only file mapping
// (a MappedFile's), from this process's address space (MADV_DONTNEED): a
// one-pass tool done with them keeps its resident memory bounded whatever
// the file's size, and they come back from the page cache if read again.
// Only ever for file mappings: over anonymous memory this would zero it.
// Advice only: a failure leaves the pages mapped.
void ReleaseMappedPages(absl::Span<const uint8_t> bytes);

// Asks the kernel to read exactly the pages `bytes` covers (MADV_WILLNEED),
// before they are touched: a read of part of a file (a row range) then
// brings in those pages, not the megabytes the kernel's fault read-ahead
// would add around each fault (a 1% row slice brought 26% of a bf16 file's
// pages in without it). Advice only: nothing happens over memory that is
// not a file mapping, or when it fails.
void AdviseWillNeed(absl::Span<const uint8_t> bytes);
// madvise(`advice`) over every page that holds one of `bytes`. Advice only,
// as above.
void AdviseMappedPages(absl::Span<const uint8_t> bytes, int advice);

}  // namespace boltpack::io

#endif  // BOLTPACK_COMMON_MAPPED_FILE_H_
