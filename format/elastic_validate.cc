#include "format/elastic_validate.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_set>

#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "common/escape.h"
#include "common/checked_math.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "boltpack_proto/boltpack.pb.h"
#include "format/elastic_manifest.h"
#include "format/elastic_runs.h"
#include "format/manifest_convert.h"

namespace boltpack::format {
namespace {

absl::Status Bad(const std::string& file, std::string_view what) {
  return absl::DataLossError(StrCat(file, ": elastic manifest: ", what));
}
absl::Status Limit(const std::string& file, std::string_view what) {
  return absl::ResourceExhaustedError(StrCat(file, ": elastic manifest: ", what));
}

bool IsAxisName(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

std::string Quoted(std::string_view s) {
  return StrCat("\"", absl::CHexEscape(absl::string_view(s.data(), s.size())), "\"");
}

size_t CountPlaceholders(std::string_view s) {
  size_t n = 0;
  for (size_t p = s.find("{L}"); p != std::string_view::npos; p = s.find("{L}", p + 3)) ++n;
  return n;
}

}  // namespace

BindingIndex::BindingIndex(const ElasticManifest& manifest) : manifest_(manifest) {
  for (const auto& b : manifest.bindings) by_template_.emplace(b.tensor, &b);
}

ElasticBound BindingIndex::Resolve(std::string_view tensor_name) const {
  ElasticBound bound;
  if (auto it = by_template_.find(std::string(tensor_name)); it != by_template_.end()) {
    bound.binding = it->second;
    return bound;
  }
  if (manifest_.layer_count == 0) return bound;
  auto ref = MatchLayer(manifest_.layer_pattern, tensor_name);
  if (!ref) return bound;
  auto it = by_template_.find(ref->template_name);
  if (it == by_template_.end()) return bound;
  bound.binding = it->second;
  bound.in_layer = true;
  bound.layer = ref->layer;
  return bound;
}

std::vector<uint64_t> KeptExtents(const ElasticManifest& manifest, const ElasticBudget& budget,
                                  const ElasticBound& bound, absl::Span<const uint64_t> shape) {
  std::vector<DimRuns> runs = KeptRuns(manifest, budget, bound, shape);
  std::vector<uint64_t> kept(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) kept[d] = RunsElems(runs[d]);
  return kept;
}

BudgetCounts::BudgetCounts(const ElasticManifest& manifest, const ElasticBudget& budget)
    : manifest_(manifest), budget_(budget), listed_(manifest.axes.size(), nullptr) {
  for (const auto& s : budget.sizes) {
    const ElasticAxis* a = manifest.FindAxis(s.axis);
    if (a != nullptr) listed_[static_cast<size_t>(a - manifest.axes.data())] = &s.counts;
  }
}

uint64_t BudgetCounts::operator()(size_t axis, uint32_t layer) const {
  const ElasticAxis& a = manifest_.axes[axis];
  bool global = a.scope == ElasticScope::kGlobal;
  size_t k = global ? 0 : layer;
  if (!global && (layer >= budget_.layer_keep.size() || !budget_.layer_keep[layer])) return 0;
  const std::vector<uint64_t>* counts = listed_[axis];
  if (counts != nullptr) return k < counts->size() ? (*counts)[k] : 0;
  return k < a.parent.size() ? a.parent[k] : 0;
}

namespace {

// ValidateElastic's parts, in the order they run: the header, axes,
// bindings, tensors against bindings, budgets (then the kept runs of block
// codecs), importance. A class because the tensor pass gathers what the
// budget passes check: the codec blocks on each axis' innermost dimensions.
class ElasticValidator {
 public:
  ElasticValidator(const ElasticManifest& m, const std::string& file) : m_(m), file_(file) {}

  // [E-2.8]
  absl::Status Validate(const std::vector<ElasticTensorRef>& tensors) {
    BP_RETURN_IF_ERROR(CheckHeader());
    BP_RETURN_IF_ERROR(CheckAxes());
    BP_RETURN_IF_ERROR(CheckBindings());
    BP_RETURN_IF_ERROR(CheckTensors(tensors));
    BP_RETURN_IF_ERROR(CheckBudgets());
    BP_RETURN_IF_ERROR(CheckFlatCuts());
    BP_RETURN_IF_ERROR(CheckRunsOnBlockBoundaries());
    return CheckImportance();
  }

 private:
  // A tensor whose innermost dimension follows an axis and is stored in
  // blocks, with one tensor name for messages.
  struct BlockUse {
    uint64_t block;
    std::string_view tensor;
  };
  // A tensor whose innermost dimension is segmented or a product and stored
  // in blocks: checked per budget on its actual runs.
  struct RunsUse {
    const ElasticTensorRef* tensor;
    ElasticBound bound;
    uint64_t block;
    std::string_view product;  // the product entry, or empty for a segmented dimension
    bool flat = false;         // a flat binding's tensor: the runs are its innermost dimension's
  };
  // A tensor of a flat binding, whose cut every budget must keep
  // expressible as its own dimensions.
  struct FlatUse {
    const ElasticTensorRef* tensor;
    ElasticBound bound;
  };

