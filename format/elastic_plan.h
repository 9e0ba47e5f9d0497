// What slicing one budget out of an elastic model does (spec/elastic.md
// "Slicing"): which tensors survive, their new names (layers renumbered
// consecutively), the elements each keeps, the rewritten metadata, and the
// elastic manifest of the result (the budgets nested inside the cut).
#ifndef BOLTPACK_FORMAT_ELASTIC_PLAN_H_
#define BOLTPACK_FORMAT_ELASTIC_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "boltpack/elastic.h"
#include "boltpack/tensor_info.h"
#include "boltpack/tensor_list.h"
#include "boltpack/types.h"

namespace boltpack::format {

struct PlannedTensor {
  size_t source = 0;          // index in the input's tensors
  std::string name;           // after renumbering
  std::vector<uint64_t> kept; // elements kept per dimension (the kept shape)
  // Per dimension, which elements: one run [0, kept) for a prefix, one run
  // per group, segment piece or product block for grouped axes, segmented
  // and product dimensions (format/elastic_runs.h). RunMaps turns them into CutStoredTensor maps.
  std::vector<std::vector<ElasticRun>> runs;
  bool whole = false;         // nothing cut
};

struct SlicePlan {
  std::vector<PlannedTensor> tensors;
  Metadata metadata;
  ElasticManifest elastic;  // of the output
  uint32_t kept_layers = 0;
  std::vector<std::string> notes;  // e.g. metadata that became per-layer arrays
};

// `manifest` must be valid for `tensors` (as Reader::elastic() is).
absl::StatusOr<SlicePlan> PlanSlice(const ElasticManifest& manifest, const TensorList& tensors,
                                    const Metadata& metadata, const ElasticBudget& budget);

// A budget from "AXIS=VALUE" terms: VALUE is a fraction of the parent size
// ("0.5", rounded down to the axis granularity, at least one granule) or a
// unit count ("48", per layer). Every layer is kept. A fraction is rounded
// down to a multiple of both the granularity and the axis' groups.
absl::StatusOr<ElasticBudget> AdHocBudget(const ElasticManifest& manifest, const std::vector<std::string>& terms);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_ELASTIC_PLAN_H_
