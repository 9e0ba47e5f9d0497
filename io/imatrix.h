// llama.cpp importance matrices (llama-imatrix output) as per-tensor weight
// vectors for quantizers (TensorSource::importance).
//
// Two formats, told apart by the magic:
//  - GGUF (llama.cpp since 2025): for each weight tensor NAME an F32 tensor
//    `NAME.in_sum2` with ne = [n_cols] or [n_cols, n_experts] (sums of squared
//    activations) and an F32 `NAME.counts` with ne = [1] or [1, n_experts];
//    weight = in_sum2 / count per expert, and 1.0 where count is 0 (as
//    llama.cpp's quantize does).
//  - legacy .dat: int32 n_entries, then per entry int32 name_len, name bytes,
//    int32 ncall, int32 nval, nval float32 (used as stored, as llama.cpp's
//    load_legacy_imatrix does); an optional trailer (last call, dataset) is
//    ignored.
// Names are looked up as given: ggml tensor names, which are the GGUF
// tensor names (blk.0.ffn_up.weight), or any other. A Hugging Face
// folder's tensors also find entries under their HF names
// (model.layers.0.mlp.up_proj.weight): tools/importance.h maps them.
#ifndef BOLTPACK_IO_IMATRIX_H_
#define BOLTPACK_IO_IMATRIX_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace boltpack::io {

struct ImatrixEntry {
  uint64_t n_cols = 0;
  uint64_t n_experts = 1;       // 1 for a 2-D weight
  std::vector<float> weights;   // n_experts x n_cols, expert-major
};

class Imatrix {
 public:
  static absl::StatusOr<std::unique_ptr<Imatrix>> Load(const std::string& path);
  static absl::StatusOr<std::unique_ptr<Imatrix>> Parse(absl::Span<const uint8_t> bytes, const std::string& name);

  const ImatrixEntry* Find(std::string_view tensor) const;
  size_t size() const { return entries_.size(); }
  const std::string& path() const { return path_; }
  // "gguf" or "legacy".
  const std::string& format() const { return format_; }

  // The importance vector for a tensor of bolt-pack `shape` (outermost first):
  // one weight per column (innermost dimension), or per column of each
  // expert for a 3-D tensor [n_experts, rows, cols]. Empty span when the
  // imatrix has no entry; an error when the entry does not fit the shape.
  absl::StatusOr<absl::Span<const float>> For(std::string_view tensor, absl::Span<const uint64_t> shape) const;

 private:
  std::string path_;
  std::string format_;
  std::unordered_map<std::string, ImatrixEntry> entries_;
};

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_IMATRIX_H_
