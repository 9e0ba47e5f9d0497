#include "common/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "common/str_cat.h"

namespace boltpack::io {

const char* FileKind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "of an unknown kind";
}

namespace {

absl::Status NotRegular(const std::string& path, mode_t mode) {
  return absl::InvalidArgumentError(StrCat(path, ": not a regular file (", FileKind(mode), ")"));
}

absl::Status OpenError(const std::string& path, int err) {
  std::string msg = StrCat(path, ": cannot open: ", std::strerror(err));
  return err == ENOENT ? absl::NotFoundError(msg) : absl::PermissionDeniedError(msg);
}

}  // namespace

absl::Status CheckRegularFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return OpenError(path, errno);
  return S_ISREG(st.st_mode) ? absl::OkStatus() : NotRegular(path, st.st_mode);
}

absl::StatusOr<int> OpenRegularFile(const std::string& path, uint64_t* size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return OpenError(path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return absl::InternalError(StrCat(path, ": cannot stat: ", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return NotRegular(path, st.st_mode);
  }
  // Reads of a regular file never see O_NONBLOCK; cleared all the same, so
  // the descriptor behaves as a plain open's wherever it goes.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  if (size != nullptr) *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

absl::StatusOr<std::string> ReadRegularFile(const std::string& path, uint64_t max_bytes) {
  uint64_t size = 0;
  absl::StatusOr<int> fd = OpenRegularFile(path, &size);
  if (!fd.ok()) return fd.status();
  if (size > max_bytes) {
    ::close(*fd);
    return absl::ResourceExhaustedError(StrCat(path, ": ", size, " bytes exceeds the limit of ", max_bytes));
  }
  std::string text(static_cast<size_t>(size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::read(*fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      ::close(*fd);
      return absl::DataLossError(StrCat(path, ": read failed after ", done, " of ", size, " bytes: ",
                                        n < 0 ? std::strerror(err) : "the file got shorter"));
    }
    done += static_cast<size_t>(n);
  }
  ::close(*fd);
  return text;
}

absl::StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  uint64_t size = 0;
  absl::StatusOr<int> opened = OpenRegularFile(path, &size);
  if (!opened.ok()) return opened.status();
  const int fd = *opened;
  const uint8_t* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return absl::InternalError(StrCat(path, ": cannot mmap: ", std::strerror(err)));
    }
    data = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file alive
  return std::unique_ptr<MappedFile>(new MappedFile(path, data, size));
}

void ReleaseMappedPages(absl::Span<const uint8_t> bytes) {
  if (bytes.empty()) return;
  const uintptr_t page = 4096;
  // Whole pages only: those at the ends may hold bytes still in use.
  const uintptr_t first = (reinterpret_cast<uintptr_t>(bytes.data()) + page - 1) & ~(page - 1);
  const uintptr_t last = reinterpret_cast<uintptr_t>(bytes.data() + bytes.size()) & ~(page - 1);
  if (last <= first) return;
  (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

void AdviseMappedPages(absl::Span<const uint8_t> bytes, int advice) {
  if (bytes.empty()) return;
  const uintptr_t page = 4096;
  // Every page that holds one of the bytes.
  const uintptr_t first = reinterpret_cast<uintptr_t>(bytes.data()) & ~(page - 1);
  const uintptr_t last = (reinterpret_cast<uintptr_t>(bytes.data() + bytes.size()) + page - 1) & ~(page - 1);
  (void)::madvise(reinterpret_cast<void*>(first), last - first, advice);
}

void AdviseWillNeed(absl::Span<const uint8_t> bytes) { AdviseMappedPages(bytes, MADV_WILLNEED); }

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace boltpack::io
