// Line-prefix checksums (spec/container.md §6.10.1, format 1.2). A stream is
// read as lines of `line_bytes` (the stored bytes of the tensor's
// dimensions from some dimension j >= 1 inwards); for each
// prefix length p a chunk carries the XXH3 of the first p bytes of each of
// its lines, concatenated in order. Those are exactly the bytes a budget
// that cuts dimension j to a prefix (and no other but the outermost) keeps,
// in the order a slice writes them, so a slicer verifies only what it
// copies and the sliced chunk's own checksum is the one already recorded.
#ifndef BOLTPACK_FORMAT_LINE_PREFIX_H_
#define BOLTPACK_FORMAT_LINE_PREFIX_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "boltpack/elastic.h"
#include "boltpack/tensor_info.h"
#include "common/xxh3.h"

namespace boltpack::format {

// The checksums of whole lines given in parts of any size, one per prefix.
class LinePrefixHasher {
 public:
  LinePrefixHasher(uint64_t line_bytes, std::vector<uint64_t> prefixes);
  // `part` continues the bytes so far (lines need not end with a part).
  void Update(absl::Span<const uint8_t> part);
  // One digest per prefix, of everything since construction or the last
  // Finish; starts over.
  std::vector<uint64_t> Finish();

 private:
  uint64_t line_bytes_;
  std::vector<uint64_t> prefixes_;
  std::vector<std::unique_ptr<Xxh3Stream>> hashers_;
  uint64_t in_line_ = 0;  // bytes of the current line seen
};

// The checksum of the first `prefix` bytes of every `line_bytes` line of
// `lines` (whole lines), concatenated.
uint64_t LinePrefixXxh3(absl::Span<const uint8_t> lines, uint64_t line_bytes, uint64_t prefix);

class BindingIndex;

// Which lines a tensor's prefix checksums use: its dimensions from `dim`
// (>= 1) inwards, so that a budget cutting dimension `dim` to a prefix,
// and no dimension but the outermost otherwise, keeps a prefix of every
// line (the kept elements of `dim` times everything inside it). `cuts` are
// those prefixes in elements of `dim`, ascending, distinct.
struct LineCuts {
  size_t dim = 0;
  std::vector<uint64_t> cuts;  // empty: no line prefixes
};

// The line cuts the budgets of `manifest` make in tensor `name` of
// `shape`: of the dimensions budgets cut that way, the one with the most
// distinct cuts (ties: the inner one). Empty for an unbound tensor and for
// cuts that keep several runs per line (grouped, segmented, product
// dimensions) or cut two inner dimensions at once.
LineCuts PlanLineCuts(const ElasticManifest& manifest, const BindingIndex& index, const std::string& name,
                      absl::Span<const uint64_t> shape);

// Gives every stream of `info` that can carry them (uncompressed, a grid of
// fixed cells, StoredCellLayout) line_bytes and the prefix_bytes of the
// cuts that fall on whole cells; the writer then computes the checksums.
// A tensor whose streams have no chunks (GGUF blocks passed through, small
// tensors) first gets chunks of whole rows (AddRowChunks; one chunk when it
// is small), which line prefixes are per. Other streams are left without.
void PlanLinePrefixes(TensorInfo* info, const LineCuts& line);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_LINE_PREFIX_H_
