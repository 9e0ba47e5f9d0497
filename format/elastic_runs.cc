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

std::vector<DimRuns> KeptRuns(const ElasticManifest& m, const ElasticBudget& budget, const ElasticBound& bound,
                              absl::Span<const uint64_t> shape) {
  std::vector<DimRuns> runs(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) runs[d] = {{0, shape[d]}};
  if (bound.binding == nullptr || bound.binding->dims.size() != shape.size()) return runs;
  for (size_t d = 0; d < shape.size(); ++d) {
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
      if (offset == shape[d]) runs[d] = std::move(r);  // else invalid: never cut wrong
      continue;
    }
    EntryAxes e = ResolveEntry(m, name);
    if (e.product()) {
      // A product that does not span the dimension is invalid: keep the
      // dimension whole rather than cut it wrong.
      if (EntryElems(e, bound.layer) != shape[d]) continue;
      runs[d].clear();
      AppendEntryRuns(m, budget, e, bound.layer, 0, &runs[d]);
      continue;
    }
    const ElasticAxis* a = e.outer;
    if (a == nullptr) continue;
    size_t k = a->scope == ElasticScope::kLayer ? bound.layer : 0;
    uint64_t parent = k < a->parent.size() ? a->parent[k] : 0;
    if (parent * a->unit_elems != shape[d]) {
      // Not what validation accepts; keep the old prefix rule so nothing
      // reads past the dimension.
      runs[d].clear();
      Append(&runs[d], 0, std::min(shape[d], m.KeptUnits(budget, *a, bound.layer) * a->unit_elems));
      continue;
    }
    runs[d].clear();
    AppendAxisRuns(*a, parent, m.KeptUnits(budget, *a, bound.layer), 0, &runs[d]);
  }
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
