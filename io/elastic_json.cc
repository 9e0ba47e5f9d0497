#include "io/elastic_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <optional>

#include "common/escape.h"
#include "common/checked_math.h"
#include "common/status_macros.h"
#include "common/str_cat.h"
#include "format/elastic_runs.h"
#include "format/elastic_validate.h"
#include "io/json.h"

namespace boltpack::io {
namespace {

class Ctx {
 public:
  explicit Ctx(const std::string& file) : file_(file) {}
  absl::Status Err(std::string_view where, std::string_view what) const {
    return absl::InvalidArgumentError(StrCat(file_, ": ", where, ": ", what));
  }
  // Only the listed keys are allowed.
  absl::Status Keys(const JsonValue& obj, std::string_view where, std::initializer_list<std::string_view> allowed) const {
    if (!obj.is_object()) return Err(where, StrCat("expected an object, got ", JsonTypeName(obj.type())));
    for (const auto& [k, v] : obj.object()) {
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
        std::string list;
        for (auto a : allowed) list += StrCat(list.empty() ? "" : ", ", a);
        return Err(where, StrCat("unknown key \"", k, "\" (expected one of: ", list, ")"));
      }
    }
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> Uint(const JsonValue& v, std::string_view where, uint64_t lo, uint64_t hi) const {
    auto u = v.is_number() ? v.uint64_value() : std::nullopt;
    if (!u || *u < lo || *u > hi) return Err(where, StrCat("expected an integer in ", lo, "..", hi));
    return *u;
  }
  absl::StatusOr<std::string> Str(const JsonValue& v, std::string_view where, size_t max) const {
    if (!v.is_string() || v.string_value().size() > max || v.string_value().find('\0') != std::string::npos) {
      return Err(where, StrCat("expected a string of at most ", max, " bytes without NUL"));
    }
    return v.string_value();
  }

 private:
  const std::string& file_;
};

// ParseElasticJson's passes over one authoring file, in the order they run:
// the header (version, layers), axes, bindings, then the parent sizes the
// tensors give (plain dimensions, products, segments) and the explicit
// "parent"s, then importance and budgets. A class because the passes share
// the manifest being built and what sizing learns about it (which "parent"
// each axis was given, which tensor sized each axis).
class ElasticJsonParser {
 public:
  ElasticJsonParser(const Ctx& ctx, const std::string& file, const JsonValue& root, ElasticAuthoring& out)
      : ctx_(ctx), file_(file), root_(root), out_(out), m_(out.manifest) {}

  absl::Status Parse(const std::vector<ElasticTensorShape>& tensors) {
    BP_RETURN_IF_ERROR(ctx_.Keys(root_, "top level", {"version", "layers", "axes", "bindings", "importance",
                                                      "importance_method", "budgets"}));
    BP_RETURN_IF_ERROR(ParseVersionAndLayers());
    BP_RETURN_IF_ERROR(ParseAxes());
    BP_RETURN_IF_ERROR(ParseBindings());
    BP_ASSIGN_OR_RETURN(std::vector<ElasticTensorShape> bound, BoundShapes(tensors));
    BP_RETURN_IF_ERROR(SizeAxesFromTensors(bound));
    BP_RETURN_IF_ERROR(ApplyExplicitParents());
    BP_RETURN_IF_ERROR(CheckParentsDivideIntoGroups());
    BP_RETURN_IF_ERROR(ParseImportance());
    BP_RETURN_IF_ERROR(ParseBudgets());
    // Groups and segments need manifest version 2 (format 1.2), a flat
    // binding version 3 (format 1.4); anything else stays version 1, byte
    // for byte.
    m_.version = m_.RequiredVersion();
    return absl::OkStatus();
  }

 private:
  // A dims entry or segment: an axis name or (format 1.2) a product "A*B"
  // of two distinct axes of one scope.
  static constexpr size_t kMaxEntryBytes = 64 + 1 + 64;

  absl::Status ParseVersionAndLayers() {
    const JsonValue* version = root_.Find("version");
    if (version == nullptr) return ctx_.Err("top level", "\"version\" is required (1)");
    BP_ASSIGN_OR_RETURN(uint64_t ver, ctx_.Uint(*version, "version", 1, 1));
    m_.version = static_cast<uint32_t>(ver);
    m_.prefix_order = true;
    const JsonValue* layers = root_.Find("layers");
    if (layers == nullptr) return absl::OkStatus();
    BP_RETURN_IF_ERROR(ctx_.Keys(*layers, "layers", {"count", "name_pattern"}));
    const JsonValue* count = layers->Find("count");
    const JsonValue* pattern = layers->Find("name_pattern");
    if (count == nullptr || pattern == nullptr) return ctx_.Err("layers", "\"count\" and \"name_pattern\" are required");
    BP_ASSIGN_OR_RETURN(uint64_t n, ctx_.Uint(*count, "layers.count", 1, format::kMaxElasticLayers));
    m_.layer_count = static_cast<uint32_t>(n);
    BP_ASSIGN_OR_RETURN(m_.layer_pattern, ctx_.Str(*pattern, "layers.name_pattern", format::kMaxElasticTemplateBytes));
    size_t at = m_.layer_pattern.find("{L}");
    if (at == std::string::npos || m_.layer_pattern.find("{L}", at + 3) != std::string::npos ||
        m_.layer_pattern.size() < 4) {
      return ctx_.Err("layers.name_pattern", "must hold \"{L}\" exactly once and text around it, e.g. \"blk.{L}.\"");
    }
    return absl::OkStatus();
  }

