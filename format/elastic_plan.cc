#include "format/elastic_plan.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <optional>
#include <unordered_set>

#include "common/status_macros.h"
#include "common/str_cat.h"
#include "format/elastic_runs.h"
#include "format/elastic_ssm_keys.h"
#include "format/elastic_validate.h"

namespace boltpack::format {
namespace {

MetaValue IntLike(ValueType type, uint64_t v) {
  return IsUnsignedInt(type) ? MetaValue::Uint(type, v) : MetaValue::Int(type, static_cast<int64_t>(v));
}
bool IsInt(ValueType t) { return IsUnsignedInt(t) || IsSignedInt(t); }

const std::string* ArchOf(const Metadata& metadata) {
  for (const auto& [key, value] : metadata) {
    if (key == "general.architecture" && value.type == ValueType::kString) return &value.s;
  }
  return nullptr;
}

const MetaValue* Find(const Metadata& metadata, std::string_view key) {
  for (const auto& [k, v] : metadata) {
    if (k == key) return &v;
  }
  return nullptr;
}

// llama.cpp derives a head's width as embedding_length / head_count unless
// `attention.key_length` / `attention.value_length` say otherwise, so a
// budget that keeps fewer heads (of unchanged width) must pin the parent's
// head width, or the slice would load with heads of the wrong size. Only
// added where the source leaves them to that default and the head count
// actually changed.
void PinHeadDimensions(const std::string& prefix, const Metadata& source, SlicePlan* plan) {
  if (prefix.empty()) return;
  const MetaValue* embd = Find(source, prefix + "embedding_length");
  const MetaValue* heads = Find(source, prefix + "attention.head_count");
  const MetaValue* kept = Find(plan->metadata, prefix + "attention.head_count");
  if (embd == nullptr || heads == nullptr || kept == nullptr || !IsInt(embd->type) || !IsInt(heads->type)) return;
  uint64_t n_embd = IsUnsignedInt(embd->type) ? embd->u : static_cast<uint64_t>(embd->i);
  uint64_t n_head = IsUnsignedInt(heads->type) ? heads->u : static_cast<uint64_t>(heads->i);
  if (*kept == *heads || n_head == 0 || n_embd % n_head != 0) return;
  for (const char* suffix : {"attention.key_length", "attention.value_length"}) {
    std::string key = prefix + suffix;
    if (Find(source, key) != nullptr) continue;
    plan->metadata.emplace_back(key, MetaValue::Uint(ValueType::kUint32, n_embd / n_head));
    plan->notes.push_back(StrCat("metadata \"", key, "\" = ", n_embd / n_head,
                                 " added: the head width llama.cpp would otherwise derive from fewer heads"));
  }
}

// The layers a budget keeps, in order, and each source layer's index in the
// output (-1: dropped).
struct LayerRenumbering {
  std::vector<uint32_t> kept;
  std::vector<int64_t> new_index;
};

LayerRenumbering RenumberLayers(const ElasticManifest& m, const ElasticBudget& budget) {
  LayerRenumbering layers;
  layers.new_index.assign(m.layer_count, -1);
  for (uint32_t l = 0; l < m.layer_count; ++l) {
    if (l < budget.layer_keep.size() && budget.layer_keep[l]) {
      layers.new_index[l] = static_cast<int64_t>(layers.kept.size());
      layers.kept.push_back(l);
    }
  }
  return layers;
}

// The output's tensors: those of kept layers, renamed to their new layer
// index, with the runs the budget keeps. Returns the bindings they use.
std::unordered_set<const ElasticBinding*> PlanTensors(const ElasticManifest& m, const TensorList& tensors,
                                                      const ElasticBudget& budget, const LayerRenumbering& layers,
                                                      SlicePlan* plan) {
  BindingIndex index(m);
  std::unordered_set<const ElasticBinding*> used;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo t = tensors[i];
    PlannedTensor p;
    p.source = i;
    p.name = t.name;
    if (m.layer_count > 0) {
      if (auto ref = MatchLayer(m.layer_pattern, t.name); ref && ref->layer < m.layer_count) {
        if (layers.new_index[ref->layer] < 0) continue;  // a dropped layer
        p.name.replace(ref->digits_begin, ref->digits_length, StrCat(layers.new_index[ref->layer]));
      }
    }
    ElasticBound bound = index.Resolve(t.name);
    if (bound.binding != nullptr) used.insert(bound.binding);
    p.runs = KeptRuns(m, budget, bound, t.shape);
    p.kept.resize(t.shape.size());
    for (size_t d = 0; d < t.shape.size(); ++d) p.kept[d] = RunsElems(p.runs[d]);
    p.whole = true;
    for (size_t d = 0; d < t.shape.size(); ++d) p.whole &= WholeDim(p.runs[d], t.shape[d]);
    plan->tensors.push_back(std::move(p));
  }
  return used;
}

// The value of metadata `key`, the size of `axis`, in the output: an array
// per kept layer, or one integer where every layer that has the axis keeps
// the same count. A note goes to `plan` when an integer becomes an array.
absl::StatusOr<MetaValue> SlicedAxisSize(const ElasticManifest& m, const ElasticBudget& budget,
                                         const LayerRenumbering& layers, const ElasticAxis& axis,
                                         const std::string& key, MetaValue v, SlicePlan* plan) {
  std::vector<uint64_t> sizes;
  if (axis.scope == ElasticScope::kGlobal) {
    sizes.push_back(m.KeptUnits(budget, axis, 0));
  } else {
    for (uint32_t l : layers.kept) sizes.push_back(m.KeptUnits(budget, axis, l));
  }
  if (v.type == ValueType::kArray && IsInt(v.element_type)) {
    if (axis.scope == ElasticScope::kLayer && v.array_size() != m.layer_count) {
      return absl::InvalidArgumentError(StrCat("metadata \"", key, "\" has ", v.array_size(),
                                               " entries but the model has ", m.layer_count, " layers"));
    }
    std::vector<MetaValue> elems;
    for (uint64_t s : sizes) elems.push_back(IntLike(v.element_type, s));
    return MetaValue::Array(v.element_type, std::move(elems));
  }
  if (!IsInt(v.type)) {
    return absl::InvalidArgumentError(StrCat("metadata \"", key, "\" (the size of axis \"", axis.name,
                                             "\") is not an integer or an integer array"));
  }
  uint64_t first = 0;
  bool uniform = true;
  for (uint64_t s : sizes) {
    if (s == 0) continue;
    if (first == 0) first = s;
    uniform &= s == first;
  }
  if (uniform) return IntLike(v.type, first);
  std::vector<MetaValue> elems;
  for (uint64_t s : sizes) elems.push_back(IntLike(v.type, s));
  plan->notes.push_back(StrCat("metadata \"", key, "\" differs between layers and becomes a per-layer array"));
  return MetaValue::Array(v.type, std::move(elems));
}

// ---- metadata ----
absl::Status PlanMetadata(const ElasticManifest& m, const Metadata& metadata, const ElasticBudget& budget,
                          const LayerRenumbering& layers, SlicePlan* plan) {
  const std::string* arch = ArchOf(metadata);
  std::string prefix = arch != nullptr ? StrCat(*arch, ".") : std::string();
  for (const auto& [key, value] : metadata) {
    MetaValue v = value;
    const ElasticAxis* axis = nullptr;
    for (const auto& a : m.axes) {
      if (!a.metadata_key.empty() && key == prefix + a.metadata_key) axis = &a;
    }
    bool layered_array = v.type == ValueType::kArray && m.layer_count > 1 && v.array_size() == m.layer_count &&
                         !prefix.empty() && key.rfind(prefix, 0) == 0;
    if (axis != nullptr) {
      BP_ASSIGN_OR_RETURN(v, SlicedAxisSize(m, budget, layers, *axis, key, std::move(v), plan));
    } else if (key == prefix + "block_count" && IsInt(v.type) && m.layer_count > 0) {
      v = IntLike(v.type, layers.kept.size());
    } else if (layered_array && layers.kept.size() != m.layer_count) {
      std::vector<MetaValue> elems;
      for (uint32_t l : layers.kept) elems.push_back(v.element(l));
      v = MetaValue::Array(v.element_type, std::move(elems));
    }
    plan->metadata.emplace_back(key, std::move(v));
  }
  PinHeadDimensions(prefix, metadata, plan);
  return RewriteSsmKeys(prefix, budget.name, plan);
}

// Per axis entry of the output: one value for a global axis, one per kept
// layer for a per-layer one (`units` of the source layer).
template <typename Units>
std::vector<uint64_t> OnKeptLayers(const ElasticAxis& a, const LayerRenumbering& layers, Units&& units) {
  std::vector<uint64_t> v;
  if (a.scope == ElasticScope::kGlobal) {
    v.push_back(units(0u));
  } else {
    for (uint32_t l : layers.kept) v.push_back(units(l));
  }
  return v;
}

// Budget `c` of the source as a budget of the output, when it is nested in
// the one cut (keeps no layer or unit that one drops); else nullopt.
// `out`: the output's manifest so far (nested_in survives where its budget
// did).
std::optional<ElasticBudget> NestedBudget(const ElasticManifest& m, const ElasticBudget& budget,
                                          const BudgetCounts& bcount, const LayerRenumbering& layers,
                                          const ElasticBudget& c, const ElasticManifest& out) {
  bool nested = true;
  for (uint32_t l = 0; l < m.layer_count && nested; ++l) nested = !c.layer_keep[l] || budget.layer_keep[l];
  BudgetCounts cc(m, c);
  for (size_t ai = 0; ai < m.axes.size() && nested; ++ai) {
    for (uint32_t k = 0; k < m.axes[ai].parent.size() && nested; ++k) nested = cc(ai, k) <= bcount(ai, k);
  }
  if (!nested) return std::nullopt;
  ElasticBudget nc;
  nc.name = c.name;
  for (uint32_t l : layers.kept) nc.layer_keep.push_back(c.layer_keep[l]);
  for (size_t ai = 0; ai < m.axes.size(); ++ai) {
    nc.sizes.push_back({m.axes[ai].name, OnKeptLayers(m.axes[ai], layers, [&](uint32_t l) { return cc(ai, l); })});
  }
  if (out.FindBudget(c.nested_in) != nullptr) nc.nested_in = c.nested_in;
  return nc;
}

// An importance record of the source as one of the output (the scores of
// the kept units), or nullopt where its layer or every unit is dropped.
std::optional<ElasticImportance> SlicedImportance(const ElasticManifest& m, const ElasticBudget& budget,
                                                  const LayerRenumbering& layers, const ElasticImportance& imp) {
  const ElasticAxis* a = m.FindAxis(imp.axis);
  if (a == nullptr) return std::nullopt;
  uint32_t layer = 0;
  if (a->scope == ElasticScope::kLayer) {
    if (imp.layer >= m.layer_count || layers.new_index[imp.layer] < 0) return std::nullopt;
    layer = static_cast<uint32_t>(layers.new_index[imp.layer]);
  }
  uint64_t keep = m.KeptUnits(budget, *a, imp.layer);
  ElasticImportance ni = imp;
  ni.layer = layer;
  ni.scores.clear();
  ni.order.clear();
  // The kept positions: a prefix, or a prefix of every group.
  for (uint64_t p : KeptUnitPositions(*a, imp.scores.size(), keep)) {
    if (p >= imp.scores.size() || p >= imp.order.size()) break;
    ni.scores.push_back(imp.scores[p]);
    ni.order.push_back(imp.order[p]);
  }
  // `order` keeps naming units of the original source checkpoint.
  if (ni.scores.empty()) return std::nullopt;
  return ni;
}

// ---- the output's elastic manifest ----
void PlanElastic(const ElasticManifest& m, const ElasticBudget& budget, const LayerRenumbering& layers,
                 const std::unordered_set<const ElasticBinding*>& used, SlicePlan* plan) {
  ElasticManifest& out = plan->elastic;
  out.version = m.version;  // groups and segments survive the cut
  out.prefix_order = m.prefix_order;
  out.layer_count = m.layer_count == 0 ? 0 : static_cast<uint32_t>(layers.kept.size());
  out.layer_pattern = m.layer_pattern;
  BudgetCounts bcount(m, budget);
  for (size_t ai = 0; ai < m.axes.size(); ++ai) {
    ElasticAxis na = m.axes[ai];
    na.parent = OnKeptLayers(na, layers, [&](uint32_t l) { return bcount(ai, l); });
    out.axes.push_back(std::move(na));
  }
  for (const auto& b : m.bindings) {
    if (used.count(&b)) out.bindings.push_back(b);
  }
  for (const auto& c : m.budgets) {
    if (c.name == budget.name) continue;
    if (auto nc = NestedBudget(m, budget, bcount, layers, c, out)) out.budgets.push_back(std::move(*nc));
  }
  for (const auto& imp : m.importance) {
    if (auto ni = SlicedImportance(m, budget, layers, imp)) out.importance.push_back(std::move(*ni));
  }
}

}  // namespace

