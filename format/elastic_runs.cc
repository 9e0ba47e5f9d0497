#include "format/elastic_runs.h"

#include <algorithm>

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
        const ElasticAxis* a = s.axis.empty() ? nullptr : m.FindAxis(s.axis);
        if (a == nullptr) {
          Append(&r, offset, s.fixed_elems);
          offset += s.fixed_elems;
          continue;
        }
        size_t k = a->scope == ElasticScope::kLayer ? bound.layer : 0;
        uint64_t parent = k < a->parent.size() ? a->parent[k] : 0;
        AppendAxisRuns(*a, parent, m.KeptUnits(budget, *a, bound.layer), offset, &r);
        offset += parent * a->unit_elems;
      }
      if (offset == shape[d]) runs[d] = std::move(r);  // else invalid: never cut wrong
      continue;
    }
    const ElasticAxis* a = m.FindAxis(name);
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
