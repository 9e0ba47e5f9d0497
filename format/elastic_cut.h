// Cutting and permuting tensors along elastic axes (spec/elastic.md
// "Slicing"). A tensor is described per dimension by an element map: output
// index j reads source index map[j] (a prefix [0, k) for a slice, a unit
// permutation for storing in importance order). Codecs whose streams are
// row-major grids of fixed-size cells (format/elastic_manifest.h
// CellLayout: element codecs, q8_0, mxfp4, nvfp4-ggml, nvfp4 with its scale
// stream, int4-g128, iq2_xxs, ggml-* blocks) are cut by copying cells: any
// map on an outer dimension, and on the innermost dimension a map that
// moves whole blocks. Other codecs (bf16-huffman, bf16-unary, bf16-mx) are
// decoded, cut and re-encoded with the same codec, which is exact for the
// lossless ones.
#ifndef BOLTPACK_FORMAT_ELASTIC_CUT_H_
#define BOLTPACK_FORMAT_ELASTIC_CUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/tensor_info.h"
#include "format/row_chunks.h"

namespace boltpack {
class Reader;
}  // namespace boltpack

namespace boltpack::format {

// Per dimension: output index -> source index. An empty map keeps the
// dimension whole.
using ElementMaps = std::vector<std::vector<uint64_t>>;

// The prefix maps of a slice: [0, kept[d]) per dimension (empty where whole).
ElementMaps PrefixMaps(absl::Span<const uint64_t> shape, absl::Span<const uint64_t> kept);

// Copies cells of a row-major grid `grid` (cells of `cell_bytes` bytes) by
// per-dimension maps. `src` must hold exactly prod(grid) * cell_bytes bytes.
absl::StatusOr<std::vector<uint8_t>> GatherCells(absl::Span<const uint8_t> src, absl::Span<const uint64_t> grid,
                                                 uint64_t cell_bytes, const ElementMaps& maps);

// A tensor in stored form (uncompressed streams, no chunks yet) ready for
// Writer::AddStoredTensor, or decodable with its codec.
struct CutTensor {
  TensorInfo info;
  std::vector<std::vector<uint8_t>> streams;
};

// Cuts tensor `tensor` of `reader` by `maps` and names it `new_name`. The
// source streams are checksum-verified first. Chunks of whole outer rows are
// recomputed for element and block codecs.
absl::StatusOr<CutTensor> CutStoredTensor(const Reader& reader, size_t tensor, const ElementMaps& maps,
                                          std::string new_name);

// The same on a tensor held in memory: `info` (stored == raw) and its raw
// stream bytes.
absl::StatusOr<CutTensor> CutRawTensor(const TensorInfo& info, const std::vector<absl::Span<const uint8_t>>& streams,
                                       const ElementMaps& maps, std::string new_name);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_ELASTIC_CUT_H_
