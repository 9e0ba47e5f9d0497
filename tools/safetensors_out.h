// A safetensors output of convert or slice: one file (io::SafetensorsWriter)
// or, with --split-max-size / --split-max-tensors, Hugging Face's split
// layout (io::SafetensorsSplitWriter: shards plus an index).
#ifndef BOLTPACK_TOOLS_SAFETENSORS_OUT_H_
#define BOLTPACK_TOOLS_SAFETENSORS_OUT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/piece_source.h"
#include "io/safetensors.h"
#include "io/safetensors_split.h"

namespace boltpack::tools {

class SafetensorsOut {
 public:
  // max_bytes and max_tensors 0: one file at `output`.
  static absl::StatusOr<SafetensorsOut> Create(const std::string& output,
                                               std::vector<std::pair<std::string, std::string>> metadata,
                                               std::vector<io::SafetensorsTensorDecl> tensors,
                                               const std::vector<std::string>& inputs, bool durable,
                                               uint64_t max_bytes, uint64_t max_tensors);
  absl::Status WriteNext(absl::Span<const uint8_t> bytes);
  absl::Status WriteNext(PieceSource& bytes);
  absl::Status WriteNextBehind(std::shared_ptr<PieceSource> bytes);
  // A split output lists its files (and the stale shards removed) on stderr.
  absl::Status Finish();
  bool split() const { return split_ != nullptr; }

 private:
  std::unique_ptr<io::SafetensorsWriter> one_;
  std::unique_ptr<io::SafetensorsSplitWriter> split_;
};

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_SAFETENSORS_OUT_H_