  // [E-2.1]
  absl::Status CheckHeader() const {
    if (m_.version < 1 || m_.version > 3) return Bad(file_, StrCat("version ", m_.version, " is not 1, 2 or 3"));
    if (m_.version < m_.RequiredVersion()) {
      for (const ElasticBinding& b : m_.bindings) {
        if (b.flat) {
          return Bad(file_, StrCat("version ", m_.version, " but binding ", Quoted(b.tensor),
                                   " is flat, which needs version 3 (format 1.4)"));
        }
      }
      // A product entry is named with its binding: it is the easiest of the
      // version-2 features to write by accident ("heads*hd" in a 1.1 file).
      for (const ElasticBinding& b : m_.bindings) {
        for (const std::string& d : b.dims) {
          if (SplitElasticProduct(d)) {
            return Bad(file_, StrCat("version ", m_.version, " but binding ", Quoted(b.tensor),
                                     " has the product dims entry ", Quoted(d), ", which needs version 2 (format 1.2)"));
          }
        }
      }
      return Bad(file_, StrCat("version ", m_.version, " but an axis has groups > 1 or a binding a segmented "
                               "dimension, which need version 2 (format 1.2)"));
    }
    if (!m_.prefix_order) return Bad(file_, "storage order is not \"prefix\" (the only order format 1.1 defines)");
    if (m_.layer_count > kMaxElasticLayers) {
      // [E-3.1]
      return Limit(file_, StrCat("layer_count ", m_.layer_count, " exceeds the limit of ", kMaxElasticLayers));
    }
    if (m_.layer_count > 0) {
      if (m_.layer_pattern.size() > kMaxElasticTemplateBytes || CountPlaceholders(m_.layer_pattern) != 1 ||
          m_.layer_pattern.size() < 4) {
        return Bad(file_, StrCat("layer_pattern ", Quoted(m_.layer_pattern),
                                 " must hold exactly one \"{L}\" and at most 4096 bytes"));
      }
      if (m_.layer_pattern.find('\0') != std::string::npos) return Bad(file_, "layer_pattern contains a NUL byte");
    } else if (!m_.layer_pattern.empty()) {
      return Bad(file_, "layer_pattern given but layer_count is 0");
    }
    return absl::OkStatus();
  }

  // ---- axes ----
  // [E-2.2]
  absl::Status CheckAxes() const {
    if (m_.axes.size() > kMaxElasticAxes) {
      // [E-3.2]
      return Limit(file_, StrCat(m_.axes.size(), " axes exceed the limit of ", kMaxElasticAxes));
    }
    if (m_.axes.empty()) return Bad(file_, "no axes");
    for (size_t i = 0; i < m_.axes.size(); ++i) BP_RETURN_IF_ERROR(CheckAxis(i));
    for (const ElasticAxis& a : m_.axes) BP_RETURN_IF_ERROR(CheckAtMost(a));
    return absl::OkStatus();
  }

  absl::Status CheckAxis(size_t i) const {
    const ElasticAxis& a = m_.axes[i];
    // [E-3.8]
    if (!IsAxisName(a.name)) return Bad(file_, StrCat("axis name ", Quoted(a.name), " is not 1..64 bytes of [a-z0-9_]"));
    for (size_t j = 0; j < i; ++j) {
      if (m_.axes[j].name == a.name) return Bad(file_, StrCat("axis \"", a.name, "\" is declared twice"));
    }
    std::string where = StrCat("axis \"", a.name, "\"");
    if (a.scope == ElasticScope::kUnspecified) return Bad(file_, StrCat(where, ": scope is neither layer nor global"));
    if (a.scope == ElasticScope::kLayer && m_.layer_count == 0) {
      return Bad(file_, StrCat(where, ": a per-layer axis needs layer_count > 0"));
    }
    if (a.granularity == 0 || a.granularity > kMaxElasticAxisUnits) {
      return Bad(file_, StrCat(where, ": granularity ", a.granularity, " is not in 1..2^32"));
    }
    if (a.unit_elems == 0 || a.unit_elems > kMaxElasticAxisUnits) {
      return Bad(file_, StrCat(where, ": unit_elems ", a.unit_elems, " is not in 1..2^32"));
    }
    size_t want = a.scope == ElasticScope::kLayer ? m_.layer_count : 1;
    if (a.parent.size() != want) {
      return Bad(file_, StrCat(where, ": ", a.parent.size(), " parent sizes, expected ", want));
    }
    if (a.groups > kMaxElasticAxisUnits) return Bad(file_, StrCat(where, ": groups ", a.groups, " exceeds 2^32"));
    for (size_t k = 0; k < a.parent.size(); ++k) {
      uint64_t p = a.parent[k];
      if (p > kMaxElasticAxisUnits) return Bad(file_, StrCat(where, ": parent size ", p, " exceeds 2^32"));
      if (p % GroupsOf(a) != 0) {
        return Bad(file_, StrCat(where, ": parent size ", p,
                                 a.scope == ElasticScope::kLayer ? StrCat(" in layer ", k) : std::string(),
                                 " is not divisible by its ", a.groups, " groups"));
      }
    }
    if (a.metadata_key.size() > kMaxElasticNameBytes || a.metadata_key.find('\0') != std::string::npos) {
      return Bad(file_, StrCat(where, ": metadata_key must be at most 256 bytes without NUL"));
    }
    return absl::OkStatus();
  }

  absl::Status CheckAtMost(const ElasticAxis& a) const {
    if (a.at_most.empty()) return absl::OkStatus();
    const ElasticAxis* b = m_.FindAxis(a.at_most);
    if (b == nullptr || b == &a || b->scope != a.scope) {
      return Bad(file_, StrCat("axis \"", a.name, "\": at_most ", Quoted(a.at_most),
                               " is not another axis of the same scope"));
    }
    for (size_t k = 0; k < a.parent.size(); ++k) {
      if (a.parent[k] > b->parent[k]) {
        return Bad(file_, StrCat("axis \"", a.name, "\": parent size ", a.parent[k], " in layer ", k,
                                 " exceeds \"", b->name, "\"'s ", b->parent[k]));
      }
    }
    return absl::OkStatus();
  }

