// Zero-copy views of one elastic budget (spec/elastic.md §5.3):
// for each tensor the budget keeps, where its kept bytes lie inside the
// reader's mapping, as strided regions over each stored stream: contiguous
// when the cut is a prefix of the outermost dimension (or nothing is cut),
// otherwise `count` runs of `run_bytes` at a fixed stride per outer
// dimension, with an extra (count, stride) level for a dimension whose kept
// runs are regular but not one prefix (a grouped axis, format 1.2: a prefix
// of every GQA group; a fused dimension of repeated segments), and several
// regions of the same stream, in order, where the runs are irregular (mixed
// segments). Only uncompressed streams of codecs with fixed-size cells
// (element codecs, q8_0, mxfp4, nvfp4, nvfp4-ggml, int4-g128, iq2_xxs, GGUF
// blocks) can be viewed; for the rest (entropy-coded bf16-huffman,
// bf16-unary, bf16-spec, bf16-mx; compressed streams) DecodeBudget decodes
// the kept part into a caller buffer.
//
// Views (spec/container.md §15) compose with budgets: a budget view in view V
// holds regions only over the streams V reads, and DecodeBudget in view V
// equals cutting what Reader::Decode(tensor, V) gives (spec/elastic.md §5.4).
#ifndef BOLTPACK_BUDGET_VIEW_H_
#define BOLTPACK_BUDGET_VIEW_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/codec.h"
#include "boltpack/elastic.h"
#include "boltpack/types.h"

namespace boltpack {

class Reader;

// Kept bytes of one stream: for every index tuple i over `counts`
// (outermost first, row-major), the `run_bytes` bytes at
// base.data() + sum(i[k] * strides[k]). Empty `counts`: one run at base.
// A stream may be described by several regions (irregular runs): their
// runs, concatenated in order, are the stream's kept bytes.
struct StridedRegion {
  // The stream's stored bytes in the mapping, from the region's first byte
  // (the stream's start unless the first kept element is not the first).
  absl::Span<const uint8_t> base;
  std::vector<uint64_t> counts;
  std::vector<uint64_t> strides;   // bytes
  uint64_t run_bytes = 0;
  size_t stream = 0;               // index of the stream in the tensor record

  bool contiguous() const;
  uint64_t total_bytes() const;
  // Copies the runs, in order, to `dst` (exactly total_bytes()).
  absl::Status CopyTo(absl::Span<uint8_t> dst) const;
};

// One tensor a budget keeps.
struct BudgetTensor {
  size_t tensor = 0;                    // index in reader.tensors()
  std::string name;                     // with layers renumbered
  std::vector<uint64_t> shape;          // kept size of every dimension
  // Per dimension, the kept elements of the parent's dimension as runs
  // [start, start + length), ascending, adding up to shape[d]: one run
  // [0, shape[d]) for a prefix; one per group for a grouped axis, per
  // segment piece for a segmented dimension, per kept (unit, element) of
  // the outer axis of a product "A*B" (format 1.2). Empty: a prefix of
  // every dimension.
  std::vector<std::vector<ElasticRun>> runs;
};

struct BudgetTensorView {
  size_t tensor = 0;                    // index in reader.tensors()
  std::string name;                     // with layers renumbered
  std::vector<uint64_t> shape;          // kept
  // The regions of the stored streams the view reads, in record order
  // (every stream for "full"): one per stream, or several consecutive ones
  // for the same stream when its kept runs are irregular (concatenated in
  // order they are the stream's kept bytes); StridedRegion::stream is the
  // stream's index in the record.
  std::vector<StridedRegion> streams;
};

// Every tensor `budget` keeps, in file order, with its renumbered name and
// kept shape: any codec. NOT_FOUND for a file without an elastic manifest or
// a budget it does not declare.
absl::StatusOr<std::vector<BudgetTensor>> BudgetTensors(const Reader& reader, std::string_view budget);

// The zero-copy regions of one kept tensor in view `view` ("" means the
// reader's view, ReaderOptions::view): only the streams the view reads.
// UNIMPLEMENTED (naming the tensor) when one of them is compressed or the
// codec has no fixed cells; DecodeBudget reads such tensors.
absl::StatusOr<BudgetTensorView> BudgetView(const Reader& reader, const BudgetTensor& tensor,
                                            std::string_view view = {});

// Every tensor `budget` keeps, in file order, in the reader's view (or in
// `view`). Fails (naming the tensor) when a kept tensor's streams cannot be
// viewed in place.
absl::StatusOr<std::vector<BudgetTensorView>> BudgetViews(const Reader& reader, std::string_view budget);
absl::StatusOr<std::vector<BudgetTensorView>> BudgetViews(const Reader& reader, std::string_view budget,
                                                          std::string_view view);

// Bytes DecodeBudget of `tensor` to `out` writes (row-major, kept shape).
absl::StatusOr<uint64_t> BudgetDecodedBytes(const Reader& reader, const BudgetTensor& tensor, OutputType out);

// Decodes the kept part of `tensor` as view `view` ("" means the reader's
// view) sees it into `dst` (exactly BudgetDecodedBytes): the kept outer rows
// are decoded with Reader::DecodeRows (only their chunks are read; the rows
// after the kept prefix never are), then the kept prefix of every inner
// dimension is gathered (the kept runs of every dimension, format 1.2).
// Equals cutting Reader::Decode(tensor, view, out) to the kept elements, for
// every codec and every view. Any codec; an output form
// without a whole number of bytes per element (block-native output) is
// refused when an inner dimension is cut.
absl::Status DecodeBudget(const Reader& reader, const BudgetTensor& tensor, std::string_view view, OutputType out,
                          absl::Span<uint8_t> dst);
// The same by parent tensor index (plans the budget on every call; NOT_FOUND
// when the budget drops the tensor).
absl::Status DecodeBudget(const Reader& reader, std::string_view budget, size_t tensor, std::string_view view,
                          OutputType out, absl::Span<uint8_t> dst);

// Stored bytes a reader of `budget` in view `view` touches: for every kept
// tensor and every stream the view reads, the kept regions' bytes where the
// stream can be viewed in place, else the stored bytes of the chunks (whole
// stream when it has none) that hold the kept outer rows. Header, manifest
// and padding not counted.
absl::StatusOr<uint64_t> BudgetBytes(const Reader& reader, std::string_view budget, std::string_view view = {});

}  // namespace boltpack

#endif  // BOLTPACK_BUDGET_VIEW_H_
