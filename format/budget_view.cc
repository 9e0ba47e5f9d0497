#include "boltpack/budget_view.h"

#include <cstring>

#include "boltpack/reader.h"
#include "common/checked_math.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "format/elastic_manifest.h"
#include "format/elastic_plan.h"

namespace boltpack {

bool StridedRegion::contiguous() const {
  for (uint64_t c : counts) {
    if (c > 1) return false;
  }
  return true;
}

uint64_t StridedRegion::total_bytes() const {
  uint64_t n = run_bytes;
  for (uint64_t c : counts) n *= c;
  return n;
}

absl::Status StridedRegion::CopyTo(absl::Span<uint8_t> dst) const {
  if (dst.size() != total_bytes()) {
    return absl::InvalidArgumentError(StrCat("region of ", total_bytes(), " bytes, buffer of ", dst.size()));
  }
  uint64_t runs = total_bytes() / (run_bytes == 0 ? 1 : run_bytes);
  if (run_bytes == 0) return absl::OkStatus();
  std::vector<uint64_t> idx(counts.size(), 0);
  uint8_t* out = dst.data();
  for (uint64_t r = 0; r < runs; ++r) {
    uint64_t off = 0;
    for (size_t k = 0; k < counts.size(); ++k) off += idx[k] * strides[k];
    std::memcpy(out, base.data() + off, run_bytes);
    out += run_bytes;
    for (size_t k = counts.size(); k-- > 0;) {
      if (++idx[k] < counts[k]) break;
      idx[k] = 0;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<BudgetTensorView>> BudgetViews(const Reader& reader, std::string_view budget_name) {
  const ElasticManifest* m = reader.elastic();
  if (m == nullptr) return absl::NotFoundError(StrCat(reader.path(), ": has no elastic manifest"));
  const ElasticBudget* budget = m->FindBudget(budget_name);
  if (budget == nullptr) return absl::NotFoundError(StrCat(reader.path(), ": no budget \"", budget_name, "\""));
  BP_ASSIGN_OR_RETURN(auto plan, format::PlanSlice(*m, reader.tensors(), {}, *budget));
  std::vector<BudgetTensorView> views;
  views.reserve(plan.tensors.size());
  for (const auto& p : plan.tensors) {
    const TensorInfo& info = reader.tensors()[p.source];
    std::string where = StrCat(reader.path(), ": tensor \"", info.name, "\"");
    auto layout = format::StoredCellLayout(info.codec_id, info.dtype, info.codec_params);
    if (!layout || layout->cell_bytes.size() != info.streams.size() || info.shape.empty() ||
        info.shape.back() % layout->block_elems != 0 || p.kept.back() % layout->block_elems != 0) {
      if (p.whole && info.shape.empty()) {
        // A 0-d tensor: its streams whole.
      } else {
        return absl::UnimplementedError(StrCat(where, ": codec \"", info.codec_id,
                                               "\" has no fixed cells to view in place; use bolt-pack slice"));
      }
    }
    BudgetTensorView v;
    v.tensor = p.source;
    v.name = p.name;
    v.shape = p.kept;
    for (size_t k = 0; k < info.streams.size(); ++k) {
      if (info.streams[k].compression != Compression::kNone) {
        return absl::UnimplementedError(StrCat(where, ": stream \"", info.streams[k].role,
                                               "\" is compressed, so it cannot be viewed in place"));
      }
      BP_ASSIGN_OR_RETURN(auto stored, reader.StoredStream(p.source, k));
      StridedRegion r;
      r.base = stored;
      if (info.shape.empty()) {
        r.run_bytes = stored.size();
        v.streams.push_back(std::move(r));
        continue;
      }
      // Cell grid: outer dimensions, innermost in blocks.
      std::vector<uint64_t> grid = info.shape, keep = p.kept;
      grid.back() /= layout->block_elems;
      keep.back() /= layout->block_elems;
      uint64_t cell = layout->cell_bytes[k];
      auto total = CheckedProduct(grid);
      if (!total || !CheckedMul(*total, cell) || *CheckedMul(*total, cell) != stored.size()) {
        return absl::DataLossError(StrCat(where, ": stream \"", info.streams[k].role, "\" does not hold its cells"));
      }
      // The innermost cut dimension t: one run covers keep[t] times the
      // (whole) dimensions inside it; dimensions outside repeat it.
      size_t n = grid.size();
      size_t t = n;
      for (size_t d = n; d-- > 0;) {
        if (keep[d] < grid[d]) {
          t = d;
          break;
        }
      }
      uint64_t inner = cell;
      for (size_t d = t + 1; d < n; ++d) inner *= grid[d];
      if (t == n) {
        r.run_bytes = stored.size();
      } else {
        r.run_bytes = keep[t] * inner;
        uint64_t stride = inner * grid[t];
        for (size_t d = t; d-- > 0;) {
          r.counts.insert(r.counts.begin(), keep[d]);
          r.strides.insert(r.strides.begin(), stride);
          stride *= grid[d];
        }
      }
      v.streams.push_back(std::move(r));
    }
    views.push_back(std::move(v));
  }
  return views;
}

}  // namespace boltpack
