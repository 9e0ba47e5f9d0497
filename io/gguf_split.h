// Writing split GGUF models the way llama.cpp's gguf-split does
// (tools/gguf-split/gguf-split.cpp), so llama.cpp and GgufModel::Open load
// the set as one model from its first file:
//
// - files PREFIX-00001-of-0000N.gguf .. PREFIX-0000N-of-0000N.gguf (1-based,
//   five digits; llama_split_path's "%s-%05d-of-%05d.gguf");
// - every file is a complete GGUF; the first holds all model key/values,
//   the others none; each then ends with split.no (UINT16, 0-based),
//   split.tensors.count (INT32, tensors in the whole set) and split.count
//   (UINT16), in that order (ggml's gguf_set_val_* removes and re-appends a
//   key, and gguf-split sets split.count last);
// - tensors keep their order; a file is closed when the next tensor's
//   padded bytes would take its tensor data over the maximum (the key/value
//   header is not counted, as in gguf-split), and a tensor bigger than the
//   maximum gets a file of its own; no file is left without tensors.
//
// A file's alignment is its own general.alignment or 32, so only the first
// file can use another alignment.
#ifndef BOLTPACK_IO_GGUF_SPLIT_H_
#define BOLTPACK_IO_GGUF_SPLIT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/types.h"
#include "io/gguf.h"

namespace boltpack::io {

inline constexpr std::string_view kGgufSplitNoKey = "split.no";                     // UINT16
inline constexpr std::string_view kGgufSplitCountKey = "split.count";               // UINT16
inline constexpr std::string_view kGgufSplitTensorsCountKey = "split.tensors.count";  // INT32

// "500M" -> 500000000. Decimal units as gguf-split (K 10^3, M 10^6,
// G 10^9, also lower case, optional trailing "B"); plain digits are bytes.
// Must be >= 1 and fit in 64 bits.
absl::StatusOr<uint64_t> ParseGgufSplitSize(std::string_view text);

// The shards' tensor ranges: shard k holds tensors [first[k], first[k+1]).
// `bytes` are the tensors' data sizes; `alignment0` pads in the first shard,
// 32 in the others; max_tensors 0 = no limit on the count.
std::vector<size_t> PlanGgufSplit(absl::Span<const uint64_t> bytes, uint64_t max_bytes, uint64_t max_tensors,
                                  uint32_t alignment0);

// "out.gguf" -> "out" (the prefix the shard names are built on).
std::string GgufSplitPrefix(std::string_view output);

struct GgufSplitOptions {
  GgufWriterOptions writer;  // version, inputs not to overwrite, pad_empty
  uint64_t max_bytes = 0;    // per shard, tensor data only; 0 = no limit
  uint64_t max_tensors = 0;  // per shard; 0 = no limit
};

// Streams a split model: tensors in declaration order, each to its shard.
// Every shard is written to a temporary file beside its destination;
// Finish() renames them into place only when all are complete (the first
// shard last), so a failed conversion leaves no partial set behind.
class GgufSplitWriter {
 public:
  // `output` is the unsplit name ("out.gguf"); the shards are named from
  // GgufSplitPrefix(output). split.* keys in `kv` are replaced.
  static absl::StatusOr<std::unique_ptr<GgufSplitWriter>> Create(const std::string& output, const Metadata& kv,
                                                                 std::vector<GgufTensorDecl> tensors,
                                                                 const GgufSplitOptions& options);
  ~GgufSplitWriter();
  absl::Status WriteNext(absl::Span<const uint8_t> bytes);
  absl::Status Finish();
  // The shard paths, first to last, and how many tensors each holds.
  const std::vector<std::string>& paths() const;
  std::vector<size_t> tensor_counts() const;

  struct Impl;

 private:
  explicit GgufSplitWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_GGUF_SPLIT_H_
