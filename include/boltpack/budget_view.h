// Zero-copy views of one elastic budget (spec/elastic.md §5.3):
// for each tensor the budget keeps, where its kept bytes lie inside the
// reader's mapping, as a strided region over each stored stream: contiguous
// when the cut is a prefix of the outermost dimension (or nothing is cut),
// otherwise `count` runs of `run_bytes` at a fixed stride per outer
// dimension. Only uncompressed streams of codecs with fixed-size cells
// (element codecs, q8_0, mxfp4, nvfp4, nvfp4-ggml, int4-g128, iq2_xxs, GGUF
// blocks) can be viewed; `bolt-pack slice` handles the rest.
#ifndef BOLTPACK_BUDGET_VIEW_H_
#define BOLTPACK_BUDGET_VIEW_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace boltpack {

class Reader;

// The kept bytes of one stream: for every index tuple i over `counts`
// (outermost first, row-major), the `run_bytes` bytes at
// base.data() + sum(i[k] * strides[k]). Empty `counts`: one run at base.
struct StridedRegion {
  absl::Span<const uint8_t> base;  // the stream's stored bytes, in the mapping
  std::vector<uint64_t> counts;
  std::vector<uint64_t> strides;   // bytes
  uint64_t run_bytes = 0;

  bool contiguous() const;
  uint64_t total_bytes() const;
  // Copies the runs, in order, to `dst` (exactly total_bytes()).
  absl::Status CopyTo(absl::Span<uint8_t> dst) const;
};

struct BudgetTensorView {
  size_t tensor = 0;                    // index in reader.tensors()
  std::string name;                     // with layers renumbered
  std::vector<uint64_t> shape;          // kept
  std::vector<StridedRegion> streams;   // one per stored stream, record order
};

// Every tensor `budget` keeps, in file order. Fails (naming the tensor) when
// a kept tensor's streams cannot be viewed in place.
absl::StatusOr<std::vector<BudgetTensorView>> BudgetViews(const Reader& reader, std::string_view budget);

}  // namespace boltpack

#endif  // BOLTPACK_BUDGET_VIEW_H_