  // ---- bindings ----
  // [E-2.3]
  absl::Status CheckBindings() const {
    if (m_.bindings.size() > kMaxElasticBindings) {
      // [E-3.3]
      return Limit(file_, StrCat(m_.bindings.size(), " bindings exceed the limit of ", kMaxElasticBindings));
    }
    std::unordered_set<std::string_view> templates;
    for (const ElasticBinding& b : m_.bindings) BP_RETURN_IF_ERROR(CheckBinding(b, templates));
    return absl::OkStatus();
  }

  absl::Status CheckBinding(const ElasticBinding& b, std::unordered_set<std::string_view>& templates) const {
    std::string where = StrCat("binding ", Quoted(b.tensor));
    if (b.tensor.empty() || b.tensor.size() > kMaxElasticTemplateBytes || b.tensor.find('\0') != std::string::npos) {
      return Bad(file_, StrCat(where, ": the name must be 1..4096 bytes without NUL"));
    }
    if (!templates.insert(b.tensor).second) return Bad(file_, StrCat(where, " is given twice"));
    size_t holes = CountPlaceholders(b.tensor);
    BP_RETURN_IF_ERROR(CheckBindingTemplate(b, where, holes));
    if (b.dims.empty() || b.dims.size() > 8) return Bad(file_, StrCat(where, ": 1..8 dims required"));
    if (b.flat && b.dims.size() != 1) {
      return Bad(file_, StrCat(where, ": a flat binding has exactly one dims entry (the tensor's elements taken "
                               "flat), not ", b.dims.size()));
    }
    bool any = false;
    BP_RETURN_IF_ERROR(CheckSegmentedDims(b, where, holes, any));
    for (size_t d = 0; d < b.dims.size(); ++d) {
      if (b.dims[d] == "-") continue;
      if (b.dims[d] == kElasticSegmentedDim) {
        if (b.SegmentsOf(d) == nullptr) return Bad(file_, StrCat(where, ": dim ", d, " is \"+\" but has no segments"));
        continue;
      }
      BP_RETURN_IF_ERROR(CheckBindingEntry(b.dims[d], where, holes, any));
    }
    if (!any) return Bad(file_, StrCat(where, ": binds no axis"));
    return absl::OkStatus();
  }

