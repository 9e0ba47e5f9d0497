#include "format/shard_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>

#include "common/checked_math.h"
#include "common/limits.h"
#include "common/status_macros.h"
#include "common/str_cat.h"

namespace boltpack::format {
namespace {

uint64_t RandomId() {
  std::random_device rd;
  uint64_t id = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return id ^ static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

std::string Folder(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// The first 8 bytes of `path` are the header magic.
bool StartsWithMagic(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  uint8_t magic[kHeaderMagic.size()];
  const bool ok = ::read(fd, magic, sizeof(magic)) == static_cast<ssize_t>(sizeof(magic)) &&
                  std::memcmp(magic, kHeaderMagic.data(), sizeof(magic)) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

std::string SiblingName(const std::string& shard0_path, uint64_t k) {
  std::string name = std::filesystem::path(shard0_path).filename().string();
  constexpr std::string_view kExt = ".bolt";
  if (name.size() > kExt.size() && name.compare(name.size() - kExt.size(), kExt.size(), kExt) == 0) {
    name.resize(name.size() - kExt.size());
  }
  return StrCat(name, "-", k, ".boltshard");
}

ShardFiles::ShardFiles(std::string shard0_path, uint64_t max_bytes, const Header& header,
                       std::vector<std::string> inputs, bool durable)
    : shard0_path_(std::move(shard0_path)),
      max_bytes_(max_bytes),
      header_(header),
      inputs_(std::move(inputs)),
      durable_(durable) {}

ShardFiles::~ShardFiles() = default;

absl::Status ShardFiles::Open() {
  const uint64_t k = files_.size() + 1;
  if (k >= kMaxShards) {
    // [C-8.2.2]
    return absl::ResourceExhaustedError(StrCat(shard0_path_, ": more than ", kMaxShards - 1,
                                               " sibling shards (raise the shard size limit)"));
  }
  if (!files_.empty()) BP_RETURN_IF_ERROR(files_.back()->Seal());  // full: written and fsynced now
  const std::string name = SiblingName(shard0_path_, k);
  if (name.size() > 255) {
    // [C-8.2.4]
    return absl::InvalidArgumentError(StrCat(shard0_path_, ": sibling name ", name, " is longer than 255 bytes"));
  }
  // Never an input (io::AtomicFile::Create refuses one), nor a folder.
  BP_ASSIGN_OR_RETURN(auto file, io::AtomicFile::Create(Folder(shard0_path_) + name, inputs_, durable_));
  Header h = header_;
  // [C-8.1.1] an id of its own, unlike shard 0's and every other sibling's.
  do {
    h.file_id = RandomId();
  } while (h.file_id == header_.file_id || std::find(file_ids_.begin(), file_ids_.end(), h.file_id) != file_ids_.end());
  BP_RETURN_IF_ERROR(file->Write(EncodeHeader(h)));
  files_.push_back(std::move(file));
  file_ids_.push_back(h.file_id);
  streams_.push_back(0);
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> ShardFiles::Place(uint64_t length) {
  bool fits = false;
  if (!files_.empty()) {
    const uint64_t at = current().position();
    const uint64_t align = header_.alignment;
    auto end = CheckedAdd(at + (align - at % align) % align, length);
    // A stream larger than the limit goes alone into a sibling of its own.
    fits = streams_.back() == 0 || (end && *end <= max_bytes_);
  }
  if (!fits) BP_RETURN_IF_ERROR(Open());
  ++streams_.back();
  return static_cast<uint32_t>(files_.size());
}

absl::Status ShardFiles::Close(uint32_t minor, v1::Manifest* manifest) {
  auto* first = manifest->add_shards();  // [C-8.2.3] shard 0: no name, size 0, its id
  first->set_file_id(header_.file_id);
  for (size_t k = 0; k < files_.size(); ++k) {
    io::AtomicFile& f = *files_[k];
    if (minor != header_.format_minor) {
      Header h = header_;
      h.format_minor = minor;
      h.file_id = file_ids_[k];
      BP_RETURN_IF_ERROR(f.Overwrite(0, EncodeHeader(h)));  // [C-8.1.1] shard 0's minor
    }
    BP_RETURN_IF_ERROR(f.Seal());
    auto* s = manifest->add_shards();
    s->set_file_name(std::filesystem::path(f.path()).filename().string());
    s->set_size(f.position());
    s->set_file_id(file_ids_[k]);
  }
  if (!files_.empty()) manifest->add_required_features("shards");  // [C-8.2.6]
  return absl::OkStatus();
}

std::vector<uint64_t> ShardFiles::DataEnds(uint64_t manifest_offset) const {
  std::vector<uint64_t> ends = {manifest_offset};
  for (const auto& f : files_) ends.push_back(f->position());
  return ends;
}

absl::Status ShardFiles::Commit(io::AtomicFile& shard0) {
  std::vector<io::AtomicFile*> order;
  for (auto& f : files_) order.push_back(f.get());
  order.push_back(&shard0);  // last: the commit point of the whole model
  BP_RETURN_IF_ERROR(io::CommitAll(order));
  RemoveStaleSiblings(shard0_path_, files_.size(), inputs_);
  return absl::OkStatus();
}

size_t RemoveStaleSiblings(const std::string& shard0_path, uint64_t siblings, const std::vector<std::string>& inputs) {
  size_t removed = 0;
  for (uint64_t k = siblings + 1; k < kMaxShards; ++k) {
    const std::string path = Folder(shard0_path) + SiblingName(shard0_path, k);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ec)) || !StartsWithMagic(path)) break;
    if (!io::CheckNotAnInput(path, inputs).ok()) break;
    if (::unlink(path.c_str()) != 0) break;
    ++removed;
  }
  return removed;
}

}  // namespace boltpack::format
