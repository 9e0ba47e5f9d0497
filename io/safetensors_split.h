// Writing a safetensors model split into files the way Hugging Face does
// (huggingface_hub's split_torch_state_dict_into_shards, which
// transformers' save_pretrained calls), so that transformers, vLLM and
// SafetensorsModel::Open load it through its index:
//
// - files PREFIX-00001-of-0000N.safetensors .. (1-based, five digits:
//   filename_pattern "model{suffix}.safetensors", suffix
//   "-{idx+1:05d}-of-{nb_shards:05d}"), each a complete safetensors file
//   with the model's __metadata__;
// - PREFIX.safetensors.index.json: {"metadata": {"total_size": T},
//   "weight_map": {tensor: file}}, T the sum of the tensors' data bytes,
//   spelled as transformers writes it (json.dumps(index, indent=2,
//   sort_keys=True) + "\n", ASCII only);
// - tensors in order, a tensor is never split: a file is closed when the
//   next tensor would take its data over the maximum; a tensor larger than
//   the maximum gets a file of its own, numbered where HF numbers it
//   (before the file still being filled); a model that fits in one file
//   is written as PREFIX.safetensors with no index, as HF does.
//
// Crash safety (docs/safety.md): every file is written unnamed (or to a
// hidden temporary), fsynced when complete, and named only when all are:
// the shards first, the index last, so an interrupted write never leaves an
// index that names a missing or partial shard, and a failed one leaves
// nothing. Stale files: shards named by the index this write replaces that
// the new one does not name are removed after the commit (never an input,
// only names PREFIX-NNNNN-of-NNNNN.safetensors; a one-file output removes
// the PREFIX.safetensors.index.json it replaces first, then its shards); a
// PREFIX.safetensors beside a split output is refused (loaders read it
// before the index).
#ifndef BOLTPACK_IO_SAFETENSORS_SPLIT_H_
#define BOLTPACK_IO_SAFETENSORS_SPLIT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/piece_source.h"
#include "io/safetensors.h"

namespace boltpack::io {

// The file each tensor goes to (0-based) and the file count, by HF's rule.
// `max_tensors` (0 = none) also closes a file after that many tensors (a
// bolt-pack extension, as gguf-split --split-max-tensors).
struct SafetensorsSplitPlan {
  std::vector<uint32_t> file_of;  // per tensor
  size_t files = 0;
};
SafetensorsSplitPlan PlanSafetensorsSplit(absl::Span<const uint64_t> bytes, uint64_t max_bytes,
                                          uint64_t max_tensors);

// "DIR/model.safetensors" or "DIR/model.safetensors.index.json" ->
// "DIR/model"; anything else is an error naming it.
absl::StatusOr<std::string> SafetensorsSplitPrefix(std::string_view output);
bool IsSafetensorsIndexName(std::string_view path);
// PREFIX-0000K-of-0000N.safetensors for file k (0-based) of n.
std::string SafetensorsShardPath(std::string_view prefix, size_t k, size_t n);
// Whether `name` (no folder) is `base`-NNNNN-of-NNNNN.safetensors.
bool IsSafetensorsShardName(std::string_view name, std::string_view base);

// The index's bytes: `weight_map` (tensor, file) in any order.
std::string SafetensorsIndexJson(uint64_t total_size,
                                 std::vector<std::pair<std::string_view, std::string_view>> weight_map);

struct SafetensorsSplitOptions {
  uint64_t max_bytes = 0;    // tensor data per file; 0 = no limit
  uint64_t max_tensors = 0;  // tensors per file; 0 = no limit
  std::vector<std::string> inputs;  // never overwritten (nor removed as stale)
  bool durable = true;
};

// Streams a split model: tensors in declaration order, each to its file.
// Holds two file descriptors per file until Finish; a file is sealed (its
// buffer freed) as soon as its last tensor is written.
class SafetensorsSplitWriter {
 public:
  static absl::StatusOr<std::unique_ptr<SafetensorsSplitWriter>> Create(
      const std::string& output, std::vector<std::pair<std::string, std::string>> metadata,
      std::vector<SafetensorsTensorDecl> tensors, const SafetensorsSplitOptions& options);
  ~SafetensorsSplitWriter();
  absl::Status WriteNext(absl::Span<const uint8_t> bytes);
  absl::Status WriteNext(PieceSource& bytes);
  // As SafetensorsWriter::WriteNextBehind.
  absl::Status WriteNextBehind(std::shared_ptr<PieceSource> bytes);
  absl::Status Finish();
  // The files written, first to last, then the index (none for one file),
  // and how many tensors each file holds.
  const std::vector<std::string>& paths() const;
  const std::vector<size_t>& tensor_counts() const;
  const std::string& index_path() const;  // empty for one file
  // Stale files of the replaced index (itself for one file, its shards) that Finish removed.
  const std::vector<std::string>& removed() const;

  struct Impl;

 private:
  explicit SafetensorsSplitWriter(std::unique_ptr<Impl> impl);
  SafetensorsWriter* Next(absl::Status* error);
  absl::Status AfterWrite(absl::Status written);
  std::unique_ptr<Impl> impl_;
};

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_SAFETENSORS_SPLIT_H_