  // `holes` "{L}"s in the binding's name: one where the layer pattern puts
  // the layer index, or none and no layer's tensor named outright.
  absl::Status CheckBindingTemplate(const ElasticBinding& b, const std::string& where, size_t holes) const {
    if (holes > 1) return Bad(file_, StrCat(where, ": more than one \"{L}\""));
    if (holes == 1) {
      if (m_.layer_count == 0) return Bad(file_, StrCat(where, ": \"{L}\" but layer_count is 0"));
      // The template must be what MatchLayer makes of a layer's tensor name.
      std::string probe = b.tensor;
      probe.replace(probe.find("{L}"), 3, "0");
      auto ref = MatchLayer(m_.layer_pattern, probe);
      if (!ref || ref->template_name != b.tensor) {
        return Bad(file_, StrCat(where, ": \"{L}\" is not where the layer pattern ", Quoted(m_.layer_pattern),
                                 " puts the layer index"));
      }
    }
    if (holes == 0 && m_.layer_count > 0) {
      // A name of a layer's tensor must be a template, or renumbering the
      // layers in a slice would leave the binding behind.
      if (auto ref = MatchLayer(m_.layer_pattern, b.tensor); ref && ref->layer < m_.layer_count) {
        return Bad(file_, StrCat(where, " names a tensor of layer ", ref->layer, "; write it as the template ",
                                 Quoted(ref->template_name)));
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckSegmentedDims(const ElasticBinding& b, const std::string& where, size_t holes, bool& any) const {
    if (b.segmented.size() > b.dims.size()) return Bad(file_, StrCat(where, ": more segmented dims than dims"));
    for (size_t i = 0; i < b.segmented.size(); ++i) {
      const ElasticSegmentedDim& sd = b.segmented[i];
      if (sd.dim >= b.dims.size() || b.dims[sd.dim] != kElasticSegmentedDim) {
        return Bad(file_, StrCat(where, ": segmented dim ", sd.dim, " is not a dimension marked \"+\""));
      }
      for (size_t j = 0; j < i; ++j) {
        if (b.segmented[j].dim == sd.dim) return Bad(file_, StrCat(where, ": dim ", sd.dim, " is segmented twice"));
      }
      if (sd.segments.empty() || sd.segments.size() > kMaxElasticSegments) {
        return Bad(file_, StrCat(where, ": dim ", sd.dim, " needs 1..", kMaxElasticSegments, " segments"));
      }
      for (size_t k = 0; k < sd.segments.size(); ++k) {
        const ElasticSegment& seg = sd.segments[k];
        if (seg.axis.empty() == (seg.fixed_elems == 0)) {
          return Bad(file_, StrCat(where, ": dim ", sd.dim, " segment ", k,
                                   " must set exactly one of axis and fixed_elems"));
        }
        if (!seg.axis.empty()) BP_RETURN_IF_ERROR(CheckBindingEntry(seg.axis, where, holes, any));
      }
    }
    return absl::OkStatus();
  }

  // A declared axis; per-layer ones only on a "{L}" template. Sets `any`.
  absl::Status CheckBindingAxis(std::string_view d, const std::string& where, size_t holes, bool& any) const {
    const ElasticAxis* a = m_.FindAxis(d);
    if (a == nullptr) return Bad(file_, StrCat(where, ": unknown axis ", Quoted(d)));
    if (a->scope == ElasticScope::kLayer && holes == 0) {
      return Bad(file_, StrCat(where, ": per-layer axis \"", d, "\" on a tensor name without \"{L}\""));
    }
    any = true;
    return absl::OkStatus();
  }

  // An axis, or (format 1.2) a product "A*B" of two distinct declared
  // axes of one scope. Three or more factors are not defined.
  absl::Status CheckBindingEntry(const std::string& d, const std::string& where, size_t holes, bool& any) const {
    auto product = SplitElasticProduct(d);
    if (!product) return CheckBindingAxis(d, where, holes, any);
    if (product->inner.find(kElasticProductSeparator) != std::string_view::npos) {
      // [E-3.7]
      return Bad(file_, StrCat(where, ": product ", Quoted(d), " has more than two axes"));
    }
    BP_RETURN_IF_ERROR(CheckBindingAxis(product->outer, where, holes, any));
    BP_RETURN_IF_ERROR(CheckBindingAxis(product->inner, where, holes, any));
    const ElasticAxis* outer = m_.FindAxis(product->outer);
    const ElasticAxis* inner = m_.FindAxis(product->inner);
    if (outer == inner) {
      return Bad(file_, StrCat(where, ": product ", Quoted(d), " names axis \"", outer->name, "\" twice"));
    }
    if (outer->scope != inner->scope) {
      auto scope = [](const ElasticAxis* a) { return a->scope == ElasticScope::kLayer ? "per layer" : "global"; };
      return Bad(file_, StrCat(where, ": product ", Quoted(d), " multiplies axes of different scopes (\"",
                               outer->name, "\" is ", scope(outer), ", \"", inner->name, "\" ", scope(inner), ")"));
    }
    return absl::OkStatus();
  }

  // ---- tensors against bindings ----
  // [E-2.4]
  absl::Status CheckTensors(const std::vector<ElasticTensorRef>& tensors) {
    BindingIndex index(m_);
    std::unordered_set<const ElasticBinding*> used;
    blocks_.resize(m_.axes.size());
    for (size_t i = 0; i < m_.axes.size(); ++i) blocks_[i].resize(m_.axes[i].parent.size());
    for (const ElasticTensorRef& t : tensors) {
      ElasticBound bound = index.Resolve(t.name);
      if (bound.binding == nullptr) continue;
      used.insert(bound.binding);
      BP_RETURN_IF_ERROR(CheckTensor(t, bound));
    }
    for (const ElasticBinding& b : m_.bindings) {
      if (!used.count(&b)) return Bad(file_, StrCat("binding ", Quoted(b.tensor), " matches no tensor"));
    }
    return absl::OkStatus();
  }

  absl::Status CheckTensor(const ElasticTensorRef& t, const ElasticBound& bound) {
    std::string where = StrCat("tensor ", QuoteForDisplay(t.name));
    if (bound.in_layer && bound.layer >= m_.layer_count) {
      return Bad(file_, StrCat(where, ": layer ", bound.layer, " is past layer_count ", m_.layer_count));
    }
    if (bound.binding->flat) return CheckFlatTensor(t, bound, where);
    return CheckTensorDims(t, bound, where);
  }

  // A flat binding (format 1.4): its one entry spans the tensor's elements.
  // The dimension is checked on a one-dimensional view without a codec, so
  // the plain-axis block rule (which would read the flat size as a row)
  // does not apply; the cut of each budget is checked on the tensor's own
  // innermost dimension instead (CheckFlatCuts, CheckRunsOnBlockBoundaries).
  absl::Status CheckFlatTensor(const ElasticTensorRef& t, const ElasticBound& bound, const std::string& where) {
    std::vector<uint64_t> flat = BoundShape(*bound.binding, t.shape);
    if (flat.size() != 1 || t.shape.empty()) {
      return Bad(file_, StrCat(where, ": its binding ", Quoted(bound.binding->tensor),
                               " is flat but the tensor has no dimensions or more than 2^64 elements"));
    }
    ElasticTensorRef view = t;
    view.shape = flat;
    view.codec_id = {};
    BP_RETURN_IF_ERROR(CheckTensorDims(view, bound, StrCat(where, " (flat, ", flat[0], " elements)")));
    flat_uses_.push_back({&t, bound});
    auto layout = StoredCellLayout(t.codec_id, t.dtype, t.params != nullptr ? *t.params : CodecParams{});
    if (layout && layout->block_elems > 1) runs_blocks_.push_back({&t, bound, layout->block_elems, {}, true});
    return absl::OkStatus();
  }

  absl::Status CheckTensorDims(const ElasticTensorRef& t, const ElasticBound& bound, const std::string& where) {
    const auto& dims = bound.binding->dims;
    if (dims.size() != t.shape.size()) {
      return Bad(file_, StrCat(where, " has ", t.shape.size(), " dimensions, its binding ",
                               Quoted(bound.binding->tensor), " lists ", dims.size()));
    }
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] == "-") continue;
      bool innermost = d + 1 == dims.size();
      if (const ElasticSegmentedDim* sd = bound.binding->SegmentsOf(d); dims[d] == kElasticSegmentedDim && sd) {
        BP_RETURN_IF_ERROR(CheckSegmentedTensorDim(t, bound, *sd, d, where));
        if (innermost) NoteRunsUse(t, bound, {});
        continue;
      }
      if (SplitElasticProduct(dims[d])) {
        BP_RETURN_IF_ERROR(CheckProductTensorDim(t, bound, d, where));
        if (innermost) NoteRunsUse(t, bound, dims[d]);
        continue;
      }
      BP_RETURN_IF_ERROR(CheckAxisTensorDim(t, bound, d, where));
    }
    return absl::OkStatus();
  }

