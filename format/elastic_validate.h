// Validation of an elastic manifest (spec/elastic.md "Validation") against
// the tensors of its file: structure, limits, parent sizes, bindings,
// budgets (granularity, at-most, nesting, layer masks), importance records,
// and that every budget cuts every block-quantized tensor on its block
// boundaries. Runs when a reader opens a file, when a writer finishes one
// and before `convert --elastic` writes anything.
#ifndef BOLTPACK_FORMAT_ELASTIC_VALIDATE_H_
#define BOLTPACK_FORMAT_ELASTIC_VALIDATE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "boltpack/tensor_info.h"
#include "boltpack_proto/boltpack.pb.h"
#include "boltpack/elastic.h"
#include "boltpack/types.h"

namespace boltpack::v1 {
class Manifest;
}  // namespace boltpack::v1

namespace boltpack::format {

// Limits (spec/elastic.md "Limits", rule ids E-3.1 to E-3.11).
inline constexpr uint64_t kMaxElasticLayers = 65536;  // [E-3.1]
inline constexpr uint64_t kMaxElasticAxes = 64;  // [E-3.2]
inline constexpr uint64_t kMaxElasticBindings = 65536;  // [E-3.3]
inline constexpr uint64_t kMaxElasticBudgets = 4096;  // [E-3.4]
inline constexpr uint64_t kMaxElasticAxisUnits = uint64_t{1} << 32;  // [E-3.5]
inline constexpr uint64_t kMaxElasticNameBytes = 256;  // [E-3.9]
inline constexpr uint64_t kMaxElasticTemplateBytes = 4096;  // [E-3.10]
inline constexpr uint64_t kMaxElasticSegments = 64;  // per segmented dimension [E-3.6]

// What the validator needs to know of one tensor of the file.
struct ElasticTensorRef {
  std::string_view name;
  absl::Span<const uint64_t> shape;
  std::string_view codec_id;
  DType dtype = DType::kUnspecified;
  const CodecParams* params = nullptr;
};

// `file` prefixes every message. Errors are DataLoss (kResourceExhausted for
// limits) naming the axis, binding, budget or tensor at fault.
absl::Status ValidateElastic(const ElasticManifest& manifest, const std::vector<ElasticTensorRef>& tensors,
                             const std::string& file);

// The elastic manifest of a container manifest against its tensors, once
// they are validated and converted (the reader's records).
absl::Status ValidateElasticOf(const v1::ElasticManifest& elastic, absl::Span<const TensorInfo> tensors,
                               const std::string& file);

// A budget's kept units per (axis index, layer) in O(1) (KeptUnits is
// linear in the budget's size lists).
class BudgetCounts {
 public:
  BudgetCounts(const ElasticManifest& manifest, const ElasticBudget& budget);
  uint64_t operator()(size_t axis, uint32_t layer) const;

 private:
  const ElasticManifest& manifest_;
  const ElasticBudget& budget_;
  std::vector<const std::vector<uint64_t>*> listed_;
};

// Validation work is bounded by budgets x (sum of the axes' parent sizes).
inline constexpr uint64_t kMaxElasticBudgetCells = uint64_t{1} << 26;  // [E-3.11]

// The binding that covers a tensor, and the tensor's parent layer (for
// templates with "{L}"). One resolution shared by validation and slicing.
struct ElasticBound {
  const ElasticBinding* binding = nullptr;
  bool in_layer = false;
  uint32_t layer = 0;
};
class BindingIndex {
 public:
  explicit BindingIndex(const ElasticManifest& manifest);
  ElasticBound Resolve(std::string_view tensor_name) const;

 private:
  const ElasticManifest& manifest_;
  std::unordered_map<std::string, const ElasticBinding*> by_template_;
};

// Elements of each dimension of a tensor of `shape` that `budget` keeps (the
// total of its kept runs, format/elastic_runs.h). `bound` from
// BindingIndex::Resolve; shape[d] where unbound.
std::vector<uint64_t> KeptExtents(const ElasticManifest& manifest, const ElasticBudget& budget,
                                  const ElasticBound& bound, absl::Span<const uint64_t> shape);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_ELASTIC_VALIDATE_H_
