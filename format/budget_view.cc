#include "boltpack/budget_view.h"

#include <algorithm>
#include <cstring>

#include "boltpack/codec_registry.h"
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

namespace {

// The view a call reads: `view`, or the reader's own when empty; NOT_FOUND
// for one the file does not declare.
absl::StatusOr<std::string> ResolveView(const Reader& reader, std::string_view view) {
  std::string v = view.empty() ? reader.view() : std::string(view);
  for (const auto& info : reader.views()) {
    if (info.name == v) return v;
  }
  return absl::NotFoundError(StrCat(reader.path(), ": no view \"", v, "\""));
}

absl::StatusOr<format::SlicePlan> Plan(const Reader& reader, std::string_view budget_name) {
  const ElasticManifest* m = reader.elastic();
  if (m == nullptr) return absl::NotFoundError(StrCat(reader.path(), ": has no elastic manifest"));
  const ElasticBudget* budget = m->FindBudget(budget_name);
  if (budget == nullptr) return absl::NotFoundError(StrCat(reader.path(), ": no budget \"", budget_name, "\""));
  return format::PlanSlice(*m, reader.tensors(), {}, *budget);
}

// The kept prefix `keep` of a row-major grid `grid` of `cell`-byte cells as
// runs: the innermost cut dimension t gives runs of keep[t] times the
// (whole) dimensions inside it; dimensions outside repeat it.
void CutGrid(const std::vector<uint64_t>& grid, const std::vector<uint64_t>& keep, uint64_t cell,
             uint64_t whole_bytes, StridedRegion* r) {
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
    r->run_bytes = whole_bytes;
    return;
  }
  r->run_bytes = keep[t] * inner;
  uint64_t stride = inner * grid[t];
  for (size_t d = t; d-- > 0;) {
    r->counts.insert(r->counts.begin(), keep[d]);
    r->strides.insert(r->strides.begin(), stride);
    stride *= grid[d];
  }
}

absl::Status CheckKept(const Reader& reader, const BudgetTensor& t) {
  if (t.tensor >= reader.tensors().size()) {
    return absl::OutOfRangeError(StrCat(reader.path(), ": tensor index ", t.tensor, " past the end (",
                                        reader.tensors().size(), " tensors)"));
  }
  const TensorInfo& info = reader.tensors()[t.tensor];
  bool ok = t.shape.size() == info.shape.size();
  for (size_t d = 0; ok && d < t.shape.size(); ++d) ok = t.shape[d] <= info.shape[d];
  if (!ok) {
    return absl::InvalidArgumentError(StrCat(reader.path(), ": tensor \"", info.name,
                                             "\": kept shape is not a prefix of its shape"));
  }
  return absl::OkStatus();
}

uint64_t Product(const std::vector<uint64_t>& v, size_t from = 0) {
  uint64_t n = 1;
  for (size_t d = from; d < v.size(); ++d) n *= v[d];
  return n;
}