absl::StatusOr<SlicePlan> PlanSlice(const ElasticManifest& m, const TensorList& tensors,
                                    const Metadata& metadata, const ElasticBudget& budget) {
  SlicePlan plan;
  LayerRenumbering layers = RenumberLayers(m, budget);
  plan.kept_layers = static_cast<uint32_t>(layers.kept.size());
  std::unordered_set<const ElasticBinding*> used = PlanTensors(m, tensors, budget, layers, &plan);
  BP_RETURN_IF_ERROR(PlanMetadata(m, metadata, budget, layers, &plan));
  PlanElastic(m, budget, layers, used, &plan);
  return plan;
}

absl::StatusOr<ElasticBudget> AdHocBudget(const ElasticManifest& m, const std::vector<std::string>& terms) {
  ElasticBudget b;
  b.name = "ad-hoc";
  b.layer_keep.assign(m.layer_count, true);
  for (const auto& term : terms) {
    size_t eq = term.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(StrCat("--keep \"", term, "\": expected AXIS=FRACTION or AXIS=COUNT"));
    }
    std::string name = term.substr(0, eq);
    std::string value = term.substr(eq + 1);
    const ElasticAxis* a = m.FindAxis(name);
    if (a == nullptr) {
      std::string names;
      for (const auto& ax : m.axes) names += StrCat(names.empty() ? "" : ", ", ax.name);
      return absl::InvalidArgumentError(StrCat("--keep \"", term, "\": the file declares no axis \"", name,
                                               "\" (axes: ", names, ")"));
    }
    for (const auto& s : b.sizes) {
      if (s.axis == name) return absl::InvalidArgumentError(StrCat("--keep: axis \"", name, "\" given twice"));
    }
    bool fraction = value.find('.') != std::string::npos;
    double f = 0;
    uint64_t count = 0;
    if (fraction) {
      char* end = nullptr;
      f = std::strtod(value.c_str(), &end);
      if (end != value.c_str() + value.size() || !(f > 0 && f <= 1)) {
        return absl::InvalidArgumentError(StrCat("--keep \"", term, "\": a fraction must be in (0, 1]"));
      }
    } else {
      auto r = std::from_chars(value.data(), value.data() + value.size(), count);
      if (r.ec != std::errc() || r.ptr != value.data() + value.size() || count == 0) {
        return absl::InvalidArgumentError(StrCat("--keep \"", term, "\": expected a fraction (0.5) or a count (48)"));
      }
    }
    ElasticBudgetAxis s{name, {}};
    // A count must be a multiple of the groups (each group keeps the same
    // number of units) and of the granularity.
    uint64_t step = std::lcm(a->granularity, GroupsOf(*a));
    for (uint64_t p : a->parent) {
      uint64_t c = 0;
      if (p > 0) {
        if (fraction) {
          c = static_cast<uint64_t>(std::floor(static_cast<double>(p) * f));
          c -= c % step;
          if (c == 0) c = std::min(step, p);
          c = std::min(c, p);
        } else {
          if (count > p) {
            return absl::InvalidArgumentError(StrCat("--keep \"", term, "\": axis \"", name, "\" has only ", p,
                                                     " units in some layer"));
          }
          c = count;
        }
      }
      s.counts.push_back(c);
    }
    b.sizes.push_back(std::move(s));
    b.name += StrCat(b.name.size() == 6 ? ":" : ",", term);
  }
  return b;
}

}  // namespace boltpack::format
