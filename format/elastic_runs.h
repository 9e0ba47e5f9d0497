// Which elements of a bound dimension a budget keeps, as runs (format 1.2,
// spec/elastic.md §1 "What a budget keeps"): a plain axis keeps a prefix
// (one run), a grouped axis (GQA) the same prefix of every group (one run
// per group), a segmented dimension the kept runs of each axis segment at
// that segment's offset and every fixed segment whole, a product dimension
// "A*B" the kept units of B inside every kept (unit, element) of A. Shared by
// validation, slicing, budget views and DecodeBudget so they all cut the
// same elements.
#ifndef BOLTPACK_FORMAT_ELASTIC_RUNS_H_
#define BOLTPACK_FORMAT_ELASTIC_RUNS_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "boltpack/elastic.h"

namespace boltpack::format {

struct ElasticBound;

// Kept runs of one dimension, in order, adjacent runs merged, no empty run.
using DimRuns = std::vector<ElasticRun>;

// The effective group count (0 and 1 both mean one group).
inline uint64_t GroupsOf(const ElasticAxis& a) { return a.groups > 1 ? a.groups : 1; }

// Appends the runs of `count` of `parent` units of `axis` laid out from
// element `offset`: per group g of parent/groups units, the first
// count/groups units. Callers pass counts the validator accepted
// (divisible by the groups).
void AppendAxisRuns(const ElasticAxis& axis, uint64_t parent, uint64_t count, uint64_t offset, DimRuns* runs);

// What a dims entry or a segment's axis names: one axis (`inner` null) or,
// format 1.2, a product "outer*inner". `outer` is null when the entry is
// not a declared axis or a product of two declared, distinct axes of one
// scope (validation rejects such entries; cutting keeps the dimension).
struct EntryAxes {
  const ElasticAxis* outer = nullptr;
  const ElasticAxis* inner = nullptr;
  bool product() const { return inner != nullptr; }
};
EntryAxes ResolveEntry(const ElasticManifest& manifest, std::string_view entry);

// Units of `axis` in parent layer `layer` (ignored for a global axis); 0
// where the layer lacks the axis.
uint64_t ParentUnits(const ElasticAxis& axis, uint32_t layer);

// Elements the entry spans in `layer`: parent(A) x unit_elems(A), times
// parent(B) x unit_elems(B) for a product; nullopt on overflow or when
// `entry.outer` is null.
std::optional<uint64_t> EntryElems(const EntryAxes& entry, uint32_t layer);

// Appends the runs `budget` keeps of an entry laid out from element
// `offset` in `layer`: AppendAxisRuns for one axis; for a product, for
// every kept unit a of A (its prefix or per-group prefix) and every
// ua < unit_elems(A), B's kept runs shifted to (a x uA + ua) x parent(B) x uB.
void AppendEntryRuns(const ElasticManifest& manifest, const ElasticBudget& budget, const EntryAxes& entry,
                     uint32_t layer, uint64_t offset, DimRuns* runs);

// Per dimension of a tensor of `shape` bound as `bound`: the kept runs
// (one run [0, shape[d]) where nothing is cut).
std::vector<DimRuns> KeptRuns(const ElasticManifest& manifest, const ElasticBudget& budget, const ElasticBound& bound,
                              absl::Span<const uint64_t> shape);

// The shape a binding's dims describe: the tensor's own or, for a flat
// binding (format 1.4), one dimension of all its elements; empty when that
// count overflows.
std::vector<uint64_t> BoundShape(const ElasticBinding& binding, absl::Span<const uint64_t> shape);
// A flat binding's kept runs over the tensor's elements taken row-major;
// nullopt for any other binding.
std::optional<DimRuns> KeptFlatRuns(const ElasticManifest& manifest, const ElasticBudget& budget,
                                    const ElasticBound& bound, absl::Span<const uint64_t> shape);
// Runs over the flat elements of a tensor of `shape` as runs per dimension:
// every outer dimension whole and the innermost the runs of row 0, when
// every row keeps exactly those; nullopt when the runs are no such cut.
std::optional<std::vector<DimRuns>> FlatRunsByDim(const DimRuns& flat, absl::Span<const uint64_t> shape);
uint64_t RunsElems(const DimRuns& runs);
// True when the runs are the single run [0, size).
bool WholeDim(const DimRuns& runs, uint64_t size);

// Element maps (output index -> source index) from runs: empty where the
// dimension is kept whole (the form CutStoredTensor takes).
std::vector<std::vector<uint64_t>> RunMaps(absl::Span<const uint64_t> shape, const std::vector<DimRuns>& runs);

// The stored unit positions a budget keeping `count` of `parent` units of
// `axis` keeps, in order (a prefix, or a prefix of every group).
std::vector<uint64_t> KeptUnitPositions(const ElasticAxis& axis, uint64_t parent, uint64_t count);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_ELASTIC_RUNS_H_