bool InnerCut(const TensorInfo& info, const BudgetTensor& t) {
  for (size_t d = 1; d < t.shape.size(); ++d) {
    if (t.shape[d] < info.shape[d]) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::vector<BudgetTensor>> BudgetTensors(const Reader& reader, std::string_view budget) {
  BP_ASSIGN_OR_RETURN(auto plan, Plan(reader, budget));
  std::vector<BudgetTensor> out;
  out.reserve(plan.tensors.size());
  for (auto& p : plan.tensors) out.push_back(BudgetTensor{p.source, std::move(p.name), std::move(p.kept)});
  return out;
}

absl::StatusOr<BudgetTensorView> BudgetView(const Reader& reader, const BudgetTensor& t, std::string_view view_name) {
  BP_ASSIGN_OR_RETURN(std::string view, ResolveView(reader, view_name));
  BP_RETURN_IF_ERROR(CheckKept(reader, t));
  const TensorInfo& info = reader.tensors()[t.tensor];
  std::string where = StrCat(reader.path(), ": tensor \"", info.name, "\"");
  auto layout = format::StoredCellLayout(info.codec_id, info.dtype, info.codec_params);
  if (!info.shape.empty() &&
      (!layout || layout->cell_bytes.size() != info.streams.size() ||
       info.shape.back() % layout->block_elems != 0 || t.shape.back() % layout->block_elems != 0)) {
    return absl::UnimplementedError(StrCat(where, ": codec \"", info.codec_id,
                                           "\" has no fixed cells to view in place; use DecodeBudget or bolt-pack slice"));
  }
  BudgetTensorView v;
  v.tensor = t.tensor;
  v.name = t.name;
  v.shape = t.shape;
  for (size_t k = 0; k < info.streams.size(); ++k) {
    if (!ViewReadsStream(view, info.streams[k])) continue;
    if (info.streams[k].compression != Compression::kNone) {
      return absl::UnimplementedError(StrCat(where, ": stream \"", info.streams[k].role,
                                             "\" is compressed, so it cannot be viewed in place; use DecodeBudget"));
    }
    BP_ASSIGN_OR_RETURN(auto stored, reader.StoredStream(t.tensor, k));
    StridedRegion r;
    r.base = stored;
    r.stream = k;
    if (info.shape.empty()) {
      r.run_bytes = stored.size();
      v.streams.push_back(std::move(r));
      continue;
    }
    // Cell grid: outer dimensions, innermost in blocks.
    std::vector<uint64_t> grid = info.shape, keep = t.shape;
    grid.back() /= layout->block_elems;
    keep.back() /= layout->block_elems;
    uint64_t cell = layout->cell_bytes[k];
    auto total = CheckedProduct(grid);
    if (!total || !CheckedMul(*total, cell) || *CheckedMul(*total, cell) != stored.size()) {
      return absl::DataLossError(StrCat(where, ": stream \"", info.streams[k].role, "\" does not hold its cells"));
    }
    CutGrid(grid, keep, cell, stored.size(), &r);
    v.streams.push_back(std::move(r));
  }
  return v;
}

absl::StatusOr<std::vector<BudgetTensorView>> BudgetViews(const Reader& reader, std::string_view budget) {
  return BudgetViews(reader, budget, reader.view());
}

absl::StatusOr<std::vector<BudgetTensorView>> BudgetViews(const Reader& reader, std::string_view budget,
                                                          std::string_view view) {
  BP_ASSIGN_OR_RETURN(std::string v, ResolveView(reader, view));
  BP_ASSIGN_OR_RETURN(auto tensors, BudgetTensors(reader, budget));
  std::vector<BudgetTensorView> views;
  views.reserve(tensors.size());
  for (const auto& t : tensors) {
    BP_ASSIGN_OR_RETURN(auto tv, BudgetView(reader, t, v));
    views.push_back(std::move(tv));
  }
  return views;
}

absl::StatusOr<uint64_t> BudgetDecodedBytes(const Reader& reader, const BudgetTensor& t, OutputType out) {
  BP_RETURN_IF_ERROR(CheckKept(reader, t));
  const TensorInfo& info = reader.tensors()[t.tensor];
  BP_ASSIGN_OR_RETURN(uint64_t total, reader.DecodedBytes(t.tensor, out));
  if (t.shape == info.shape) return total;
  uint64_t elems = info.element_count();
  if (elems == 0) return 0;
  if (total % elems == 0) return Product(t.shape) * (total / elems);
  if (!InnerCut(info, t) && total % info.shape[0] == 0) return total / info.shape[0] * t.shape[0];
  return absl::UnimplementedError(StrCat(reader.path(), ": tensor \"", info.name,
                                         "\": this output has no whole bytes per element, so an inner cut "
                                         "cannot be gathered; decode to F32, BF16 or F16"));
}

absl::Status DecodeBudget(const Reader& reader, const BudgetTensor& t, std::string_view view_name, OutputType out,
                          absl::Span<uint8_t> dst) {
  BP_ASSIGN_OR_RETURN(std::string view, ResolveView(reader, view_name));
  BP_ASSIGN_OR_RETURN(uint64_t bytes, BudgetDecodedBytes(reader, t, out));
  const TensorInfo& info = reader.tensors()[t.tensor];
  if (dst.size() != bytes) {
    return absl::InvalidArgumentError(StrCat(reader.path(), ": tensor \"", info.name, "\": the budget's part is ",
                                             bytes, " bytes, buffer of ", dst.size()));
  }
  if (info.shape.empty() || t.shape == info.shape) return reader.Decode(t.tensor, view, out, dst);
  if (bytes == 0) return absl::OkStatus();
  BP_ASSIGN_OR_RETURN(uint64_t total, reader.DecodedBytes(t.tensor, out));
  const uint64_t row_bytes = total / info.shape[0];
  const bool inner_cut = InnerCut(info, t);
  // The kept prefix of the inner dimensions of one decoded row.
  StridedRegion row;
  row.run_bytes = row_bytes;
  uint64_t kept_row = row_bytes;
  if (inner_cut) {
    const uint64_t esize = total / info.element_count();
    std::vector<uint64_t> grid(info.shape.begin() + 1, info.shape.end());
    std::vector<uint64_t> keep(t.shape.begin() + 1, t.shape.end());
    CutGrid(grid, keep, esize, row_bytes, &row);
    kept_row = row.total_bytes();
  }
  uint8_t* o = dst.data();
  auto gather = [&](const uint8_t* rows, uint64_t n) -> absl::Status {
    for (uint64_t r = 0; r < n; ++r) {
      row.base = absl::MakeConstSpan(rows + r * row_bytes, row_bytes);
      BP_RETURN_IF_ERROR(row.CopyTo(absl::MakeSpan(o, kept_row)));
      o += kept_row;
    }
    return absl::OkStatus();
  };
  absl::Status st = absl::OkStatus();
  if (!inner_cut) {
    st = reader.DecodeRows(t.tensor, view, 0, t.shape[0], out, dst);
  } else {
    // Batches of kept rows (about 16 MiB decoded at a time).
    const uint64_t batch = std::max<uint64_t>(1, std::min<uint64_t>(t.shape[0], (16u << 20) / row_bytes));
    std::vector<uint8_t> tmp(batch * row_bytes);
    for (uint64_t r0 = 0; st.ok() && r0 < t.shape[0]; r0 += batch) {
      uint64_t r1 = std::min(t.shape[0], r0 + batch);
      st = reader.DecodeRows(t.tensor, view, r0, r1, out, absl::MakeSpan(tmp.data(), (r1 - r0) * row_bytes));
      if (st.ok()) st = gather(tmp.data(), r1 - r0);
    }
  }
  if (st.code() != absl::StatusCode::kUnimplemented) return st;
  // A codec that cannot decode a row range: decode it whole, then cut.
  o = dst.data();
  std::vector<uint8_t> whole(total);
  BP_RETURN_IF_ERROR(reader.Decode(t.tensor, view, out, absl::MakeSpan(whole)));
  return gather(whole.data(), t.shape[0]);
}

absl::Status DecodeBudget(const Reader& reader, std::string_view budget, size_t tensor, std::string_view view,
                          OutputType out, absl::Span<uint8_t> dst) {
  BP_ASSIGN_OR_RETURN(auto tensors, BudgetTensors(reader, budget));
  for (const auto& t : tensors) {
    if (t.tensor == tensor) return DecodeBudget(reader, t, view, out, dst);
  }
  std::string name = tensor < reader.tensors().size() ? reader.tensors()[tensor].name : StrCat("#", tensor);
  return absl::NotFoundError(StrCat(reader.path(), ": budget \"", budget, "\" drops tensor \"", name, "\""));
}

absl::StatusOr<uint64_t> BudgetBytes(const Reader& reader, std::string_view budget, std::string_view view_name) {
  BP_ASSIGN_OR_RETURN(std::string view, ResolveView(reader, view_name));
  BP_ASSIGN_OR_RETURN(auto tensors, BudgetTensors(reader, budget));
  uint64_t sum = 0;
  for (const auto& t : tensors) {
    const TensorInfo& info = reader.tensors()[t.tensor];
    auto tv = BudgetView(reader, t, view);
    if (tv.ok()) {
      for (const auto& r : tv->streams) sum += r.total_bytes();
      continue;
    }
    const Codec* codec = FindCodec(info.codec_id);
    const uint64_t rows = info.shape.empty() ? 1 : t.shape[0];
    for (size_t k = 0; k < info.streams.size(); ++k) {
      const StreamInfo& s = info.streams[k];
      if (!ViewReadsStream(view, s)) continue;
      if (rows == info.row_count() || codec == nullptr) {
        sum += s.length;
        continue;
      }
      if (rows == 0) continue;
      auto range = codec->RowRangeBytes(info, k, 0, rows);
      if (!range.ok()) {
        sum += s.length;
      } else if (s.compression == Compression::kNone) {
        sum += range->second - range->first;
      } else if (s.chunks.empty()) {
        sum += s.length;
      } else {
        for (const auto& c : s.chunks) {
          if (c.raw_offset < range->second && range->first < c.raw_offset + c.raw_length) sum += c.stored_length;
        }
      }
    }
  }
  return sum;
}

}  // namespace boltpack