  // The elements a product "A*B" spans in this layer, or an error naming
  // the axis the layer lacks (as a plain axis' parent 0 is, rule 4) or the
  // overflow.
  absl::StatusOr<uint64_t> ProductElems(std::string_view where, size_t d, std::string_view entry,
                                        uint32_t layer) const {
    EntryAxes e = ResolveEntry(m_, entry);
    for (const ElasticAxis* a : {e.outer, e.inner}) {
      if (ParentUnits(*a, layer) == 0) {
        return Bad(file_, StrCat(where, ": dimension ", d, " is the product ", Quoted(entry),
                                 " but this layer lacks axis \"", a->name, "\""));
      }
    }
    auto elems = EntryElems(e, layer);
    if (!elems) {
      return Bad(file_, StrCat(where, ": dimension ", d, ": product ", Quoted(entry), " spans more than 2^64 elements"));
    }
    return *elems;
  }

  absl::Status CheckSegmentedTensorDim(const ElasticTensorRef& t, const ElasticBound& bound,
                                       const ElasticSegmentedDim& sd, size_t d, const std::string& where) const {
    uint64_t sum = 0;
    bool overflow = false;
    for (const ElasticSegment& seg : sd.segments) {
      std::optional<uint64_t> size = seg.fixed_elems;
      if (SplitElasticProduct(seg.axis)) {
        BP_ASSIGN_OR_RETURN(size, ProductElems(where, d, seg.axis, bound.layer));
      } else if (!seg.axis.empty()) {
        const ElasticAxis* a = m_.FindAxis(seg.axis);
        uint64_t parent = a->parent[a->scope == ElasticScope::kLayer ? bound.layer : 0];
        if (parent == 0) {
          return Bad(file_, StrCat(where, ": dimension ", d, " has a segment of axis \"", a->name,
                                   "\" which this layer lacks"));
        }
        size = CheckedMul(parent, a->unit_elems);
      }
      auto next = size ? CheckedAdd(sum, *size) : std::nullopt;
      if (!next) overflow = true;
      sum = next.value_or(0);
    }
    if (overflow || sum != t.shape[d]) {
      return Bad(file_, StrCat(where, ": dimension ", d, " is ", t.shape[d], " but its segments add up to ",
                               overflow ? std::string("more than 2^64") : StrCat(sum)));
    }
    return absl::OkStatus();
  }

  absl::Status CheckProductTensorDim(const ElasticTensorRef& t, const ElasticBound& bound, size_t d,
                                     const std::string& where) const {
    const std::string& entry = bound.binding->dims[d];
    BP_ASSIGN_OR_RETURN(uint64_t elems, ProductElems(where, d, entry, bound.layer));
    if (elems != t.shape[d]) {
      EntryAxes e = ResolveEntry(m_, entry);
      return Bad(file_, StrCat(where, ": dimension ", d, " is ", t.shape[d], " but product ", Quoted(entry),
                               " has ", ParentUnits(*e.outer, bound.layer), " units of ", e.outer->unit_elems, " x ",
                               ParentUnits(*e.inner, bound.layer), " units of ", e.inner->unit_elems, " = ", elems,
                               " elements there"));
    }
    return absl::OkStatus();
  }

  absl::Status CheckAxisTensorDim(const ElasticTensorRef& t, const ElasticBound& bound, size_t d,
                                  const std::string& where) {
    const auto& dims = bound.binding->dims;
    const ElasticAxis* a = m_.FindAxis(dims[d]);
    size_t axis_index = static_cast<size_t>(a - m_.axes.data());
    size_t k = a->scope == ElasticScope::kLayer ? bound.layer : 0;
    uint64_t parent = a->parent[k];
    auto need = CheckedMul(parent, a->unit_elems);
    if (parent == 0 || !need || *need != t.shape[d]) {
      return Bad(file_, StrCat(where, ": dimension ", d, " is ", t.shape[d], " but axis \"", a->name, "\" has ",
                               parent, " units of ", a->unit_elems, " there"));
    }
    if (d + 1 == dims.size()) {
      auto layout = StoredCellLayout(t.codec_id, t.dtype, t.params != nullptr ? *t.params : CodecParams{});
      if (layout && layout->block_elems > 1) {
        auto& uses = blocks_[axis_index][k];
        bool seen = false;
        for (const auto& u : uses) seen |= u.block == layout->block_elems;
        if (!seen) uses.push_back({layout->block_elems, t.name});
      }
    }
    return absl::OkStatus();
  }

  // A segmented (`product` empty) or product innermost dimension of a
  // block codec: its kept runs are checked per budget.
  void NoteRunsUse(const ElasticTensorRef& t, const ElasticBound& bound, std::string_view product) {
    auto layout = StoredCellLayout(t.codec_id, t.dtype, t.params != nullptr ? *t.params : CodecParams{});
    if (layout && layout->block_elems > 1) runs_blocks_.push_back({&t, bound, layout->block_elems, product});
  }

