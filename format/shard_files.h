// The sibling shards of a multi-file model (spec/container.md §8) while a
// Writer writes them (WriterOptions::shard_max_bytes).
//
// Layout: shard 0 (the path the caller names) holds the manifest alone;
// the streams go to siblings 1, 2, ... in the order they are written, each
// `<stem>-<k>.boltshard` beside shard 0 (`<stem>` is shard 0's name less a
// `.bolt` suffix). A stream never spans two shards: a new sibling starts
// when the next stream would take the current one past the limit, and a
// stream larger than the limit goes alone into a sibling of its own (which
// is then larger than the limit). Shard 0 holding no data keeps its size
// (64 + manifest + 64 bytes) independent of where the data ended, so the
// limit holds for it too whatever the model; the cost is one more file
// than a packing that put data in shard 0 as well.
//
// Each sibling is an io::AtomicFile: unnamed until Commit, sealed (written
// and, when durable, fsynced) as soon as the next one starts, and named
// only in Commit, all siblings before shard 0 (io::CommitAll), so a crash
// or an interrupted write never leaves a shard 0 that names a missing or
// half-written sibling, and a failed or abandoned write leaves no sibling.
#ifndef BOLTPACK_FORMAT_SHARD_FILES_H_
#define BOLTPACK_FORMAT_SHARD_FILES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "boltpack_proto/boltpack.pb.h"
#include "common/atomic_file.h"
#include "format/layout.h"

namespace boltpack::format {

// `<stem>-<k>.boltshard` for shard `k` of `shard0_path` (a bare file name).
std::string SiblingName(const std::string& shard0_path, uint64_t k);

class ShardFiles {
 public:
  // `max_bytes` > 0. `header`: shard 0's (alignment, file id).
  ShardFiles(std::string shard0_path, uint64_t max_bytes, const Header& header, std::vector<std::string> inputs,
             bool durable);
  ~ShardFiles();

  // Makes current the sibling the next stream of `length` bytes goes to,
  // opening a new one when it would not fit; returns its shard index.
  absl::StatusOr<uint32_t> Place(uint64_t length);
  // The current sibling (after a Place).
  io::AtomicFile& current() { return *files_.back(); }
  size_t count() const { return files_.size(); }

  // At the end: every sibling's header takes `minor`, each is sealed, and
  // `manifest` gets the shard list (entry 0 for shard 0, then one per
  // sibling with its name, size and file id) and the "shards" feature.
  absl::Status Close(uint32_t minor, v1::Manifest* manifest);
  // The end of each shard's data section, shard 0's (`manifest_offset`)
  // first, for the writer's read-back of its manifest.
  std::vector<uint64_t> DataEnds(uint64_t manifest_offset) const;
  // Names every sibling, then `shard0` (io::CommitAll); then removes stale
  // siblings of an earlier write (RemoveStaleSiblings).
  absl::Status Commit(io::AtomicFile& shard0);

 private:
  absl::Status Open();
  std::string shard0_path_;
  uint64_t max_bytes_;
  Header header_;  // shard 0's; a sibling's differs in file_id
  std::vector<std::string> inputs_;
  bool durable_;
  std::vector<std::unique_ptr<io::AtomicFile>> files_;  // siblings 1..N
  std::vector<uint64_t> file_ids_;
  std::vector<uint64_t> streams_;  // per sibling, the streams placed in it
};

// After a model of `siblings` siblings was committed at `shard0_path`:
// removes `<stem>-<k>.boltshard` for k = siblings+1, siblings+2, ... while
// such a file exists and is a bolt-pack sibling (it starts with the
// header magic) and is none of `inputs`. Those are left by an earlier write of
// more shards under the same name, which no manifest names any more; an
// upload of the folder would otherwise carry them. Returns how many it removed.
size_t RemoveStaleSiblings(const std::string& shard0_path, uint64_t siblings,
                           const std::vector<std::string>& inputs);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_SHARD_FILES_H_
