#include "format/elastic_runs.h"

#include <algorithm>

#include "common/checked_math.h"
#include "format/elastic_validate.h"

namespace boltpack::format {
namespace {

void Append(DimRuns* runs, uint64_t start, uint64_t length) {
  if (length == 0) return;
  if (!runs->empty() && runs->back().start + runs->back().length == start) {
    runs->back().length += length;
    return;
  }
  runs->push_back({start, length});
}

}  // namespace

void AppendAxisRuns(const ElasticAxis& axis, uint64_t parent, uint64_t count, uint64_t offset, DimRuns* runs) {
  uint64_t groups = GroupsOf(axis);
  uint64_t u = axis.unit_elems;
  if (count >= parent || parent % groups != 0) {  // whole (or not a valid grouping: never cut wrong)
    Append(runs, offset, std::min(count, parent) * u);
    return;
  }
  uint64_t per_group = parent / groups;
  uint64_t keep = count / groups;
  for (uint64_t g = 0; g < groups; ++g) Append(runs, offset + g * per_group * u, keep * u);
}

EntryAxes ResolveEntry(const ElasticManifest& m, std::string_view entry) {
  auto product = SplitElasticProduct(entry);
  if (!product) return {m.FindAxis(entry), nullptr};
  const ElasticAxis* outer = m.FindAxis(product->outer);
  const ElasticAxis* inner = m.FindAxis(product->inner);  // null for a third factor: "b*c" is no axis name
  if (outer == nullptr || inner == nullptr || outer == inner || outer->scope != inner->scope) return {};
  return {outer, inner};
}

uint64_t ParentUnits(const ElasticAxis& axis, uint32_t layer) {
  size_t k = axis.scope == ElasticScope::kLayer ? layer : 0;
  return k < axis.parent.size() ? axis.parent[k] : 0;
}

std::optional<uint64_t> EntryElems(const EntryAxes& e, uint32_t layer) {
  if (e.outer == nullptr) return std::nullopt;
  auto elems = CheckedMul(ParentUnits(*e.outer, layer), e.outer->unit_elems);
  if (!e.product() || !elems) return elems;
  auto inner = CheckedMul(ParentUnits(*e.inner, layer), e.inner->unit_elems);
  return inner ? CheckedMul(*elems, *inner) : std::nullopt;
}

void AppendEntryRuns(const ElasticManifest& m, const ElasticBudget& budget, const EntryAxes& e, uint32_t layer,
                     uint64_t offset, DimRuns* runs) {
  if (e.outer == nullptr) return;
  const ElasticAxis& a = *e.outer;
  uint64_t parent_a = ParentUnits(a, layer);
  uint64_t count_a = m.KeptUnits(budget, a, layer);
  if (!e.product()) {
    AppendAxisRuns(a, parent_a, count_a, offset, runs);
    return;
  }
  const ElasticAxis& b = *e.inner;
  uint64_t parent_b = ParentUnits(b, layer);
  uint64_t block = parent_b * b.unit_elems;  // one element of one unit of A: all of B
  // B's kept runs inside one block, the same in every block.
  DimRuns inner;
  AppendAxisRuns(b, parent_b, m.KeptUnits(budget, b, layer), 0, &inner);
  // A's kept units, as runs of unit positions (a prefix, or one per group).
  ElasticAxis units_of_a = a;
  units_of_a.unit_elems = 1;
  DimRuns kept_a;
  AppendAxisRuns(units_of_a, parent_a, count_a, 0, &kept_a);
  for (const ElasticRun& ra : kept_a) {
    for (uint64_t unit = ra.start; unit < ra.start + ra.length; ++unit) {
      for (uint64_t ua = 0; ua < a.unit_elems; ++ua) {
        uint64_t base = offset + (unit * a.unit_elems + ua) * block;
        for (const ElasticRun& rb : inner) Append(runs, base + rb.start, rb.length);
      }
    }
  }
}

namespace {

// The kept runs of dimension `d` (of `size` elements) of the binding's dims
// (for a flat binding, d 0 spans all the tensor's elements).
DimRuns EntryDimRuns(const ElasticManifest& m, const ElasticBudget& budget, const ElasticBound& bound, size_t d,
                     uint64_t size) {
  DimRuns whole{{0, size}};
  const std::string& name = bound.binding->dims[d];
  if (const ElasticSegmentedDim* seg = bound.binding->SegmentsOf(d); seg != nullptr && name == kElasticSegmentedDim) {
    DimRuns r;
    uint64_t offset = 0;
    for (const ElasticSegment& s : seg->segments) {
      EntryAxes e = s.axis.empty() ? EntryAxes{} : ResolveEntry(m, s.axis);
      std::optional<uint64_t> elems = EntryElems(e, bound.layer);
      if (!elems) {
        Append(&r, offset, s.fixed_elems);
        offset += s.fixed_elems;
        continue;
      }
      AppendEntryRuns(m, budget, e, bound.layer, offset, &r);
      offset += *elems;
    }
    return offset == size ? r : whole;  // else invalid: never cut wrong
  }
  EntryAxes e = ResolveEntry(m, name);
  if (e.product()) {
    // A product that does not span the dimension is invalid: keep the
    // dimension whole rather than cut it wrong.
    if (EntryElems(e, bound.layer) != size) return whole;
    DimRuns r;
    AppendEntryRuns(m, budget, e, bound.layer, 0, &r);
    return r;
  }
  const ElasticAxis* a = e.outer;
  if (a == nullptr) return whole;
  uint64_t parent = ParentUnits(*a, bound.layer);
  DimRuns r;
  if (parent * a->unit_elems != size) {
    // Not what validation accepts; keep the old prefix rule so nothing
    // reads past the dimension.
    Append(&r, 0, std::min(size, m.KeptUnits(budget, *a, bound.layer) * a->unit_elems));
    return r;
  }
  AppendAxisRuns(*a, parent, m.KeptUnits(budget, *a, bound.layer), 0, &r);
  return r;
}

}  // namespace

std::vector<uint64_t> BoundShape(const ElasticBinding& binding, absl::Span<const uint64_t> shape) {
  if (!binding.flat) return {shape.begin(), shape.end()};
  uint64_t n = 1;
  for (uint64_t s : shape) {
    auto next = CheckedMul(n, s);
    if (!next) return {};
    n = *next;
  }
  return {n};
}

std::optional<DimRuns> KeptFlatRuns(const ElasticManifest& m, const ElasticBudget& budget, const ElasticBound& bound,
                                    absl::Span<const uint64_t> shape) {
  if (bound.binding == nullptr || !bound.binding->flat || bound.binding->dims.size() != 1) return std::nullopt;
  std::vector<uint64_t> flat = BoundShape(*bound.binding, shape);
  if (flat.size() != 1) return std::nullopt;
  return EntryDimRuns(m, budget, bound, 0, flat[0]);
}

std::optional<std::vector<DimRuns>> FlatRunsByDim(const DimRuns& flat, absl::Span<const uint64_t> shape) {
  if (shape.empty() || shape.back() == 0) return std::nullopt;
  uint64_t inner = shape.back();
  uint64_t rows = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];  // numel fits: BoundShape checked it
  // Split the runs at row ends; row r's pieces must be row 0's, in order.
  DimRuns row0;
  size_t next = 0;  // index into row0 of the piece row `row` must show next
  uint64_t row = 0;
  for (const ElasticRun& run : flat) {
    for (uint64_t at = run.start, end = run.start + run.length; at < end;) {
      uint64_t r = at / inner, col = at % inner;
      uint64_t len = std::min(end - at, inner - col);
      if (r != row) {
        // A row skipped, or one after row 0 left short (row 0 defines the pieces).
        if (r != row + 1 || (row > 0 && next != row0.size())) return std::nullopt;
        row = r;
        next = 0;
      }
      if (row == 0) {
        Append(&row0, col, len);
      } else {
        // Pieces within a row are maximal (runs are merged), so each equals
        // one of row 0's.
        if (next >= row0.size() || row0[next].start != col || row0[next].length != len) return std::nullopt;
        ++next;
      }
      at += len;
    }
  }
  if (row + 1 != rows || (rows > 1 && next != row0.size())) return std::nullopt;
  std::vector<DimRuns> out(shape.size());
  for (size_t d = 0; d + 1 < shape.size(); ++d) out[d] = {{0, shape[d]}};
  out.back() = std::move(row0);
  return out;
}