  // ---- budgets ----
  // [E-2.5]
  absl::Status CheckBudgets() const {
    if (m_.budgets.size() > kMaxElasticBudgets) {
      // [E-3.4]
      return Limit(file_, StrCat(m_.budgets.size(), " budgets exceed the limit of ", kMaxElasticBudgets));
    }
    uint64_t cells = 0;
    for (const auto& a : m_.axes) cells += a.parent.size();
    if (cells * m_.budgets.size() > kMaxElasticBudgetCells) {
      // [E-3.11]
      return Limit(file_, StrCat(m_.budgets.size(), " budgets over ", cells,
                                 " axis sizes exceed the limit of 2^26 budget cells"));
    }
    for (size_t bi = 0; bi < m_.budgets.size(); ++bi) {
      const ElasticBudget& b = m_.budgets[bi];
      std::string where = StrCat("budget ", Quoted(b.name));
      BP_RETURN_IF_ERROR(CheckBudgetHeader(bi, where));
      for (size_t si = 0; si < b.sizes.size(); ++si) BP_RETURN_IF_ERROR(CheckBudgetSizes(b, si, where));
      BP_ASSIGN_OR_RETURN(const ElasticBudget* outer, FindOuterBudget(bi, where));
      BP_RETURN_IF_ERROR(CheckBudgetCells(b, outer, where));
    }
    return absl::OkStatus();
  }

  absl::Status CheckBudgetHeader(size_t bi, const std::string& where) const {
    const ElasticBudget& b = m_.budgets[bi];
    if (b.name.empty() || b.name.size() > kMaxElasticNameBytes || b.name.find('\0') != std::string::npos) {
      return Bad(file_, StrCat(where, ": the name must be 1..256 bytes without NUL"));
    }
    for (size_t j = 0; j < bi; ++j) {
      if (m_.budgets[j].name == b.name) return Bad(file_, StrCat(where, " is given twice"));
    }
    if (b.layer_keep.size() != m_.layer_count) {
      return Bad(file_, StrCat(where, ": layer_keep has ", b.layer_keep.size(), " entries, layer_count is ",
                               m_.layer_count));
    }
    if (m_.layer_count > 0 && std::find(b.layer_keep.begin(), b.layer_keep.end(), true) == b.layer_keep.end()) {
      return Bad(file_, StrCat(where, ": keeps no layer"));
    }
    if (b.sizes.size() > m_.axes.size()) return Bad(file_, StrCat(where, ": more size lists than axes"));
    return absl::OkStatus();
  }

  // The counts budget `b` lists for its `si`th axis.
  absl::Status CheckBudgetSizes(const ElasticBudget& b, size_t si, const std::string& where) const {
    const ElasticBudgetAxis& s = b.sizes[si];
    const ElasticAxis* a = m_.FindAxis(s.axis);
    if (a == nullptr) return Bad(file_, StrCat(where, ": unknown axis ", Quoted(s.axis)));
    for (size_t j = 0; j < si; ++j) {
      if (b.sizes[j].axis == s.axis) return Bad(file_, StrCat(where, ": axis \"", s.axis, "\" listed twice"));
    }
    if (s.counts.size() != a->parent.size()) {
      return Bad(file_, StrCat(where, ": axis \"", a->name, "\" has ", s.counts.size(), " counts, expected ",
                               a->parent.size()));
    }
    for (size_t k = 0; k < s.counts.size(); ++k) {
      uint64_t c = s.counts[k];
      uint64_t parent = a->parent[k];
      bool dropped = a->scope == ElasticScope::kLayer && !b.layer_keep[k];
      auto at = [&] { return a->scope == ElasticScope::kLayer ? StrCat(" in layer ", k) : std::string(); };
      if (dropped || parent == 0) {
        if (c != 0) {
          return Bad(file_, StrCat(where, ": axis \"", a->name, "\"", at(), " is ", c, " but must be 0 (",
                                   dropped ? "the layer is dropped" : "the layer lacks the axis", ")"));
        }
        continue;
      }
      if (c == 0 || c > parent) {
        return Bad(file_, StrCat(where, ": axis \"", a->name, "\"", at(), " keeps ", c, " of ", parent, " units"));
      }
      if (c % GroupsOf(*a) != 0) {
        return Bad(file_, StrCat(where, ": axis \"", a->name, "\"", at(), " keeps ", c,
                                 " units, not divisible by its ", a->groups, " groups"));
      }
      if (c != parent && c % a->granularity != 0) {
        return Bad(file_, StrCat(where, ": axis \"", a->name, "\"", at(), " keeps ", c,
                                 " units, not a multiple of its granularity ", a->granularity));
      }
    }
    return absl::OkStatus();
  }

  // The budget `bi` is nested_in (listed before it and keeping every layer
  // it keeps), or nullptr when none is named.
  absl::StatusOr<const ElasticBudget*> FindOuterBudget(size_t bi, const std::string& where) const {
    const ElasticBudget& b = m_.budgets[bi];
    const ElasticBudget* outer = nullptr;
    if (b.nested_in.empty()) return outer;
    for (size_t j = 0; j < bi; ++j) {
      if (m_.budgets[j].name == b.nested_in) outer = &m_.budgets[j];
    }
    if (outer == nullptr) {
      return Bad(file_, StrCat(where, ": nested_in ", Quoted(b.nested_in), " is not a budget listed before it"));
    }
    for (uint32_t l = 0; l < m_.layer_count; ++l) {
      if (b.layer_keep[l] && !outer->layer_keep[l]) {
        return Bad(file_,
                   StrCat(where, " keeps layer ", l, " which \"", outer->name, "\" drops, so it is not nested in it"));
      }
    }
    return outer;
  }

