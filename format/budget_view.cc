#include "boltpack/budget_view.h"

#include <algorithm>
#include <cstring>

#include "boltpack/codec_registry.h"
#include "boltpack/reader.h"
#include "common/escape.h"
#include "common/checked_math.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "format/elastic_manifest.h"
#include "format/elastic_plan.h"
#include "format/elastic_runs.h"

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
  // [C-15.5.1]
  return absl::NotFoundError(StrCat(reader.path(), ": no view \"", v, "\""));
}

absl::StatusOr<format::SlicePlan> Plan(const Reader& reader, std::string_view budget_name) {
  const ElasticManifest* m = reader.elastic();
  if (m == nullptr) return absl::NotFoundError(StrCat(reader.path(), ": has no elastic manifest"));
  const ElasticBudget* budget = m->FindBudget(budget_name);
  if (budget == nullptr) return absl::NotFoundError(StrCat(reader.path(), ": no budget \"", budget_name, "\""));
  return format::PlanSlice(*m, reader.tensors(), {}, *budget);
}

// A regular stretch of a dimension's kept runs: `count` runs of `length`
// at `start`, `start + stride`, ... (one run: count 1).
struct Piece {
  uint64_t start = 0, count = 1, stride = 0, length = 0;
};

std::vector<Piece> Pieces(const format::DimRuns& runs) {
  std::vector<Piece> out;
  for (const auto& r : runs) {
    if (!out.empty()) {
      Piece& p = out.back();
      uint64_t last = p.start + (p.count - 1) * p.stride;
      bool same_length = r.length == p.length && r.start > last;
      if (same_length && (p.count == 1 || r.start - last == p.stride)) {
        if (p.count == 1) p.stride = r.start - last;
        ++p.count;
        continue;
      }
    }
    out.push_back({r.start, 1, 0, r.length});
  }
  return out;
}

// One strided region of a grid, at `offset` bytes from the stream's start.
struct RegionShape {
  uint64_t offset = 0;
  std::vector<uint64_t> counts, strides;
  uint64_t run_bytes = 0;
};

void AddPiece(const Piece& p, uint64_t dim_stride, bool innermost_cut, RegionShape* r) {
  r->offset += p.start * dim_stride;
  if (p.count > 1) {
    r->counts.push_back(p.count);
    r->strides.push_back(p.stride * dim_stride);
  }
  if (innermost_cut) {
    r->run_bytes = p.length * dim_stride;
  } else {
    r->counts.push_back(p.length);
    r->strides.push_back(dim_stride);
  }
}

// The kept runs `runs` (in cells, per dimension) of a row-major grid `grid`
// of `cell`-byte cells as strided regions whose runs, concatenated in order,
// are the kept cells in row-major order. The innermost cut dimension t gives
// runs of its kept cells times the (whole) dimensions inside it; every other
// dimension up to t whose runs are regular (equal lengths at a fixed
// spacing: a prefix, a prefix per group, the same cut of repeated segments)
// adds (count, stride) levels. Irregular runs (mixed segments) on dimension
// j split the result into one region per regular piece of j, for every
// index tuple of the dimensions outside j.
std::vector<RegionShape> GridRegions(const std::vector<uint64_t>& grid, const std::vector<format::DimRuns>& runs,
                                     uint64_t cell) {
  size_t n = grid.size();
  std::vector<uint64_t> dim_stride(n, cell);
  for (size_t d = n; d-- > 1;) dim_stride[d - 1] = dim_stride[d] * grid[d];
  size_t t = n;
  for (size_t d = n; d-- > 0;) {
    if (!format::WholeDim(runs[d], grid[d])) {
      t = d;
      break;
    }
  }
  if (t == n) {
    RegionShape whole;
    whole.run_bytes = n == 0 ? cell : dim_stride[0] * grid[0];
    return {whole};
  }
  std::vector<std::vector<Piece>> pieces(t + 1);
  size_t j = t + 1;  // innermost dimension with irregular runs
  for (size_t d = 0; d <= t; ++d) {
    pieces[d] = Pieces(runs[d]);
    if (pieces[d].size() > 1) j = d;
  }
  // Levels of the dimensions inside j (one piece each).
  RegionShape inner;
  for (size_t d = (j > t ? 0 : j + 1); d <= t; ++d) AddPiece(pieces[d][0], dim_stride[d], d == t, &inner);
  if (j > t) return {inner};
  std::vector<RegionShape> out;
  // Every index tuple of the dimensions outside j, in row-major order.
  std::vector<std::vector<uint64_t>> index(j);
  for (size_t d = 0; d < j; ++d) {
    for (const auto& r : runs[d]) {
      for (uint64_t i = 0; i < r.length; ++i) index[d].push_back(r.start + i);
    }
  }
  std::vector<size_t> at(j, 0);
  for (;;) {
    uint64_t base = 0;
    for (size_t d = 0; d < j; ++d) base += index[d][at[d]] * dim_stride[d];
    for (const Piece& p : pieces[j]) {
      RegionShape r;
      r.offset = base;
      AddPiece(p, dim_stride[j], j == t, &r);
      r.offset += inner.offset;
      r.counts.insert(r.counts.end(), inner.counts.begin(), inner.counts.end());
      r.strides.insert(r.strides.end(), inner.strides.begin(), inner.strides.end());
      if (j != t) r.run_bytes = inner.run_bytes;
      out.push_back(std::move(r));
    }
    size_t d = j;
    while (d > 0) {
      --d;
      if (++at[d] < index[d].size()) break;
      at[d] = 0;
      if (d == 0) return out;
    }
    if (j == 0) return out;
  }
}

