#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <utility>

#include "common/status_macros.h"
#include "common/str_cat.h"
#include "common/mapped_file.h"
#include "common/signal_cleanup.h"

namespace boltpack::io {
namespace {

constexpr size_t kBufferBytes = 1 << 20;
// Writeback is started in steps of this many bytes while the file is being
// written, so the disk works alongside the writer and Commit's fsync waits
// only for the tail instead of the whole file.
constexpr uint64_t kWritebackBytes = uint64_t{8} << 20;
// Space is reserved (fallocate, past the end) this many bytes ahead of the
// writes: ext4 then maps each written block to an extent that exists instead
// of reserving it as a delayed allocation, which made 1 MiB writes 30%
// faster (64 MiB: 13.4 against 9.6 ms; with the fsync, 256 MiB: 210 against
// 190 ms), and a full disk fails a reservation before the bytes that
// would not fit are written. Commit trims what was reserved past the end.
// The step grows with the file, from kMinReserveBytes to kReserveBytes (as
// much again as is written): a small output does not reserve 64 MiB and
// give it back (on tmpfs that zeroed 16K pages for each kilobyte file, half
// the time of the pipeline fuzzer's executions), and a large one soon
// reserves in whole steps.
constexpr uint64_t kReserveBytes = uint64_t{64} << 20;
constexpr uint64_t kMinReserveBytes = uint64_t{64} << 10;
// Spans at least this large are written as they are: copying them into the
// buffer first would cost a pass over their bytes to save few syscalls.
constexpr size_t kDirectBytes = 64 << 10;

absl::Status ErrnoError(const std::string& path, const char* what, int err) {
  return absl::InternalError(StrCat(path, ": ", what, ": ", std::strerror(err)));
}

std::string ParentDir(const std::string& path) {
  std::filesystem::path p(path);
  auto parent = p.parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// Files are created with this mode less the umask (the kernel applies it).
constexpr mode_t kFileMode = 0644;

// `.NAME.tmp-XXXXXX`, NAME cut so the whole fits in a folder entry.
std::string HiddenName(const std::string& name) {
  constexpr size_t kMaxName = 255, kExtra = 1 + 5 + 6;  // ".", ".tmp-", XXXXXX
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  uint64_t bits = 0;
  if (::getrandom(&bits, sizeof(bits), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(bits))) {
    bits = std::random_device{}() ^ (static_cast<uint64_t>(::getpid()) << 32);
  }
  std::string out = StrCat(".", name.substr(0, kMaxName - kExtra), ".tmp-");
  for (int i = 0; i < 6; ++i, bits /= 62) out += kChars[bits % 62];
  return out;
}

bool ForcedNamedTemporary() {
  const char* v = std::getenv("BOLTPACK_NAMED_TEMP");
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}

std::string ProcFdPath(int fd) { return StrCat("/proc/self/fd/", fd); }

}  // namespace

absl::Status CheckNotAnInput(const std::string& output, const std::vector<std::string>& inputs) {
  struct stat out_st;
  bool out_exists = ::stat(output.c_str(), &out_st) == 0;
  std::error_code ec;
  auto out_abs = std::filesystem::weakly_canonical(output, ec);
  for (const auto& in : inputs) {
    struct stat in_st;
    bool same = false;
    if (out_exists && ::stat(in.c_str(), &in_st) == 0) {
      same = in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino;
    }
    if (!same && !ec) {
      std::error_code ec2;
      auto in_abs = std::filesystem::weakly_canonical(in, ec2);
      same = !ec2 && in_abs == out_abs;
    }
    if (same) {
      return absl::InvalidArgumentError(
          StrCat(output, ": refusing to overwrite an input file (", in, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<AtomicFile>> AtomicFile::Create(
    const std::string& path, const std::vector<std::string>& inputs, bool durable) {
  if (path.empty()) return absl::InvalidArgumentError("empty output path");
  absl::Status not_input = CheckNotAnInput(path, inputs);
  if (!not_input.ok()) return not_input;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(StrCat(path, ": is a directory"));
  }
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A FIFO or device would be replaced by the output, not written to.
    return absl::InvalidArgumentError(StrCat(path, ": not a regular file (", FileKind(st.st_mode), ")"));
  }
  std::string name = std::filesystem::path(path).filename().string();
  if (name.empty() || name == "." || name == "..") {
    return absl::InvalidArgumentError(StrCat(path, ": names a folder, not a file"));
  }
  int dir_fd = ::open(ParentDir(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return ErrnoError(path, "cannot open its folder", errno);
  auto file = std::unique_ptr<AtomicFile>(new AtomicFile(path, std::move(name), dir_fd));
  BP_RETURN_IF_ERROR(ForcedNamedTemporary() ? file->OpenNamed() : file->OpenUnnamed());
  file->buffer_.reserve(kBufferBytes);
  file->durable_ = durable;
  return file;
}

absl::Status AtomicFile::OpenUnnamed() {
  fd_ = ::openat(dir_fd_, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, kFileMode);
  if (fd_ < 0) {
    const int err = errno;
    // Filesystems (or kernels) without O_TMPFILE; other errors would fail a
    // named file too.
    if (err == EOPNOTSUPP || err == EISDIR || err == EINVAL || err == ENOSYS) return OpenNamed();
    return ErrnoError(path_, "cannot create the output file in its folder", err);
  }
  // Linked through /proc at Commit: without it the file could not be named.
  if (::access(ProcFdPath(fd_).c_str(), F_OK) != 0) {
    ::close(fd_);
    fd_ = -1;
    return OpenNamed();
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::OpenNamed() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string temp = HiddenName(name_);
    fd_ = ::openat(dir_fd_, temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, kFileMode);
    if (fd_ >= 0) {
      temp_name_ = std::move(temp);
      signal_slot_ = ArmRemovalOnSignal(dir_fd_, temp_name_);
      return absl::OkStatus();
    }
    if (errno != EEXIST) break;
  }
  return ErrnoError(path_, "cannot create a temporary file beside it", errno);
}

AtomicFile::~AtomicFile() {
  behind_.reset();     // it writes to fd_ and requests writeback
  writeback_.reset();  // it uses fd_
  if (fd_ >= 0) ::close(fd_);  // an unnamed file is gone with it
  if (!committed_ && !temp_name_.empty()) ::unlinkat(dir_fd_, temp_name_.c_str(), 0);
  DisarmRemovalOnSignal(signal_slot_);
  ::close(dir_fd_);
}

// write(2) may write less than asked; loop until done or a real error.
static absl::Status WriteAll(int fd, const uint8_t* data, size_t size, const std::string& path) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(path, "write failed", errno);
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::Reserve(uint64_t end) {
  if (end <= reserved_ || !reserve_) return absl::OkStatus();
  const uint64_t step = std::clamp(end, kMinReserveBytes, kReserveBytes);
  uint64_t to = std::max(end, reserved_ + step);
  for (;;) {
    if (::fallocate(fd_, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(reserved_), static_cast<off_t>(to - reserved_)) == 0) {
      reserved_ = to;
      return absl::OkStatus();
    }
    const int err = errno;
    if (err == EINTR) continue;
    if (err != ENOSPC && err != EDQUOT) {
      reserve_ = false;  // not supported here: plain writes
      return absl::OkStatus();
    }
    // Full for a step ahead, perhaps not for the bytes at hand.
    if (to > end) {
      to = end;
      continue;
    }
    return ErrnoError(path_, StrCat("no room for the next ", to - reserved_, " bytes").c_str(), err);
  }
}

absl::Status AtomicFile::WriteOut(absl::Span<const uint8_t> bytes) {
  BP_RETURN_IF_ERROR(Reserve(written_ + bytes.size()));
  BP_RETURN_IF_ERROR(WriteAll(fd_, bytes.data(), bytes.size(), path_));
  written_ += bytes.size();
  StartWriteback();
  return absl::OkStatus();
}

absl::Status AtomicFile::Flush() {
  if (buffer_.empty()) return absl::OkStatus();
  if (behind_ == nullptr) {
    absl::Status s = WriteOut(buffer_);
    buffer_.clear();
    return s;
  }
  // A copy of the bytes (mostly padding): buffer_ keeps its capacity.
  std::vector<uint8_t> bytes(buffer_.begin(), buffer_.end());
  buffer_.clear();
  return behind_->Queue({}, std::move(bytes)).status();
}

absl::StatusOr<uint64_t> AtomicFile::QueueWrite(absl::Span<const uint8_t> bytes, std::shared_ptr<const void> keep) {
  if (sealed_) return absl::FailedPreconditionError(StrCat(path_, ": already committed"));
  if (behind_ == nullptr) {
    behind_ = std::make_unique<WriteBehind>([this](absl::Span<const uint8_t> b) { return WriteOut(b); });
  }
  BP_RETURN_IF_ERROR(Flush());  // buffered bytes go first
  position_ += bytes.size();
  return behind_->Queue(bytes, {}, std::move(keep));
}

void AtomicFile::WaitWritten(uint64_t ticket) {
  if (behind_ != nullptr) behind_->WaitWritten(ticket);
}

absl::Status AtomicFile::Drain() {
  BP_RETURN_IF_ERROR(Flush());
  return behind_ == nullptr ? absl::OkStatus() : behind_->Drain();
}

void AtomicFile::StartWriteback() {
  if (!durable_) return;  // the page cache writes back when it likes
  if (written_ - writeback_from_ < kWritebackBytes) return;
  if (writeback_ == nullptr) writeback_ = std::make_unique<BackgroundWriteback>(fd_);
  writeback_->Request(written_);
  writeback_from_ = written_;
}

absl::Status AtomicFile::Overwrite(uint64_t offset, absl::Span<const uint8_t> bytes) {
  if (offset > position_ || bytes.size() > position_ - offset) {
    return absl::InternalError(StrCat(path_, ": overwrite of [", offset, ", +", bytes.size(),
                                      ") beyond the ", position_, " bytes written"));
  }
  if (committed_) return absl::FailedPreconditionError(StrCat(path_, ": already committed"));
  if (!sealed_) BP_RETURN_IF_ERROR(Drain());
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(path_, "write failed", errno);
    }
    done += static_cast<size_t>(n);
  }
  // Sealed bytes were fsynced: the rewritten ones are too, before a name.
  if (sealed_ && durable_ && ::fdatasync(fd_) != 0) return ErrnoError(path_, "fsync failed", errno);
  return absl::OkStatus();
}

absl::Status AtomicFile::Write(absl::Span<const uint8_t> bytes) {
  if (sealed_) return absl::FailedPreconditionError(StrCat(path_, ": already committed"));
  const bool direct = bytes.size() >= kDirectBytes;
  if (direct || buffer_.size() + bytes.size() > kBufferBytes) {
    absl::Status s = Flush();
    if (!s.ok()) return s;
  }
  if (direct && behind_ != nullptr) {
    // Written in order behind what is queued; the caller's bytes are only
    // valid for this call.
    BP_RETURN_IF_ERROR(QueueWrite(bytes, nullptr).status());
    return behind_->Drain();
  }
  if (direct) {
    BP_RETURN_IF_ERROR(WriteOut(bytes));
  } else {
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
  }
  position_ += bytes.size();
  return absl::OkStatus();
}

absl::Status AtomicFile::WriteZeros(uint64_t count) {
  static const uint8_t kZeros[4096] = {};
  while (count > 0) {
    uint64_t n = count < sizeof(kZeros) ? count : sizeof(kZeros);
    absl::Status s = Write({kZeros, static_cast<size_t>(n)});
    if (!s.ok()) return s;
    count -= n;
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::Skip(uint64_t count) {
  if (sealed_) return absl::FailedPreconditionError(StrCat(path_, ": already committed"));
  if (count == 0) return absl::OkStatus();
  BP_RETURN_IF_ERROR(Drain());
  if (count > static_cast<uint64_t>(INT64_MAX) - written_) return ErrnoError(path_, "cannot leave a hole", EFBIG);
  if (::lseek(fd_, static_cast<off_t>(count), SEEK_CUR) < 0) return ErrnoError(path_, "cannot leave a hole", errno);
  reserve_ = false;
  written_ += count;
  position_ += count;
  return absl::OkStatus();
}

absl::Status AtomicFile::PadTo(uint64_t alignment) {
  uint64_t rem = position_ % alignment;
  return rem == 0 ? absl::OkStatus() : WriteZeros(alignment - rem);
}

absl::Status AppendPieces(AtomicFile& file, PieceSource& pieces, std::shared_ptr<PieceSource> behind,
                          std::unique_ptr<SideWorker>& side) {
  if (behind != nullptr) return CopyPiecesBehind(std::move(behind), file, {});
  return CopyPieces(pieces, SideWorkerFor(side, pieces.size()),
                    [&](absl::Span<const uint8_t> part) { return file.Write(part); }, {});
}

absl::Status AtomicFile::Commit() {
  BP_RETURN_IF_ERROR(Seal());
  return Publish();
}

absl::Status AtomicFile::Seal() {
  if (sealed_) return absl::OkStatus();
  absl::Status s = Drain();
  if (!s.ok()) return s;
  behind_.reset();
  // Blocks reserved past the end are given back.
  if (reserved_ > written_ && ::ftruncate(fd_, static_cast<off_t>(written_)) != 0) {
    return ErrnoError(path_, "cannot trim the space reserved past its end", errno);
  }
  writeback_.reset();  // before the fsync, which waits for all of it
  if (durable_ && ::fsync(fd_) != 0) return ErrnoError(path_, "fsync failed", errno);
  std::vector<uint8_t>().swap(buffer_);  // a sealed file waiting for its name holds no buffer
  sealed_ = true;
  return absl::OkStatus();
}

absl::Status AtomicFile::LinkIntoPlace() {
  const std::string proc = ProcFdPath(fd_);
  if (::linkat(AT_FDCWD, proc.c_str(), dir_fd_, name_.c_str(), AT_SYMLINK_FOLLOW) == 0) {
    if (::close(std::exchange(fd_, -1)) != 0) {
      const int err = errno;
      ::unlinkat(dir_fd_, name_.c_str(), 0);
      return ErrnoError(path_, "close failed", err);
    }
    return absl::OkStatus();
  }
  if (errno != EEXIST) return ErrnoError(path_, "cannot link the finished file into place", errno);
  // The destination exists: a hidden name, renamed over it. A caught
  // signal between the two removes the hidden name.
  for (int attempt = 0; attempt < 100 && temp_name_.empty(); ++attempt) {
    std::string temp = HiddenName(name_);
    if (::linkat(AT_FDCWD, proc.c_str(), dir_fd_, temp.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      temp_name_ = std::move(temp);
      signal_slot_ = ArmRemovalOnSignal(dir_fd_, temp_name_);
    } else if (errno != EEXIST) {
      return ErrnoError(path_, "cannot link the finished file beside it", errno);
    }
  }
  if (temp_name_.empty()) return ErrnoError(path_, "cannot link the finished file beside it", EEXIST);
  if (::close(std::exchange(fd_, -1)) != 0) return ErrnoError(path_, "close failed", errno);
  if (::renameat(dir_fd_, temp_name_.c_str(), dir_fd_, name_.c_str()) != 0) {
    return ErrnoError(path_, "cannot rename the finished file into place", errno);
  }
  replaced_ = true;
  return absl::OkStatus();
}

absl::Status AtomicFile::Publish(bool sync_folder) {
  if (!sealed_) return absl::FailedPreconditionError(StrCat(path_, ": published before it was sealed"));
  if (committed_) return absl::OkStatus();
  if (temp_name_.empty()) {
    BP_RETURN_IF_ERROR(LinkIntoPlace());
  } else {
    if (::close(std::exchange(fd_, -1)) != 0) return ErrnoError(path_, "close failed", errno);
    struct stat st;
    replaced_ = ::fstatat(dir_fd_, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (::renameat(dir_fd_, temp_name_.c_str(), dir_fd_, name_.c_str()) != 0) {
      return ErrnoError(path_, "cannot rename the temporary file into place", errno);
    }
  }
  committed_ = true;  // the temporary name, if any, is gone
  DisarmRemovalOnSignal(std::exchange(signal_slot_, -1));
  if (sync_folder && durable_) ::fsync(dir_fd_);
  return absl::OkStatus();
}

void AtomicFile::Unpublish() {
  if (committed_ && !replaced_) ::unlinkat(dir_fd_, name_.c_str(), 0);
}

absl::Status CommitAll(absl::Span<AtomicFile* const> files) {
  for (AtomicFile* f : files) BP_RETURN_IF_ERROR(f->Seal());
  for (size_t i = 0; i < files.size(); ++i) {
    if (i + 1 == files.size()) {
      // The names given so far are on disk before the last file gets its
      // own: a crash never keeps the last (the one that names the others)
      // without them.
      for (size_t k = 0; k < i; ++k) {
        if (files[k]->durable_) ::fsync(files[k]->dir_fd_);
      }
    }
    absl::Status s = files[i]->Publish(/*sync_folder=*/false);
    if (!s.ok()) {
      for (size_t k = 0; k < i; ++k) files[k]->Unpublish();
      return s;
    }
  }
  for (AtomicFile* f : files) {
    if (f->durable_) ::fsync(f->dir_fd_);  // one folder, in practice: cheap after the first
  }
  return absl::OkStatus();
}

}  // namespace boltpack::io