std::vector<DimRuns> KeptRuns(const ElasticManifest& m, const ElasticBudget& budget, const ElasticBound& bound,
                              absl::Span<const uint64_t> shape) {
  std::vector<DimRuns> runs(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) runs[d] = {{0, shape[d]}};
  if (bound.binding == nullptr) return runs;
  if (bound.binding->flat) {
    // Flat (format 1.4): cut as one dimension, kept as the tensor's own
    // dimensions; a cut they cannot express is invalid and never made.
    std::optional<DimRuns> flat = KeptFlatRuns(m, budget, bound, shape);
    auto by_dim = flat ? FlatRunsByDim(*flat, shape) : std::nullopt;
    return by_dim ? *by_dim : runs;
  }
  if (bound.binding->dims.size() != shape.size()) return runs;
  for (size_t d = 0; d < shape.size(); ++d) runs[d] = EntryDimRuns(m, budget, bound, d, shape[d]);
  return runs;
}

uint64_t RunsElems(const DimRuns& runs) {
  uint64_t n = 0;
  for (const auto& r : runs) n += r.length;
  return n;
}

bool WholeDim(const DimRuns& runs, uint64_t size) {
  return runs.size() == 1 && runs[0].start == 0 && runs[0].length == size;
}

std::vector<std::vector<uint64_t>> RunMaps(absl::Span<const uint64_t> shape, const std::vector<DimRuns>& runs) {
  std::vector<std::vector<uint64_t>> maps(shape.size());
  for (size_t d = 0; d < shape.size() && d < runs.size(); ++d) {
    if (WholeDim(runs[d], shape[d])) continue;
    maps[d].reserve(RunsElems(runs[d]));
    for (const auto& r : runs[d]) {
      for (uint64_t j = 0; j < r.length; ++j) maps[d].push_back(r.start + j);
    }
  }
  return maps;
}

std::vector<uint64_t> KeptUnitPositions(const ElasticAxis& axis, uint64_t parent, uint64_t count) {
  ElasticAxis unit = axis;
  unit.unit_elems = 1;
  DimRuns runs;
  AppendAxisRuns(unit, parent, count, 0, &runs);
  std::vector<uint64_t> pos;
  for (const auto& r : runs) {
    for (uint64_t j = 0; j < r.length; ++j) pos.push_back(r.start + j);
  }
  return pos;
}

}  // namespace boltpack::format