  absl::Status ParseAxes() {
    const JsonValue* axes = root_.Find("axes");
    if (axes == nullptr || !axes->is_object() || axes->object().empty()) {
      return ctx_.Err("axes", "a non-empty object of axes is required");
    }
    if (axes->object().size() > format::kMaxElasticAxes) {
      return absl::ResourceExhaustedError(StrCat(file_, ": more than ", format::kMaxElasticAxes, " axes"));
    }
    for (const auto& [name, spec] : axes->object()) {
      BP_ASSIGN_OR_RETURN(ElasticAxis a, ParseAxis(name, spec));
      explicit_parent_.push_back(spec.Find("parent"));
      m_.axes.push_back(std::move(a));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<ElasticAxis> ParseAxis(const std::string& name, const JsonValue& spec) const {
    std::string where = StrCat("axis \"", name, "\"");
    BP_RETURN_IF_ERROR(
        ctx_.Keys(spec, where, {"scope", "granularity", "unit_elems", "parent", "at_most", "metadata_key", "groups"}));
    ElasticAxis a;
    a.name = name;
    const JsonValue* scope = spec.Find("scope");
    std::string s = scope != nullptr && scope->is_string() ? scope->string_value() : "";
    if (s == "layer") a.scope = ElasticScope::kLayer;
    else if (s == "global") a.scope = ElasticScope::kGlobal;
    else return ctx_.Err(where, "\"scope\" must be \"layer\" or \"global\"");
    if (a.scope == ElasticScope::kLayer && m_.layer_count == 0) {
      return ctx_.Err(where, "a per-layer axis needs \"layers\"");
    }
    if (const JsonValue* g = spec.Find("granularity")) {
      BP_ASSIGN_OR_RETURN(a.granularity, ctx_.Uint(*g, where + ".granularity", 1, format::kMaxElasticAxisUnits));
    }
    if (const JsonValue* u = spec.Find("unit_elems")) {
      BP_ASSIGN_OR_RETURN(a.unit_elems, ctx_.Uint(*u, where + ".unit_elems", 1, format::kMaxElasticAxisUnits));
    }
    if (const JsonValue* g = spec.Find("groups")) {
      BP_ASSIGN_OR_RETURN(a.groups, ctx_.Uint(*g, where + ".groups", 1, format::kMaxElasticAxisUnits));
    }
    if (const JsonValue* am = spec.Find("at_most")) {
      BP_ASSIGN_OR_RETURN(a.at_most, ctx_.Str(*am, where + ".at_most", 64));
    }
    if (const JsonValue* mk = spec.Find("metadata_key")) {
      BP_ASSIGN_OR_RETURN(a.metadata_key, ctx_.Str(*mk, where + ".metadata_key", format::kMaxElasticNameBytes));
    } else {
      a.metadata_key = std::string(DefaultElasticMetadataKey(name));
    }
    a.parent.assign(a.scope == ElasticScope::kLayer ? m_.layer_count : 1, 0);
    return a;
  }

  absl::Status CheckEntry(const std::string& entry, std::string_view where) const {
    auto product = SplitElasticProduct(entry);
    if (!product) {
      if (m_.FindAxis(entry) == nullptr) return ctx_.Err(where, StrCat("unknown axis \"", entry, "\""));
      return absl::OkStatus();
    }
    if (product->inner.find(kElasticProductSeparator) != std::string_view::npos) {
      // [E-2.3]
      return ctx_.Err(where, StrCat("product \"", entry, "\" has more than two axes"));
    }
    for (std::string_view name : {product->outer, product->inner}) {
      if (m_.FindAxis(name) == nullptr) {
        return ctx_.Err(where, StrCat("unknown axis \"", name, "\" in product \"", entry, "\""));
      }
    }
    const ElasticAxis* outer = m_.FindAxis(product->outer);
    const ElasticAxis* inner = m_.FindAxis(product->inner);
    // [E-2.3]
    if (outer == inner) return ctx_.Err(where, StrCat("product \"", entry, "\" names axis \"", outer->name, "\" twice"));
    if (outer->scope != inner->scope) {
      // [E-2.3]
      return ctx_.Err(where, StrCat("product \"", entry, "\" multiplies axes of different scopes"));
    }
    return absl::OkStatus();
  }

  absl::Status ParseBindings() {
    const JsonValue* bindings = root_.Find("bindings");
    if (bindings == nullptr || !bindings->is_array()) return ctx_.Err("bindings", "an array of bindings is required");
    if (bindings->array().size() > format::kMaxElasticBindings) {
      return absl::ResourceExhaustedError(StrCat(file_, ": more than ", format::kMaxElasticBindings, " bindings"));
    }
    for (size_t i = 0; i < bindings->array().size(); ++i) {
      BP_ASSIGN_OR_RETURN(ElasticBinding eb, ParseBinding(bindings->array()[i], StrCat("bindings[", i, "]")));
      m_.bindings.push_back(std::move(eb));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<ElasticBinding> ParseBinding(const JsonValue& b, const std::string& where) const {
    BP_RETURN_IF_ERROR(ctx_.Keys(b, where, {"tensor", "dims", "flat"}));
    const JsonValue* t = b.Find("tensor");
    const JsonValue* dims = b.Find("dims");
    if (t == nullptr || dims == nullptr || !dims->is_array()) return ctx_.Err(where, "\"tensor\" and \"dims\" are required");
    ElasticBinding eb;
    BP_ASSIGN_OR_RETURN(eb.tensor, ctx_.Str(*t, where + ".tensor", format::kMaxElasticTemplateBytes));
    if (dims->array().size() > 8) return ctx_.Err(where, "more than 8 dims");
    if (const JsonValue* flat = b.Find("flat")) {
      if (!flat->is_bool()) return ctx_.Err(where, "\"flat\" must be true or false");
      eb.flat = flat->bool_value();
      if (eb.flat && dims->array().size() != 1) {
        return ctx_.Err(where, StrCat("a flat binding binds the tensor's elements as one dimension: \"dims\" must "
                                      "have exactly one entry, not ", dims->array().size()));
      }
    }
    for (size_t di = 0; di < dims->array().size(); ++di) {
      const JsonValue& d = dims->array()[di];
      std::string dw = StrCat(where, ".dims[", di, "]");
      if (d.is_object()) {
        BP_ASSIGN_OR_RETURN(ElasticSegmentedDim sd, ParseSegmentedDim(d, di, dw));
        eb.dims.emplace_back(kElasticSegmentedDim);
        eb.segmented.push_back(std::move(sd));
        continue;
      }
      BP_ASSIGN_OR_RETURN(std::string name, ctx_.Str(d, dw, kMaxEntryBytes));
      if (name != "-") BP_RETURN_IF_ERROR(CheckEntry(name, where));
      eb.dims.push_back(std::move(name));
    }
    return eb;
  }

  // {"segments": ["ffn", "ffn"]}: a fused dimension (format 1.2).
  absl::StatusOr<ElasticSegmentedDim> ParseSegmentedDim(const JsonValue& d, size_t di, const std::string& dw) const {
    BP_RETURN_IF_ERROR(ctx_.Keys(d, dw, {"segments"}));
    const JsonValue* segs = d.Find("segments");
    if (segs == nullptr || !segs->is_array() || segs->array().empty() ||
        segs->array().size() > format::kMaxElasticSegments) {
      return ctx_.Err(dw, StrCat("\"segments\" must be an array of 1..", format::kMaxElasticSegments,
                                 " axis names or element counts"));
    }
    ElasticSegmentedDim sd;
    sd.dim = static_cast<uint32_t>(di);
    for (size_t k = 0; k < segs->array().size(); ++k) {
      const JsonValue& seg = segs->array()[k];
      std::string sw = StrCat(dw, ".segments[", k, "]");
      if (seg.is_string()) {
        BP_ASSIGN_OR_RETURN(std::string axis, ctx_.Str(seg, sw, kMaxEntryBytes));
        BP_RETURN_IF_ERROR(CheckEntry(axis, sw));
        sd.segments.push_back({std::move(axis), 0});
      } else {
        BP_ASSIGN_OR_RETURN(uint64_t n, ctx_.Uint(seg, sw, 1, uint64_t{1} << 62));
        sd.segments.push_back({"", n});
      }
    }
    return sd;
  }

  // ---- parent sizes from the tensors ----
  // The shapes the bindings' dims describe: a flat binding's tensor as one
  // dimension of all its elements (format 1.4), any other as it is.
  absl::StatusOr<std::vector<ElasticTensorShape>> BoundShapes(const std::vector<ElasticTensorShape>& tensors) const {
    format::BindingIndex index(m_);
    std::vector<ElasticTensorShape> out = tensors;
    for (auto& t : out) {
      format::ElasticBound bound = index.Resolve(t.name);
      if (bound.binding == nullptr || !bound.binding->flat) continue;
      std::vector<uint64_t> flat = format::BoundShape(*bound.binding, t.shape);
      if (flat.size() != 1 || t.shape.empty()) {
        return ctx_.Err(StrCat("tensor ", QuoteForDisplay(t.name)),
                        StrCat("its binding \"", bound.binding->tensor,
                               "\" is flat but the tensor has no dimensions or more than 2^64 elements"));
      }
      t.shape = std::move(flat);
    }
    return out;
  }

  absl::Status SizeAxesFromTensors(const std::vector<ElasticTensorShape>& tensors) {
    format::BindingIndex index(m_);
    parent_from_.resize(m_.axes.size());
    for (size_t i = 0; i < m_.axes.size(); ++i) parent_from_[i].resize(m_.axes[i].parent.size());
    for (const auto& t : tensors) {
      format::ElasticBound bound = index.Resolve(t.name);
      if (bound.binding == nullptr) continue;
      BP_RETURN_IF_ERROR(SizePlainDims(t, bound));
    }
    for (const auto& t : tensors) {
      format::ElasticBound bound = index.Resolve(t.name);
      if (bound.binding == nullptr) continue;
      for (size_t d = 0; d < t.shape.size(); ++d) {
        const std::string& entry = bound.binding->dims[d];
        if (!SplitElasticProduct(entry)) continue;
        BP_RETURN_IF_ERROR(SizeProduct(StrCat("tensor ", QuoteForDisplay(t.name)), d, entry, bound, t.shape[d]));
      }
    }
    // Segmented dimensions: their segments add up to the dimension; one axis
    // whose size no plain binding gave is solved from the rest.
    for (const auto& t : tensors) {
      format::ElasticBound bound = index.Resolve(t.name);
      if (bound.binding == nullptr) continue;
      std::string where = StrCat("tensor ", QuoteForDisplay(t.name));
      for (const ElasticSegmentedDim& sd : bound.binding->segmented) {
        BP_RETURN_IF_ERROR(SizeSegmentedDim(t, bound, sd, where));
      }
    }
    return absl::OkStatus();
  }

  absl::Status SizePlainDims(const ElasticTensorShape& t, const format::ElasticBound& bound) {
    std::string where = StrCat("tensor ", QuoteForDisplay(t.name));
    if (bound.in_layer && bound.layer >= m_.layer_count) {
      return ctx_.Err(where, StrCat("layer ", bound.layer, " is past layers.count ", m_.layer_count));
    }
    if (bound.binding->dims.size() != t.shape.size()) {
      return ctx_.Err(where, StrCat("has ", t.shape.size(), " dimensions but its binding \"", bound.binding->tensor,
                                    "\" lists ", bound.binding->dims.size()));
    }
    for (size_t d = 0; d < t.shape.size(); ++d) {
      ElasticAxis* a = const_cast<ElasticAxis*>(m_.FindAxis(bound.binding->dims[d]));
      if (a == nullptr) continue;  // "-", "+" or a product (solved below)
      if (a->scope == ElasticScope::kLayer && !bound.in_layer) {
        return ctx_.Err(where, StrCat("binds per-layer axis \"", a->name, "\" but its name has no layer index"));
      }
      size_t ai = static_cast<size_t>(a - m_.axes.data());
      size_t k = a->scope == ElasticScope::kLayer ? bound.layer : 0;
      if (t.shape[d] == 0 || t.shape[d] % a->unit_elems != 0) {
        return ctx_.Err(where, StrCat("dimension ", d, " (", t.shape[d], ") is not a positive multiple of axis \"",
                                      a->name, "\"'s unit_elems ", a->unit_elems));
      }
      uint64_t units = t.shape[d] / a->unit_elems;
      if (units > format::kMaxElasticAxisUnits) return ctx_.Err(where, "more than 2^32 units");
      if (a->parent[k] == 0) {
        a->parent[k] = units;
        parent_from_[ai][k] = t.name;
      } else if (a->parent[k] != units) {
        return ctx_.Err(where, StrCat("dimension ", d, " has ", units, " units of axis \"", a->name, "\" but tensor ",
                                      QuoteForDisplay(parent_from_[ai][k]), " has ", a->parent[k],
                                      a->scope == ElasticScope::kLayer ? StrCat(" in layer ", k) : std::string()));
      }
    }
    return absl::OkStatus();
  }

  // Product dimensions "A*B": parent(A) x uA x parent(B) x uB elements. A
  // factor no plain binding sized takes its "parent" (the count, or this
  // layer's entry of the array), else is solved from the dimension when the
  // other factor is known. An unusable "parent" is reported below.
  uint64_t ExplicitCount(const ElasticAxis* a, size_t k) const {
    const JsonValue* p = explicit_parent_[static_cast<size_t>(a - m_.axes.data())];
    if (p != nullptr && p->is_array()) {
      p = p->array().size() == a->parent.size() && k < p->array().size() ? &p->array()[k] : nullptr;
    }
    auto v = p != nullptr && p->is_number() ? p->uint64_value() : std::nullopt;
    return v && *v >= 1 && *v <= format::kMaxElasticAxisUnits ? *v : 0;
  }

  // `dim`: the dimension the product spans, or nullopt for a segment (whose
  // dimension the segment pass checks).
  absl::Status SizeProduct(const std::string& where, size_t d, const std::string& entry,
                           const format::ElasticBound& bound, std::optional<uint64_t> dim) {
    format::EntryAxes e = format::ResolveEntry(m_, entry);
    std::vector<ElasticAxis*> unknown;
    for (const ElasticAxis* c : {e.outer, e.inner}) {
      ElasticAxis* a = const_cast<ElasticAxis*>(c);
      if (a->scope == ElasticScope::kLayer && !bound.in_layer) {
        return ctx_.Err(where, StrCat("binds per-layer axis \"", a->name, "\" but its name has no layer index"));
      }
      size_t k = a->scope == ElasticScope::kLayer ? bound.layer : 0;
      if (a->parent[k] == 0 && ExplicitCount(a, k) != 0) {
        a->parent[k] = ExplicitCount(a, k);
        parent_from_[static_cast<size_t>(a - m_.axes.data())][k] = StrCat("\"parent\" of axis \"", a->name, "\"");
      }
      if (a->parent[k] == 0) unknown.push_back(a);
    }
    if (!dim) {  // a segment: both factors must be known by now
      if (!unknown.empty()) {
        return ctx_.Err(where, StrCat("dimension ", d, ": the size of axis \"", unknown[0]->name, "\" in product \"",
                                      entry, "\" is not known; bind it to a dimension of its own or give its ",
                                      "\"parent\""));
      }
      return absl::OkStatus();
    }
    if (unknown.size() == 2) {
      return ctx_.Err(where, StrCat("dimension ", d, ": the sizes of both axes of product \"", entry,
                                    "\" are unknown; bind one to a dimension of its own or give its \"parent\""));
    }
    if (unknown.size() == 1) BP_RETURN_IF_ERROR(SolveProductFactor(where, d, entry, e, bound, *dim, unknown[0]));
    std::optional<uint64_t> elems = format::EntryElems(e, bound.layer);
    if (elems != *dim) {
      return ctx_.Err(where, StrCat("dimension ", d, " is ", *dim, " but product \"", entry, "\" spans ",
                                    elems ? StrCat(*elems) : std::string("more than 2^64"), " elements (",
                                    format::ParentUnits(*e.outer, bound.layer), " x ", e.outer->unit_elems, " x ",
                                    format::ParentUnits(*e.inner, bound.layer), " x ", e.inner->unit_elems, ")"));
    }
    return absl::OkStatus();
  }

  // The size of factor `a` of product `entry`, the other factor known: the
  // dimension divided by the rest of the product.
  absl::Status SolveProductFactor(const std::string& where, size_t d, const std::string& entry,
                                  const format::EntryAxes& e, const format::ElasticBound& bound, uint64_t dim,
                                  ElasticAxis* a) {
    const ElasticAxis* other = a == e.outer ? e.inner : e.outer;
    auto per = CheckedMul(format::ParentUnits(*other, bound.layer), other->unit_elems);
    if (per) per = CheckedMul(*per, a->unit_elems);
    if (!per || dim == 0 || dim % *per != 0) {
      return ctx_.Err(where, StrCat("dimension ", d, " (", dim, ") is not a positive multiple of ", per.value_or(0),
                                    " (the rest of product \"", entry, "\"), so axis \"", a->name,
                                    "\" has no whole number of units"));
    }
    if (dim / *per > format::kMaxElasticAxisUnits) return ctx_.Err(where, "more than 2^32 units");
    size_t k = a->scope == ElasticScope::kLayer ? bound.layer : 0;
    a->parent[k] = dim / *per;
    parent_from_[static_cast<size_t>(a - m_.axes.data())][k] = std::string(bound.binding->tensor);
    return absl::OkStatus();
  }

  absl::Status SizeSegmentedDim(const ElasticTensorShape& t, const format::ElasticBound& bound,
                                const ElasticSegmentedDim& sd, const std::string& where) {
    uint64_t known = 0, repeats = 0;
    ElasticAxis* unknown = nullptr;
    for (const ElasticSegment& seg : sd.segments) {
      if (seg.axis.empty()) {
        known += seg.fixed_elems;
        continue;
      }
      if (SplitElasticProduct(seg.axis)) {
        BP_RETURN_IF_ERROR(SizeProduct(where, sd.dim, seg.axis, bound, std::nullopt));
        std::optional<uint64_t> elems = format::EntryElems(format::ResolveEntry(m_, seg.axis), bound.layer);
        if (!elems) {
          // [E-2.4]
          return ctx_.Err(where,
                          StrCat("dimension ", sd.dim, ": product \"", seg.axis, "\" spans more than 2^64 elements"));
        }
        known += *elems;
        continue;
      }
      ElasticAxis* a = const_cast<ElasticAxis*>(m_.FindAxis(seg.axis));
      if (a->scope == ElasticScope::kLayer && !bound.in_layer) {
        return ctx_.Err(where, StrCat("binds per-layer axis \"", a->name, "\" but its name has no layer index"));
      }
      uint64_t p = a->parent[a->scope == ElasticScope::kLayer ? bound.layer : 0];
      if (p != 0) {
        known += p * a->unit_elems;
      } else if (unknown == nullptr || unknown == a) {
        unknown = a;
        ++repeats;
      } else {
        return ctx_.Err(where, StrCat("dimension ", sd.dim, ": the sizes of axes \"", unknown->name, "\" and \"",
                                      a->name, "\" cannot both be derived from one segmented dimension; bind "
                                      "one of them to a dimension of its own"));
      }
    }
    uint64_t dim = t.shape[sd.dim];
    if (unknown == nullptr) {
      if (known != dim) {
        // [E-2.4]
        return ctx_.Err(where, StrCat("dimension ", sd.dim, " is ", dim, " but its segments add up to ", known));
      }
      return absl::OkStatus();
    }
    uint64_t per = repeats * unknown->unit_elems;
    if (known >= dim || (dim - known) % per != 0) {
      return ctx_.Err(where, StrCat("dimension ", sd.dim, " is ", dim, ": its segments cannot add up to it (",
                                    known, " elements of other segments, ", repeats, " segments of axis \"",
                                    unknown->name, "\" with unit_elems ", unknown->unit_elems, ")"));
    }
    if ((dim - known) / per > format::kMaxElasticAxisUnits) return ctx_.Err(where, "more than 2^32 units");
    size_t k = unknown->scope == ElasticScope::kLayer ? bound.layer : 0;
    unknown->parent[k] = (dim - known) / per;
    parent_from_[static_cast<size_t>(unknown - m_.axes.data())][k] = t.name;
    return absl::OkStatus();
  }

  // An axis' "parent": required where no tensor sized it, else it must agree.
  absl::Status ApplyExplicitParents() {
    for (size_t ai = 0; ai < m_.axes.size(); ++ai) {
      ElasticAxis& a = m_.axes[ai];
      std::string where = StrCat("axis \"", a.name, "\".parent");
      const JsonValue* p = explicit_parent_[ai];
      bool any = std::any_of(a.parent.begin(), a.parent.end(), [](uint64_t v) { return v != 0; });
      if (p == nullptr) {
        if (!any) return ctx_.Err(StrCat("axis \"", a.name, "\""), "no tensor is bound to it, so it needs \"parent\"");
        continue;
      }
      std::vector<uint64_t> given(a.parent.size(), 0);
      if (p->is_number()) {
        BP_ASSIGN_OR_RETURN(uint64_t v, ctx_.Uint(*p, where, 1, format::kMaxElasticAxisUnits));
        // A scalar applies to every layer that has the axis (all, if unbound).
        for (size_t k = 0; k < given.size(); ++k) given[k] = (!any || a.parent[k] != 0) ? v : 0;
      } else if (p->is_array() && p->array().size() == given.size()) {
        for (size_t k = 0; k < given.size(); ++k) {
          if (p->array()[k].is_null()) continue;
          BP_ASSIGN_OR_RETURN(given[k],
                              ctx_.Uint(p->array()[k], StrCat(where, "[", k, "]"), 1, format::kMaxElasticAxisUnits));
        }
      } else {
        return ctx_.Err(where, StrCat("expected a count or an array of ", given.size(), " counts or nulls"));
      }
      if (any && given != a.parent) return ctx_.Err(where, "disagrees with the sizes of the tensors bound to the axis");
      a.parent = std::move(given);
    }
    return absl::OkStatus();
  }

  absl::Status CheckParentsDivideIntoGroups() const {
    for (const ElasticAxis& a : m_.axes) {
      for (size_t k = 0; k < a.parent.size(); ++k) {
        if (a.parent[k] % format::GroupsOf(a) != 0) {
          // [E-2.2]
          return ctx_.Err(StrCat("axis \"", a.name, "\""),
                          StrCat("parent size ", a.parent[k],
                                 a.scope == ElasticScope::kLayer ? StrCat(" in layer ", k) : std::string(),
                                 " is not divisible by its ", a.groups, " groups"));
        }
      }
    }
    return absl::OkStatus();
  }

  // ---- importance ----
  absl::Status ParseImportance() {
    std::string method = "importance";
    if (const JsonValue* im = root_.Find("importance_method")) {
      BP_ASSIGN_OR_RETURN(method, ctx_.Str(*im, "importance_method", 256));
    }
    const JsonValue* imp = root_.Find("importance");
    if (imp == nullptr) return absl::OkStatus();
    if (!imp->is_object()) return ctx_.Err("importance", "expected an object {AXIS: {LAYER: [scores]}}");
    for (const auto& [axis_name, per_layer] : imp->object()) {
      const ElasticAxis* a = m_.FindAxis(axis_name);
      std::string where = StrCat("importance \"", axis_name, "\"");
      if (a == nullptr) return ctx_.Err(where, "unknown axis");
      if (!per_layer.is_object()) return ctx_.Err(where, "expected an object {LAYER: [scores]}");
      for (const auto& [layer_key, scores] : per_layer.object()) {
        BP_RETURN_IF_ERROR(ParseLayerScores(*a, method, layer_key, scores, StrCat(where, " layer \"", layer_key, "\"")));
      }
    }
    return absl::OkStatus();
  }

  // One layer's scores of axis `a`: stored sorted, with the unit order that
  // puts the best units first.
  absl::Status ParseLayerScores(const ElasticAxis& a, const std::string& method, const std::string& layer_key,
                                const JsonValue& scores, const std::string& lw) {
    size_t ai = static_cast<size_t>(&a - m_.axes.data());
    uint32_t layer = 0;
    if (a.scope == ElasticScope::kGlobal) {
      if (layer_key != "global") return ctx_.Err(lw, "a global axis takes one entry keyed \"global\"");
    } else {
      auto r = std::from_chars(layer_key.data(), layer_key.data() + layer_key.size(), layer);
      if (r.ec != std::errc() || r.ptr != layer_key.data() + layer_key.size() || layer >= m_.layer_count ||
          (layer_key.size() > 1 && layer_key[0] == '0')) {
        return ctx_.Err(lw, StrCat("the key must be a layer index below ", m_.layer_count));
      }
    }
    uint64_t n = a.parent[layer];
    if (!scores.is_array() || scores.array().size() != n || n == 0) {
      return ctx_.Err(lw, StrCat("expected an array of ", n, " scores (one per unit)"));
    }
    if (out_.orders.count({ai, layer})) return ctx_.Err(lw, "given twice");
    ElasticImportance ei;
    ei.axis = a.name;
    ei.layer = layer;
    ei.method = method;
    std::vector<float> raw(n);
    for (size_t i = 0; i < n; ++i) {
      const JsonValue& s = scores.array()[i];
      if (!s.is_number() || !std::isfinite(s.double_value()) || std::fabs(s.double_value()) > 3.0e38) {
        return ctx_.Err(lw, StrCat("score ", i, " is not a finite number"));
      }
      raw[i] = static_cast<float>(s.double_value());
    }
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    // Descending score; ties keep the lower index first. A grouped axis
    // sorts within each group, so every group keeps its best units.
    uint64_t per_group = n / format::GroupsOf(a);
    for (uint64_t g = 0; g < n; g += per_group) {
      std::stable_sort(order.begin() + g, order.begin() + g + per_group,
                       [&](uint32_t x, uint32_t y) { return raw[x] > raw[y]; });
    }
    for (uint32_t o : order) ei.scores.push_back(raw[o]);
    ei.order = order;
    out_.orders[{ai, layer}] = std::move(order);
    m_.importance.push_back(std::move(ei));
    return absl::OkStatus();
  }

  // ---- budgets ----
  absl::Status ParseBudgets() {
    const JsonValue* budgets = root_.Find("budgets");
    if (budgets == nullptr) return absl::OkStatus();
    if (!budgets->is_array()) return ctx_.Err("budgets", "expected an array");
    if (budgets->array().size() > format::kMaxElasticBudgets) {
      return absl::ResourceExhaustedError(StrCat(file_, ": more than ", format::kMaxElasticBudgets, " budgets"));
    }
    uint64_t cells = 0;
    for (const auto& a : m_.axes) cells += a.parent.size();
    if (cells * budgets->array().size() > format::kMaxElasticBudgetCells) {
      return absl::ResourceExhaustedError(StrCat(file_, ": ", budgets->array().size(), " budgets over ", cells,
                                                 " axis sizes exceed the limit of 2^26 budget cells"));
    }
    for (size_t bi = 0; bi < budgets->array().size(); ++bi) {
      BP_ASSIGN_OR_RETURN(ElasticBudget eb, ParseBudget(budgets->array()[bi], StrCat("budgets[", bi, "]")));
      m_.budgets.push_back(std::move(eb));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<ElasticBudget> ParseBudget(const JsonValue& b, std::string where) const {
    BP_RETURN_IF_ERROR(ctx_.Keys(b, where, {"name", "layer_keep", "per_layer", "global", "nested_in"}));
    ElasticBudget eb;
    const JsonValue* name = b.Find("name");
    if (name == nullptr) return ctx_.Err(where, "\"name\" is required");
    BP_ASSIGN_OR_RETURN(eb.name, ctx_.Str(*name, where + ".name", format::kMaxElasticNameBytes));
    where = StrCat("budget \"", eb.name, "\"");
    eb.layer_keep.assign(m_.layer_count, true);
    if (const JsonValue* keep = b.Find("layer_keep")) {
      if (!keep->is_array() || keep->array().size() != m_.layer_count) {
        return ctx_.Err(where, StrCat("layer_keep must list ", m_.layer_count, " entries (1/0 or true/false)"));
      }
      for (size_t l = 0; l < m_.layer_count; ++l) {
        const JsonValue& v = keep->array()[l];
        if (v.is_bool()) {
          eb.layer_keep[l] = v.bool_value();
        } else {
          BP_ASSIGN_OR_RETURN(uint64_t k, ctx_.Uint(v, StrCat(where, ".layer_keep[", l, "]"), 0, 1));
          eb.layer_keep[l] = k == 1;
        }
      }
    }
    if (const JsonValue* nested = b.Find("nested_in")) {
      BP_ASSIGN_OR_RETURN(eb.nested_in, ctx_.Str(*nested, where + ".nested_in", format::kMaxElasticNameBytes));
    }
    for (const char* group : {"per_layer", "global"}) {
      const JsonValue* sizes = b.Find(group);
      if (sizes == nullptr) continue;
      if (!sizes->is_object()) return ctx_.Err(where, StrCat("\"", group, "\" must be an object {AXIS: ...}"));
      bool layered = std::string_view(group) == "per_layer";
      for (const auto& [axis_name, v] : sizes->object()) {
        BP_ASSIGN_OR_RETURN(ElasticBudgetAxis s,
                            ParseBudgetAxis(eb, layered, axis_name, v, StrCat(where, " ", group, " \"", axis_name, "\"")));
        eb.sizes.push_back(std::move(s));
      }
    }
    AddUnlistedAxes(eb);
    // Keep the declared axis order.
    std::sort(eb.sizes.begin(), eb.sizes.end(), [&](const ElasticBudgetAxis& x, const ElasticBudgetAxis& y) {
      return m_.FindAxis(x.axis) < m_.FindAxis(y.axis);
    });
    return eb;
  }

  // The counts budget `eb` gives axis `axis_name`: one (or null: the parent
  // size) for a global axis, one per layer for a per-layer one.
  absl::StatusOr<ElasticBudgetAxis> ParseBudgetAxis(const ElasticBudget& eb, bool layered,
                                                    const std::string& axis_name, const JsonValue& v,
                                                    const std::string& aw) const {
    const ElasticAxis* a = m_.FindAxis(axis_name);
    if (a == nullptr) return ctx_.Err(aw, "unknown axis");
    if ((a->scope == ElasticScope::kLayer) != layered) {
      return ctx_.Err(aw, layered ? "is a global axis: give it under \"global\""
                                  : "is a per-layer axis: give it under \"per_layer\"");
    }
    for (const auto& s : eb.sizes) {
      if (s.axis == axis_name) return ctx_.Err(aw, "given twice");
    }
    ElasticBudgetAxis s{a->name, std::vector<uint64_t>(a->parent.size(), 0)};
    if (!layered) {
      if (v.is_null()) {
        s.counts[0] = a->parent[0];
      } else {
        BP_ASSIGN_OR_RETURN(s.counts[0], ctx_.Uint(v, aw, 1, format::kMaxElasticAxisUnits));
      }
      if (s.counts[0] % format::GroupsOf(*a) != 0) {
        return ctx_.Err(aw, StrCat(s.counts[0], " units is not divisible by the axis' ", a->groups, " groups"));
      }
      return s;
    }
    if (!v.is_array() || v.array().size() != m_.layer_count) {
      return ctx_.Err(aw, StrCat("expected ", m_.layer_count, " counts or nulls (one per parent layer)"));
    }
    for (size_t l = 0; l < m_.layer_count; ++l) {
      const JsonValue& c = v.array()[l];
      if (!eb.layer_keep[l]) continue;  // a dropped layer keeps nothing
      if (c.is_null()) {
        s.counts[l] = a->parent[l];
        continue;
      }
      BP_ASSIGN_OR_RETURN(s.counts[l], ctx_.Uint(c, StrCat(aw, "[", l, "]"), 1, format::kMaxElasticAxisUnits));
      if (a->parent[l] == 0) return ctx_.Err(aw, StrCat("layer ", l, " has no such axis (give null)"));
      if (s.counts[l] % format::GroupsOf(*a) != 0) {
        return ctx_.Err(StrCat(aw, "[", l, "]"),
                        StrCat(s.counts[l], " units is not divisible by the axis' ", a->groups, " groups"));
      }
    }
    return s;
  }

  // Every axis explicit: parent sizes where not given, 0 on dropped layers.
  void AddUnlistedAxes(ElasticBudget& eb) const {
    for (const auto& a : m_.axes) {
      bool listed = false;
      for (const auto& s : eb.sizes) listed |= s.axis == a.name;
      if (listed) continue;
      ElasticBudgetAxis s{a.name, a.parent};
      if (a.scope == ElasticScope::kLayer) {
        for (size_t l = 0; l < m_.layer_count; ++l) {
          if (!eb.layer_keep[l]) s.counts[l] = 0;
        }
      }
      eb.sizes.push_back(std::move(s));
    }
  }

  const Ctx& ctx_;
  const std::string& file_;
  const JsonValue& root_;
  ElasticAuthoring& out_;
  ElasticManifest& m_;
  // Per axis: its "parent" in the JSON, or nullptr.
  std::vector<const JsonValue*> explicit_parent_;
  // Per axis and layer (one entry for a global axis): what sized it (a
  // tensor name, or the axis' "parent"), for the message when another
  // tensor disagrees.
  std::vector<std::vector<std::string>> parent_from_;
};

}  // namespace

std::string_view DefaultElasticMetadataKey(std::string_view axis) {
  if (axis == "ffn") return "feed_forward_length";
  if (axis == "moe_ffn") return "expert_feed_forward_length";
  if (axis == "heads") return "attention.head_count";
  if (axis == "kv_heads") return "attention.head_count_kv";
  if (axis == "experts") return "expert_count";
  if (axis == "top_k") return "expert_used_count";
  return {};
}

namespace {

// A map over a tensor's flat elements as one map per dimension: outer
// dimensions unmoved, the innermost the map of row 0, when every row moves
// its elements within itself the same way; nullopt otherwise.
std::optional<std::vector<std::vector<uint64_t>>> SeparateFlatMap(const std::vector<uint64_t>& flat,
                                                                  absl::Span<const uint64_t> shape) {
  std::vector<std::vector<uint64_t>> maps(shape.size());
  if (shape.empty() || shape.back() == 0) return std::nullopt;
  uint64_t inner = shape.back();
  std::vector<uint64_t> row0(flat.begin(), flat.begin() + static_cast<std::ptrdiff_t>(std::min<uint64_t>(inner, flat.size())));
  for (uint64_t j = 0; j < flat.size(); ++j) {
    uint64_t row = j / inner;
    if (row0[j % inner] >= inner || flat[j] != row * inner + row0[j % inner]) return std::nullopt;
  }
  maps.back() = std::move(row0);
  return maps;
}

}  // namespace

std::vector<std::vector<uint64_t>> ElasticAuthoring::MapsFor(std::string_view name,
                                                             absl::Span<const uint64_t> shape) const {
  return PermutationFor(name, shape).maps;
}

ElasticAuthoring::Permutation ElasticAuthoring::PermutationFor(std::string_view name,
                                                               absl::Span<const uint64_t> shape) const {
  Permutation p;
  p.grid.assign(shape.begin(), shape.end());
  format::BindingIndex index(manifest);
  format::ElasticBound bound = index.Resolve(name);
  if (bound.binding == nullptr || !bound.binding->flat) {
    p.maps = MapsForBoundShape(name, shape);
    return p;
  }
  p.maps.resize(shape.size());
  std::vector<uint64_t> flat_shape = format::BoundShape(*bound.binding, shape);
  if (flat_shape.size() != 1) return p;
  std::vector<std::vector<uint64_t>> flat = MapsForBoundShape(name, flat_shape);
  if (flat[0].empty()) return p;
  if (auto separated = SeparateFlatMap(flat[0], shape)) {
    p.maps = std::move(*separated);
    return p;
  }
  p.maps = std::move(flat);
  p.grid = std::move(flat_shape);
  return p;
}

std::vector<std::vector<uint64_t>> ElasticAuthoring::MapsForBoundShape(std::string_view name,
                                                                       absl::Span<const uint64_t> shape) const {
  std::vector<std::vector<uint64_t>> maps(shape.size());
  if (orders.empty()) return maps;
  format::BindingIndex index(manifest);
  format::ElasticBound bound = index.Resolve(name);
  if (bound.binding == nullptr || bound.binding->dims.size() != shape.size()) return maps;
  // The order of axis `a` in this tensor's layer, or nullptr (no scores).
  auto order_of = [&](const ElasticAxis* a) -> const std::vector<uint32_t>* {
    size_t ai = static_cast<size_t>(a - manifest.axes.data());
    uint32_t layer = a->scope == ElasticScope::kLayer ? bound.layer : 0;
    auto it = orders.find({ai, layer});
    return it == orders.end() ? nullptr : &it->second;
  };
  // The unit order of an entry's axis, when it has one and fits `units`.
  auto usable = [](const std::vector<uint32_t>* order, uint64_t units) {
    if (order == nullptr || order->size() != units) return false;
    for (size_t q = 0; q < order->size(); ++q) {
      if ((*order)[q] != q) return true;
    }
    return false;  // the identity moves nothing
  };
  for (size_t d = 0; d < shape.size(); ++d) {
    // Per piece of the dimension (the whole dimension, or each axis segment
    // of a segmented one) at element `offset`: the outer axis' order over
    // units of `outer_unit` elements and, for a product A*B, B's order over
    // units of `inner_unit` elements inside every block of `block` elements
    // (one element of one unit of A: all of B), the same in every block.
    struct Piece {
      const std::vector<uint32_t>* outer = nullptr;
      const std::vector<uint32_t>* inner = nullptr;
      uint64_t outer_unit = 1, block = 1, inner_unit = 1, offset = 0, size = 0;
    };
    std::vector<Piece> pieces;
    auto add_piece = [&](const format::EntryAxes& e, uint64_t offset, uint64_t size) {
      Piece p;
      p.offset = offset;
      p.size = size;
      uint64_t parent_a = format::ParentUnits(*e.outer, bound.layer);
      if (!e.product()) {
        p.outer_unit = e.outer->unit_elems;
        if (usable(order_of(e.outer), parent_a)) p.outer = order_of(e.outer);
      } else {
        uint64_t parent_b = format::ParentUnits(*e.inner, bound.layer);
        p.block = parent_b * e.inner->unit_elems;
        p.outer_unit = e.outer->unit_elems * p.block;
        p.inner_unit = e.inner->unit_elems;
        if (usable(order_of(e.outer), parent_a)) p.outer = order_of(e.outer);
        if (usable(order_of(e.inner), parent_b)) p.inner = order_of(e.inner);
      }
      if (p.outer != nullptr || p.inner != nullptr) pieces.push_back(p);
    };
    if (const ElasticSegmentedDim* sd = bound.binding->SegmentsOf(d)) {
      uint64_t offset = 0;
      bool valid = true;
      for (const ElasticSegment& seg : sd->segments) {
        format::EntryAxes e = seg.axis.empty() ? format::EntryAxes{} : format::ResolveEntry(manifest, seg.axis);
        std::optional<uint64_t> size = seg.axis.empty() ? std::optional<uint64_t>(seg.fixed_elems)
                                                        : format::EntryElems(e, bound.layer);
        if (!size) {
          valid = false;
          break;
        }
        if (e.outer != nullptr) add_piece(e, offset, *size);
        offset += *size;
      }
      if (!valid || offset != shape[d]) continue;  // validated before; never cut wrong
    } else if (format::EntryAxes e = format::ResolveEntry(manifest, bound.binding->dims[d]); e.outer != nullptr) {
      if (format::EntryElems(e, bound.layer) != shape[d]) continue;
      add_piece(e, 0, shape[d]);
    }
    if (pieces.empty()) continue;
    maps[d].resize(shape[d]);
    for (uint64_t j = 0; j < shape[d]; ++j) maps[d][j] = j;
    // Every piece of the axis moves its units the same way: stored unit p
    // holds source unit order[p].
    for (const Piece& p : pieces) {
      for (uint64_t j = 0; j < p.size; ++j) {
        uint64_t unit = j / p.outer_unit, within = j % p.outer_unit;
        uint64_t src = (p.outer != nullptr ? (*p.outer)[unit] : unit) * p.outer_unit;
        uint64_t block_start = within - within % p.block;
        uint64_t in_block = within % p.block;
        uint64_t b = in_block / p.inner_unit;
        src += block_start + (p.inner != nullptr ? (*p.inner)[b] : b) * p.inner_unit + in_block % p.inner_unit;
        maps[d][p.offset + j] = p.offset + src;
      }
    }
  }
  return maps;
}

absl::StatusOr<ElasticAuthoring> ParseElasticJson(std::string_view text, const std::string& file,
                                                  const std::vector<ElasticTensorShape>& tensors) {
  Ctx ctx(file);
  JsonLimits limits;
  limits.max_depth = 16;
  limits.max_bytes = kMaxElasticJsonBytes;
  // Importance scores come one per unit and layer: per-channel scores of a
  // 100-layer model 32K channels wide are 3.3M values. The user's own
  // authoring file, so a higher bound than a model's header gets (about
  // 470 MB of DOM at the limit).
  limits.max_values = uint64_t{1} << 22;
  auto parsed = ParseJson(text, limits);
  if (!parsed.ok()) return absl::Status(parsed.status().code(), StrCat(file, ": ", parsed.status().message()));
  ElasticAuthoring out;
  BP_RETURN_IF_ERROR(ElasticJsonParser(ctx, file, *parsed, out).Parse(tensors));
  return out;
}

}  // namespace boltpack::io