StridedRegion ToRegion(const RegionShape& shape, absl::Span<const uint8_t> stream, size_t k) {
  StridedRegion r;
  r.base = stream.subspan(std::min<uint64_t>(shape.offset, stream.size()));
  r.counts = shape.counts;
  r.strides = shape.strides;
  r.run_bytes = shape.run_bytes;
  r.stream = k;
  return r;
}

// The tensor's kept runs per dimension (a prefix of every dimension when
// the caller built `t` without runs).
std::vector<format::DimRuns> RunsOf(const BudgetTensor& t) {
  if (!t.runs.empty()) return t.runs;
  std::vector<format::DimRuns> runs(t.shape.size());
  for (size_t d = 0; d < t.shape.size(); ++d) runs[d] = {{0, t.shape[d]}};
  return runs;
}

absl::Status CheckKept(const Reader& reader, const BudgetTensor& t) {
  if (t.tensor >= reader.tensors().size()) {
    return absl::OutOfRangeError(StrCat(reader.path(), ": tensor index ", t.tensor, " past the end (",
                                        reader.tensors().size(), " tensors)"));
  }
  const auto shared = reader.SharedTensor(t.tensor);
  const TensorInfo& info = *shared;
  bool ok = t.shape.size() == info.shape.size();
  for (size_t d = 0; ok && d < t.shape.size(); ++d) ok = t.shape[d] <= info.shape[d];
  if (!ok) {
    return absl::InvalidArgumentError(StrCat(reader.path(), ": tensor ", QuoteForDisplay(info.name),
                                             ": kept shape is not a prefix of its shape"));
  }
  // Runs, when given: ascending, disjoint, inside the dimension, adding up
  // to the kept size.
  ok = t.runs.empty() || t.runs.size() == t.shape.size();
  for (size_t d = 0; ok && d < t.runs.size(); ++d) {
    uint64_t end = 0, sum = 0;
    for (const auto& r : t.runs[d]) {
      ok &= r.start >= end && r.length <= info.shape[d] && r.start <= info.shape[d] - r.length;
      end = r.start + r.length;
      sum += r.length;
    }
    ok &= sum == t.shape[d];
  }
  if (!ok) {
    return absl::InvalidArgumentError(StrCat(reader.path(), ": tensor ", QuoteForDisplay(info.name),
                                             ": kept runs do not match its shape and kept shape"));
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
  for (auto& p : plan.tensors) {
    out.push_back(BudgetTensor{p.source, std::move(p.name), std::move(p.kept), std::move(p.runs)});
  }
  return out;
}

absl::StatusOr<BudgetTensorView> BudgetView(const Reader& reader, const BudgetTensor& t, std::string_view view_name) {
  BP_ASSIGN_OR_RETURN(std::string view, ResolveView(reader, view_name));
  BP_RETURN_IF_ERROR(CheckKept(reader, t));
  const auto shared = reader.SharedTensor(t.tensor);
  const TensorInfo& info = *shared;
  std::string where = StrCat(reader.path(), ": tensor ", QuoteForDisplay(info.name));
  auto layout = format::StoredCellLayout(info.codec_id, info.dtype, info.codec_params);
  if (!info.shape.empty() &&
      (!layout || layout->cell_bytes.size() != info.streams.size() ||
       info.shape.back() % layout->block_elems != 0 || t.shape.back() % layout->block_elems != 0)) {
    return absl::UnimplementedError(StrCat(where, ": codec \"", info.codec_id,
                                           "\" has no fixed cells to view in place; use DecodeBudget or bolt-pack slice"));
  }
  // Runs in cells: the innermost dimension's in blocks (validation keeps
  // every kept run of a block codec on block boundaries).
  std::vector<format::DimRuns> cell_runs = RunsOf(t);
  if (!info.shape.empty() && !format::WholeDim(cell_runs.back(), info.shape.back())) {
    for (auto& r : cell_runs.back()) {
      if (r.start % layout->block_elems != 0 || r.length % layout->block_elems != 0) {
        return absl::InvalidArgumentError(StrCat(where, ": the kept run [", r.start, ", ", r.start + r.length,
                                                 ") of its innermost dimension splits its codec's blocks of ",
                                                 layout->block_elems, " elements"));
      }
      r.start /= layout->block_elems;
      r.length /= layout->block_elems;
    }
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
    if (info.shape.empty()) {
      StridedRegion r;
      r.base = stored;
      r.stream = k;
      r.run_bytes = stored.size();
      v.streams.push_back(std::move(r));
      continue;
    }
    // Cell grid: outer dimensions, innermost in blocks.
    std::vector<uint64_t> grid = info.shape;
    grid.back() /= layout->block_elems;
    if (format::WholeDim(cell_runs.back(), info.shape.back())) cell_runs.back() = {{0, grid.back()}};
    uint64_t cell = layout->cell_bytes[k];
    auto total = CheckedProduct(grid);
    if (!total || !CheckedMul(*total, cell) || *CheckedMul(*total, cell) != stored.size()) {
      return absl::DataLossError(StrCat(where, ": stream \"", info.streams[k].role, "\" does not hold its cells"));
    }
    // Several regions of one stream (irregular runs) follow each other in
    // order; their runs concatenated are the stream's kept bytes.
    for (const RegionShape& shape : GridRegions(grid, cell_runs, cell)) v.streams.push_back(ToRegion(shape, stored, k));
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
  const auto shared = reader.SharedTensor(t.tensor);
  const TensorInfo& info = *shared;
  BP_ASSIGN_OR_RETURN(uint64_t total, reader.DecodedBytes(t.tensor, out));
  if (t.shape == info.shape) return total;
  uint64_t elems = info.element_count();
  if (elems == 0) return 0;
  if (total % elems == 0) return Product(t.shape) * (total / elems);
  if (!InnerCut(info, t) && total % info.shape[0] == 0) return total / info.shape[0] * t.shape[0];
  return absl::UnimplementedError(StrCat(reader.path(), ": tensor ", QuoteForDisplay(info.name),
                                         ": this output has no whole bytes per element, so an inner cut "
                                         "cannot be gathered; decode to F32, BF16 or F16"));
}

absl::Status DecodeBudget(const Reader& reader, const BudgetTensor& t, std::string_view view_name, OutputType out,
                          absl::Span<uint8_t> dst) {
  BP_ASSIGN_OR_RETURN(std::string view, ResolveView(reader, view_name));
  BP_ASSIGN_OR_RETURN(uint64_t bytes, BudgetDecodedBytes(reader, t, out));
  const auto shared = reader.SharedTensor(t.tensor);
  const TensorInfo& info = *shared;
  if (dst.size() != bytes) {
    return absl::InvalidArgumentError(StrCat(reader.path(), ": tensor ", QuoteForDisplay(info.name), ": the budget's part is ",
                                             bytes, " bytes, buffer of ", dst.size()));
  }
  if (info.shape.empty() || t.shape == info.shape) return reader.Decode(t.tensor, view, out, dst);
  if (bytes == 0) return absl::OkStatus();
  BP_ASSIGN_OR_RETURN(uint64_t total, reader.DecodedBytes(t.tensor, out));
  const uint64_t row_bytes = total / info.shape[0];
  const bool inner_cut = InnerCut(info, t);
  const std::vector<format::DimRuns> runs = RunsOf(t);
  // The kept runs of the inner dimensions of one decoded row, as regions
  // from the row's start.
  std::vector<RegionShape> row_regions;
  if (inner_cut) {
    const uint64_t esize = total / info.element_count();
    std::vector<uint64_t> grid(info.shape.begin() + 1, info.shape.end());
    std::vector<format::DimRuns> inner(runs.begin() + 1, runs.end());
    row_regions = GridRegions(grid, inner, esize);
  }
  uint8_t* o = dst.data();
  auto gather = [&](const uint8_t* rows, uint64_t n) -> absl::Status {
    for (uint64_t r = 0; r < n; ++r) {
      auto row = absl::MakeConstSpan(rows + r * row_bytes, row_bytes);
      for (const auto& shape : row_regions) {
        StridedRegion region = ToRegion(shape, row, 0);
        uint64_t len = region.total_bytes();
        BP_RETURN_IF_ERROR(region.CopyTo(absl::MakeSpan(o, len)));
        o += len;
      }
    }
    return absl::OkStatus();
  };
  // The kept outer rows: runs of the outermost dimension (a prefix, or a
  // prefix per group or segment).
  absl::Status st = absl::OkStatus();
  if (!inner_cut) {
    // One decode of every kept run: each chunk is read and checked once.
    std::vector<RowRange> ranges;
    for (const auto& run : runs[0]) ranges.push_back({run.start, run.start + run.length});
    st = reader.DecodeRowRanges(t.tensor, view, ranges, out, dst);
  } else {
    // Batches of kept rows (about 16 MiB decoded at a time).
    const uint64_t batch = std::max<uint64_t>(1, std::min<uint64_t>(t.shape[0], (16u << 20) / row_bytes));
    std::vector<uint8_t> tmp(batch * row_bytes);
    for (const auto& run : runs[0]) {
      for (uint64_t r0 = run.start; st.ok() && r0 < run.start + run.length; r0 += batch) {
        uint64_t r1 = std::min(run.start + run.length, r0 + batch);
        st = reader.DecodeRows(t.tensor, view, r0, r1, out, absl::MakeSpan(tmp.data(), (r1 - r0) * row_bytes));
        if (st.ok()) st = gather(tmp.data(), r1 - r0);
      }
    }
  }
  if (st.code() != absl::StatusCode::kUnimplemented) return st;
  // A codec that cannot decode a row range: decode it whole, then cut.
  o = dst.data();
  std::vector<uint8_t> whole(total);
  BP_RETURN_IF_ERROR(reader.Decode(t.tensor, view, out, absl::MakeSpan(whole)));
  for (const auto& run : runs[0]) {
    if (!inner_cut) {
      std::memcpy(o, whole.data() + run.start * row_bytes, run.length * row_bytes);
      o += run.length * row_bytes;
    } else {
      BP_RETURN_IF_ERROR(gather(whole.data() + run.start * row_bytes, run.length));
    }
  }
  return absl::OkStatus();
}

absl::Status DecodeBudget(const Reader& reader, std::string_view budget, size_t tensor, std::string_view view,
                          OutputType out, absl::Span<uint8_t> dst) {
  BP_ASSIGN_OR_RETURN(auto tensors, BudgetTensors(reader, budget));
  for (const auto& t : tensors) {
    if (t.tensor == tensor) return DecodeBudget(reader, t, view, out, dst);
  }
  std::string name = tensor < reader.tensors().size() ? std::string(reader.TensorName(tensor)) : StrCat("#", tensor);
  return absl::NotFoundError(StrCat(reader.path(), ": budget \"", budget, "\" drops tensor ", QuoteForDisplay(name)));
}

absl::StatusOr<uint64_t> BudgetBytes(const Reader& reader, std::string_view budget, std::string_view view_name) {
  BP_ASSIGN_OR_RETURN(std::string view, ResolveView(reader, view_name));
  BP_ASSIGN_OR_RETURN(auto tensors, BudgetTensors(reader, budget));
  uint64_t sum = 0;
  for (const auto& t : tensors) {
    const auto shared = reader.SharedTensor(t.tensor);
    const TensorInfo& info = *shared;
    auto tv = BudgetView(reader, t, view);
    if (tv.ok()) {
      for (const auto& r : tv->streams) sum += r.total_bytes();
      continue;
    }
    const Codec* codec = FindCodec(info.codec_id);
    const uint64_t rows = info.shape.empty() ? 1 : t.shape[0];
    const std::vector<format::DimRuns> runs = RunsOf(t);
    for (size_t k = 0; k < info.streams.size(); ++k) {
      const StreamInfo& s = info.streams[k];
      if (!ViewReadsStream(view, s)) continue;
      if (rows == info.row_count() || codec == nullptr || info.shape.empty()) {
        sum += s.length;
        continue;
      }
      if (rows == 0) continue;
      // The raw byte ranges of the kept outer rows (one per run).
      std::vector<std::pair<uint64_t, uint64_t>> ranges;
      bool ok = true;
      for (const auto& run : runs[0]) {
        auto range = codec->RowRangeBytes(info, k, run.start, run.start + run.length);
        if (!range.ok()) {
          ok = false;
          break;
        }
        ranges.push_back(*range);
      }
      if (!ok || (s.compression != Compression::kNone && s.chunks.empty())) {
        sum += s.length;
      } else if (s.compression == Compression::kNone) {
        for (const auto& r : ranges) sum += r.second - r.first;
      } else {
        // Each chunk holding a kept row once.
        for (const auto& c : s.chunks) {
          bool hit = false;
          for (const auto& r : ranges) hit |= c.raw_offset < r.second && r.first < c.raw_offset + c.raw_length;
          if (hit) sum += c.stored_length;
        }
      }
    }
  }
  return sum;
}

}  // namespace boltpack
