// The elastic (nested-slice) manifest of format 1.1/1.2 (spec/elastic.md):
// the parent model's sliceable axes, which tensor dimensions follow them,
// and named budgets. Tensors are stored pre-permuted ("prefix" order), so a
// budget keeps the first `count * unit_elems` elements of every bound
// dimension (per group for a grouped axis, per segment for a segmented
// dimension, per (outer unit, inner unit) of a product dimension: format
// 1.2, manifest version 2) and the layers its mask keeps.
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
  // Version 2: the units form `groups` equal groups (GQA query heads per KV
  // head) and a budget keeps count/groups units at the start of each.
  // 0 or 1: ungrouped.
  uint64_t groups = 0;
};

// Version 2: one segment of a segmented dimension: an axis' units (`axis`
// set, parent(axis, L) * unit_elems elements; or a product "A*B") or
// `fixed_elems` elements no budget cuts (exactly one of the two).
struct ElasticSegment {
  std::string axis;
  uint64_t fixed_elems = 0;
};

// Version 2: dimension `dim` of a binding (marked "+" in dims) made of
// consecutive segments, e.g. a fused gate_up {ffn, ffn}.
struct ElasticSegmentedDim {
  uint32_t dim = 0;
  std::vector<ElasticSegment> segments;
};

// The dims entry of a segmented dimension.
inline constexpr std::string_view kElasticSegmentedDim = "+";

// Version 2: a dims entry or segment axis "A*B" is a product dimension of
// two distinct axes of one scope, outer first: parent(A) x unit_elems(A) x
// parent(B) x unit_elems(B) elements laid out [A][uA][B][uB] (Mamba-2:
// "heads*head_ch", heads x channels within each head).
inline constexpr char kElasticProductSeparator = '*';
struct ElasticProductNames {
  std::string_view outer;
  std::string_view inner;  // everything after the first '*' (a further '*' is invalid)
};
// The two names of a product entry; nullopt when `entry` holds no '*'.
std::optional<ElasticProductNames> SplitElasticProduct(std::string_view entry);

struct ElasticBinding {
  std::string tensor;              // name or template with "{L}"
  // Axis name, "A*B" (a product, version 2), "-" or "+" (segmented),
  // outermost first.
  std::vector<std::string> dims;
  std::vector<ElasticSegmentedDim> segmented;  // one per "+" in dims
  // Version 3 (format 1.4): `dims` holds one entry that binds the tensor's
  // elements taken flat (row-major) as one dimension, e.g. llama.cpp's
  // grouped ssm_norm [n_group][d_inner / n_group] as "heads*head_ch". Valid
  // only where every budget keeps the outer dimensions whole and the same
  // elements of every innermost row.
  bool flat = false;
  // The segments of dimension d, or nullptr when it is not segmented.
  const ElasticSegmentedDim* SegmentsOf(size_t d) const;
};

// One run of kept elements of a dimension: [start, start + length) of the
// parent's (stored) dimension.
struct ElasticRun {
  uint64_t start = 0;
  uint64_t length = 0;
  bool operator==(const ElasticRun& o) const { return start == o.start && length == o.length; }
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
  // 2 when an axis has groups > 1 or a binding a segmented dim or a product
  // entry; 3 when a binding is flat.
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
  // The lowest manifest version that expresses this manifest: 2 when an axis
  // has groups > 1 or a binding a segmented dimension or a product entry
  // ("A*B" in dims or as a segment's axis), 3 when a binding is flat, else 1.
  uint32_t RequiredVersion() const;
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
