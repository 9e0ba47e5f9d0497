#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/status_macros.h"
#include "common/str_cat.h"

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
constexpr uint64_t kReserveBytes = uint64_t{64} << 20;
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
  std::string dir = ParentDir(path);
  std::string name = std::filesystem::path(path).filename().string();
  std::string templ = StrCat(dir, "/.", name, ".tmp-XXXXXX");
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  int fd = ::mkstemp(buf.data());
  if (fd < 0) return ErrnoError(path, "cannot create a temporary file beside it", errno);
  ::fchmod(fd, 0644);
  auto file = std::unique_ptr<AtomicFile>(new AtomicFile(path, std::string(buf.data()), fd));
  file->buffer_.reserve(kBufferBytes);
  file->durable_ = durable;
  return file;
}

AtomicFile::~AtomicFile() {
  behind_.reset();     // it writes to fd_ and requests writeback
  writeback_.reset();  // it uses fd_
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
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
  uint64_t to = std::max(end, reserved_ + kReserveBytes);
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
  if (committed_) return absl::FailedPreconditionError(StrCat(path_, ": already committed"));
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
  BP_RETURN_IF_ERROR(Drain());
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(path_, "write failed", errno);
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::Write(absl::Span<const uint8_t> bytes) {
  if (committed_) return absl::FailedPreconditionError(StrCat(path_, ": already committed"));
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
  absl::Status s = Drain();
  if (!s.ok()) return s;
  behind_.reset();
  // Blocks reserved past the end are given back.
  if (reserved_ > written_ && ::ftruncate(fd_, static_cast<off_t>(written_)) != 0) {
    return ErrnoError(path_, "cannot trim the space reserved past its end", errno);
  }
  writeback_.reset();  // before the fsync, which waits for all of it
  if (durable_ && ::fsync(fd_) != 0) return ErrnoError(path_, "fsync failed", errno);
  if (::close(fd_) != 0) {
    fd_ = -1;
    return ErrnoError(path_, "close failed", errno);
  }
  fd_ = -1;
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    return ErrnoError(path_, "cannot rename the temporary file into place", errno);
  }
  committed_ = true;
  if (!durable_) return absl::OkStatus();
  int dir_fd = ::open(ParentDir(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return absl::OkStatus();
}

}  // namespace boltpack::io