  // at_most, block alignment, nesting: over every axis and layer.
  absl::Status CheckBudgetCells(const ElasticBudget& b, const ElasticBudget* outer, const std::string& where) const {
    BudgetCounts count(m_, b);
    std::optional<BudgetCounts> outer_count;
    if (outer != nullptr) outer_count.emplace(m_, *outer);
    for (size_t ai = 0; ai < m_.axes.size(); ++ai) {
      const ElasticAxis& a = m_.axes[ai];
      const ElasticAxis* bound_by = a.at_most.empty() ? nullptr : m_.FindAxis(a.at_most);
      size_t bound_index = bound_by == nullptr ? 0 : static_cast<size_t>(bound_by - m_.axes.data());
      for (size_t k = 0; k < a.parent.size(); ++k) {
        uint32_t layer = static_cast<uint32_t>(k);
        uint64_t c = count(ai, layer);
        if (bound_by != nullptr && c > count(bound_index, layer)) {
          std::string at = a.scope == ElasticScope::kLayer ? StrCat(" in layer ", k) : std::string();
          return Bad(file_, StrCat(where, ": axis \"", a.name, "\"", at, " is ", c, ", more than \"", bound_by->name,
                                   "\" (", count(bound_index, layer), ")"));
        }
        if (outer_count && c > (*outer_count)(ai, layer)) {
          std::string at = a.scope == ElasticScope::kLayer ? StrCat(" in layer ", k) : std::string();
          return Bad(file_, StrCat(where, ": axis \"", a.name, "\"", at, " keeps ", c, " units, more than \"",
                                   outer->name, "\" (", (*outer_count)(ai, layer), "), so it is not nested in it"));
        }
        if (c == 0 || c == a.parent[k]) continue;
        for (const auto& use : blocks_[ai][k]) BP_RETURN_IF_ERROR(CheckKeptBlocks(a, k, c, use, where));
      }
    }
    return absl::OkStatus();
  }

  // `c` kept units of axis `a` in layer `k`, on the innermost dimension of
  // a tensor stored in blocks: whole blocks only.
  // [E-2.6]
  absl::Status CheckKeptBlocks(const ElasticAxis& a, size_t k, uint64_t c, const BlockUse& use,
                               const std::string& where) const {
    // A grouped axis keeps count/groups units at the start of every
    // group: each run's length and start must be whole blocks.
    uint64_t groups = GroupsOf(a);
    uint64_t elems = c * a.unit_elems;
    if (groups > 1 && ((c / groups) * a.unit_elems % use.block != 0 ||
                       (a.parent[k] / groups) * a.unit_elems % use.block != 0)) {
      std::string at = a.scope == ElasticScope::kLayer ? StrCat(" in layer ", k) : std::string();
      return Bad(file_, StrCat(where, ": tensor ", QuoteForDisplay(use.tensor), " keeps ", (c / groups) * a.unit_elems,
                               " elements at the start of each of ", groups, " groups of ",
                               (a.parent[k] / groups) * a.unit_elems,
                               " elements of its innermost dimension (axis \"", a.name, "\"", at,
                               "), which splits its codec's blocks of ", use.block,
                               " elements; every kept run must start and end on a block boundary"));
    }
    if (elems % use.block != 0) {
      std::string at = a.scope == ElasticScope::kLayer ? StrCat(" in layer ", k) : std::string();
      return Bad(file_, StrCat(where, ": tensor ", QuoteForDisplay(use.tensor), " keeps ", elems, " of ",
                               a.parent[k] * a.unit_elems, " elements of its innermost dimension (axis \"",
                               a.name, "\"", at, "), not a multiple of its codec's block of ", use.block,
                               " elements; choose a count that is a multiple of ", use.block,
                               " elements or another codec for this tensor"));
    }
    return absl::OkStatus();
  }

  // [E-2.9] A flat binding's cut, per budget, keeps the tensor's outer
  // dimensions whole and the same elements of every innermost row, so the
  // slice is a tensor of the same rank ([n_group][kept / n_group]).
  absl::Status CheckFlatCuts() const {
    for (const FlatUse& use : flat_uses_) {
      const auto& shape = use.tensor->shape;
      for (const ElasticBudget& b : m_.budgets) {
        if (use.bound.in_layer && !b.layer_keep[use.bound.layer]) continue;
        std::optional<DimRuns> flat = KeptFlatRuns(m_, b, use.bound, shape);
        if (flat && FlatRunsByDim(*flat, shape)) continue;
        std::string first = flat && !flat->empty() ? StrCat(" (its first kept run is [", flat->front().start, ", ",
                                                           flat->front().start + flat->front().length, "))")
                                                   : std::string();
        return Bad(file_, StrCat("budget ", Quoted(b.name), ": tensor ", QuoteForDisplay(use.tensor->name),
                                 " of flat binding ", Quoted(use.bound.binding->tensor), " keeps ",
                                 flat ? RunsElems(*flat) : 0, " of its elements", first,
                                 ", which is not its outer dimensions whole with the same elements of every row of ",
                                 shape.back(), "; a flat cut must keep every row alike (for ssm_norm [n_group][d_inner "
                                 "/ n_group], group the heads axis by n_group)"));
      }
    }
    return absl::OkStatus();
  }

