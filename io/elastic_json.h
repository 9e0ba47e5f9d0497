// The elastic authoring JSON of `bolt-pack convert --elastic FILE`
// (spec/elastic.md "Authoring JSON"): parsed strictly (io/json.h; unknown
// keys are errors), resolved against the model's tensors (parent sizes from
// the bound dimensions), and turned into the stored manifest plus the unit
// orders that put every budget in prefix order.
#ifndef BOLTPACK_IO_ELASTIC_JSON_H_
#define BOLTPACK_IO_ELASTIC_JSON_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/elastic.h"

namespace boltpack::io {

// Limits of the authoring file (beyond the manifest's own).
inline constexpr uint64_t kMaxElasticJsonBytes = uint64_t{64} << 20;  // [E-3.12]

struct ElasticTensorShape {
  std::string name;
  std::vector<uint64_t> shape;
};

struct ElasticAuthoring {
  ElasticManifest manifest;
  // (axis index, layer) -> unit order: stored position p holds source unit
  // order[p]. Only for axes with importance scores.
  std::map<std::pair<size_t, uint32_t>, std::vector<uint32_t>> orders;

  // Per dimension of tensor `name` of `shape`: output index -> source index
  // when the tensor is permuted (empty map: dimension unchanged). All maps
  // empty when nothing moves.
  // A flat binding's tensor (format 1.4) is permuted as one dimension of
  // all its elements: one map per dimension where that moves every element
  // within its innermost row the same way in every row, else one map over
  // the tensor's elements taken flat (a grouped heads axis whose groups
  // have different orders): see PermutationFor, which says which.
  std::vector<std::vector<uint64_t>> MapsFor(std::string_view name, absl::Span<const uint64_t> shape) const;
  struct Permutation {
    std::vector<std::vector<uint64_t>> maps;
    std::vector<uint64_t> grid;  // the shape `maps` index: `shape`, or {numel} for a flat map
  };
  Permutation PermutationFor(std::string_view name, absl::Span<const uint64_t> shape) const;
  // MapsFor over the shape the tensor's binding describes (for a flat
  // binding: one dimension of all its elements).
  std::vector<std::vector<uint64_t>> MapsForBoundShape(std::string_view name, absl::Span<const uint64_t> shape) const;
};

// `file` names the JSON in messages. Checks everything that needs only the
// JSON and the tensor shapes; block alignment against codecs is
// format::ValidateElastic's (the caller knows the codecs).
absl::StatusOr<ElasticAuthoring> ParseElasticJson(std::string_view text, const std::string& file,
                                                  const std::vector<ElasticTensorShape>& tensors);

// The default "{arch}." metadata key for well-known axis names
// ("ffn" -> "feed_forward_length", ...); empty for others.
std::string_view DefaultElasticMetadataKey(std::string_view axis);

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_ELASTIC_JSON_H_
