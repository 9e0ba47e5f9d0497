// The elastic (nested-slice) manifest of format 1.1 (spec/elastic.md): the
// parent model's sliceable axes, which tensor dimensions follow them, and
// named budgets. Tensors are stored pre-permuted ("prefix" order), so a
// budget keeps the first `count * unit_elems` elements of every bound
// dimension and the layers its mask keeps.
#ifndef BOLTPACK_ELASTIC_H_
#define BOLTPACK_ELASTIC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace boltpack {

enum class ElasticScope : uint8_t { kUnspecified = 0, kLayer = 1, kGlobal = 2 };

struct ElasticAxis {
  std::string name;
  ElasticScope scope = ElasticScope::kLayer;
  uint64_t granularity = 1;
  uint64_t unit_elems = 1;
  // Units per parent layer (0: the layer lacks the axis), or one value for a
  // global axis.
  std::vector<uint64_t> parent;
  std::string at_most;       // axis bounding this one, or empty
  std::string metadata_key;  // "{arch}.<key>" holding the size, or empty
};

struct ElasticBinding {
  std::string tensor;              // name or template with "{L}"
  std::vector<std::string> dims;   // axis name or "-", outermost first
};

struct ElasticBudgetAxis {
  std::string axis;
  std::vector<uint64_t> counts;  // per parent layer, or one for a global axis
};

struct ElasticBudget {
  std::string name;
  std::vector<bool> layer_keep;
  std::vector<ElasticBudgetAxis> sizes;  // axes not listed keep their parent size
  std::string nested_in;
};

struct ElasticImportance {
  std::string axis;
  uint32_t layer = 0;
  std::vector<float> scores;    // by stored position
  std::vector<uint32_t> order;  // stored position -> source index
  std::string method;
};

struct ElasticManifest {
  uint32_t version = 1;
  bool prefix_order = true;  // storage order "prefix" (the only one defined)
  uint32_t layer_count = 0;
  std::string layer_pattern;  // e.g. "blk.{L}."
  std::vector<ElasticAxis> axes;
  std::vector<ElasticBinding> bindings;
  std::vector<ElasticBudget> budgets;
  std::vector<ElasticImportance> importance;

  const ElasticAxis* FindAxis(std::string_view name) const;
  const ElasticBudget* FindBudget(std::string_view name) const;
  // Kept units of `axis` in parent layer `layer` (ignored for a global
  // axis) under `budget`: its listed count, else the parent size; 0 for a
  // dropped layer.
  uint64_t KeptUnits(const ElasticBudget& budget, const ElasticAxis& axis, uint32_t layer) const;
};

// The parent layer a tensor name belongs to under `layer_pattern` (one
// "{L}"), and the name with the index replaced by "{L}"; nullopt when the
// name holds no such layer reference.
struct LayerRef {
  uint32_t layer = 0;
  std::string template_name;
  size_t digits_begin = 0;  // where the index is in the name
  size_t digits_length = 0;
};
std::optional<LayerRef> MatchLayer(std::string_view layer_pattern, std::string_view name);

}  // namespace boltpack

#endif  // BOLTPACK_ELASTIC_H_