  // Segmented and product innermost dimensions of block codecs: every kept
  // run of every budget on block boundaries.
  // [E-2.6]
  absl::Status CheckRunsOnBlockBoundaries() const {
    for (const RunsUse& use : runs_blocks_) {
      for (const ElasticBudget& b : m_.budgets) {
        if (use.bound.in_layer && !b.layer_keep[use.bound.layer]) continue;
        std::vector<DimRuns> runs = KeptRuns(m_, b, use.bound, use.tensor->shape);
        const DimRuns& inner = runs.back();
        if (WholeDim(inner, use.tensor->shape.back())) continue;
        for (const ElasticRun& r : inner) {
          if (r.start % use.block == 0 && r.length % use.block == 0) continue;
          if (use.flat) {
            return Bad(file_, StrCat("budget ", Quoted(b.name), ": tensor ", QuoteForDisplay(use.tensor->name),
                                     " keeps elements [", r.start, ", ", r.start + r.length,
                                     ") of its innermost dimension (flat binding ", Quoted(use.bound.binding->tensor),
                                     "), which splits its codec's blocks of ", use.block,
                                     " elements; every kept run must start and end on a block boundary"));
          }
          if (!use.product.empty()) {
            return Bad(file_, StrCat("budget ", Quoted(b.name), ": tensor ", QuoteForDisplay(use.tensor->name),
                                     " keeps elements [", r.start, ", ", r.start + r.length,
                                     ") of its innermost dimension (product ", Quoted(use.product),
                                     "), which splits its codec's blocks of ", use.block,
                                     " elements; every kept run must start and end on a block boundary"));
          }
          return Bad(file_, StrCat("budget ", Quoted(b.name), ": tensor ", QuoteForDisplay(use.tensor->name),
                                   " keeps elements [", r.start, ", ", r.start + r.length,
                                   ") of its segmented innermost dimension, which splits its codec's blocks of ",
                                   use.block, " elements; every kept run must start and end on a block boundary"));
        }
      }
    }
    return absl::OkStatus();
  }

  // ---- importance ----
  // [E-2.7]
  absl::Status CheckImportance() const {
    if (m_.importance.size() > m_.axes.size() * (static_cast<uint64_t>(m_.layer_count) + 1)) {
      return Bad(file_, "more importance records than (axis, layer) pairs");
    }
    std::unordered_set<uint64_t> seen;
    for (const ElasticImportance& imp : m_.importance) BP_RETURN_IF_ERROR(CheckImportanceRecord(imp, seen));
    return absl::OkStatus();
  }

  // `seen`: the (axis, layer) pairs of the records before this one.
  absl::Status CheckImportanceRecord(const ElasticImportance& imp, std::unordered_set<uint64_t>& seen) const {
    std::string where = StrCat("importance of axis ", Quoted(imp.axis), " layer ", imp.layer);
    const ElasticAxis* a = m_.FindAxis(imp.axis);
    if (a == nullptr) return Bad(file_, StrCat(where, ": unknown axis"));
    if (imp.layer >= a->parent.size()) return Bad(file_, StrCat(where, ": no such layer for this axis"));
    if (!seen.insert((static_cast<uint64_t>(a - m_.axes.data()) << 32) | imp.layer).second) {
      return Bad(file_, StrCat(where, " is given twice"));
    }
    uint64_t n = a->parent[imp.layer];
    if (imp.scores.size() != n || imp.order.size() != n) {
      return Bad(file_, StrCat(where, ": ", imp.scores.size(), " scores and ", imp.order.size(),
                               " order entries, the axis has ", n, " units"));
    }
    // Source indices are distinct (a slice of a slice keeps the original
    // checkpoint's indices, so they need not be < n).
    std::vector<uint32_t> sorted = imp.order;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      return Bad(file_, StrCat(where, ": order names a source unit twice"));
    }
    for (size_t p = 0; p < n; ++p) {
      if (!std::isfinite(imp.scores[p])) return Bad(file_, StrCat(where, ": score ", p, " is not finite"));
    }
    if (imp.method.size() > kMaxElasticNameBytes) return Bad(file_, StrCat(where, ": method over 256 bytes"));
    return absl::OkStatus();
  }

  const ElasticManifest& m_;
  const std::string& file_;
  // Per (axis, layer): the block sizes of tensors whose innermost dimension
  // follows that axis, with one tensor name each for messages.
  std::vector<std::vector<std::vector<BlockUse>>> blocks_;
  std::vector<RunsUse> runs_blocks_;
  std::vector<FlatUse> flat_uses_;
};

}  // namespace

absl::Status ValidateElastic(const ElasticManifest& m, const std::vector<ElasticTensorRef>& tensors,
                             const std::string& file) {
  return ElasticValidator(m, file).Validate(tensors);
}

absl::Status ValidateElasticOf(const v1::ElasticManifest& proto, absl::Span<const TensorInfo> tensors,
                               const std::string& file) {
  ElasticManifest elastic = ElasticFromProto(proto);
  std::vector<ElasticTensorRef> refs(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    // Only ggml-* codecs need their parameters here (StoredCellLayout).
    refs[i] = {t.name, t.shape, t.codec_id, t.dtype, &t.codec_params};
  }
  return ValidateElastic(elastic, refs, file);
}

}  // namespace boltpack::format
