#include "format/elastic_manifest.h"

#include <algorithm>
#include <charconv>

#include "boltpack/codec_registry.h"

namespace boltpack {

const ElasticAxis* ElasticManifest::FindAxis(std::string_view name) const {
  for (const auto& a : axes) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

const ElasticBudget* ElasticManifest::FindBudget(std::string_view name) const {
  for (const auto& b : budgets) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

uint64_t ElasticManifest::KeptUnits(const ElasticBudget& budget, const ElasticAxis& axis, uint32_t layer) const {
  bool global = axis.scope == ElasticScope::kGlobal;
  size_t k = global ? 0 : layer;
  if (!global && (layer >= budget.layer_keep.size() || !budget.layer_keep[layer])) return 0;
  for (const auto& s : budget.sizes) {
    if (s.axis == axis.name) return k < s.counts.size() ? s.counts[k] : 0;
  }
  return k < axis.parent.size() ? axis.parent[k] : 0;
}

uint32_t ElasticManifest::RequiredVersion() const {
  for (const auto& b : bindings) {
    if (b.flat) return 3;
  }
  for (const auto& a : axes) {
    if (a.groups > 1) return 2;
  }
  for (const auto& b : bindings) {
    if (!b.segmented.empty()) return 2;
    for (const auto& d : b.dims) {
      if (SplitElasticProduct(d)) return 2;
    }
  }
  return 1;
}

std::optional<ElasticProductNames> SplitElasticProduct(std::string_view entry) {
  size_t star = entry.find(kElasticProductSeparator);
  if (star == std::string_view::npos) return std::nullopt;
  return ElasticProductNames{entry.substr(0, star), entry.substr(star + 1)};
}

const ElasticSegmentedDim* ElasticBinding::SegmentsOf(size_t d) const {
  for (const auto& s : segmented) {
    if (s.dim == d) return &s;
  }
  return nullptr;
}

std::optional<LayerRef> MatchLayer(std::string_view layer_pattern, std::string_view name) {
  size_t at = layer_pattern.find("{L}");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view prefix = layer_pattern.substr(0, at);
  std::string_view suffix = layer_pattern.substr(at + 3);
  for (size_t pos = name.find(prefix); pos != std::string_view::npos; pos = name.find(prefix, pos + 1)) {
    size_t d = pos + prefix.size();
    size_t e = d;
    while (e < name.size() && e - d < 10 && name[e] >= '0' && name[e] <= '9') ++e;
    if (e == d || (e - d > 1 && name[d] == '0')) continue;
    if (name.substr(e, suffix.size()) != suffix) continue;
    uint64_t v = 0;
    auto r = std::from_chars(name.data() + d, name.data() + e, v);
    if (r.ec != std::errc() || v > 0xffffffffull) continue;
    LayerRef ref;
    ref.layer = static_cast<uint32_t>(v);
    ref.digits_begin = d;
    ref.digits_length = e - d;
    ref.template_name = std::string(name.substr(0, d));
    ref.template_name += "{L}";
    ref.template_name += name.substr(e);
    return ref;
  }
  return std::nullopt;
}

namespace format {

ElasticManifest ElasticFromProto(const v1::ElasticManifest& p) {
  ElasticManifest m;
  m.version = p.version();
  m.prefix_order = p.storage_order() == v1::ELASTIC_STORAGE_ORDER_PREFIX;
  m.layer_count = p.layer_count();
  m.layer_pattern = p.layer_pattern();
  for (const auto& a : p.axes()) {
    ElasticAxis axis;
    axis.name = a.name();
    axis.scope = a.scope() == v1::ELASTIC_SCOPE_LAYER    ? ElasticScope::kLayer
                 : a.scope() == v1::ELASTIC_SCOPE_GLOBAL ? ElasticScope::kGlobal
                                                         : ElasticScope::kUnspecified;
    axis.granularity = a.granularity();
    axis.unit_elems = a.unit_elems();
    axis.parent.assign(a.parent().begin(), a.parent().end());
    axis.at_most = a.at_most();
    axis.metadata_key = a.metadata_key();
    axis.groups = a.groups();
    m.axes.push_back(std::move(axis));
  }
  for (const auto& b : p.bindings()) {
    ElasticBinding binding{b.tensor(), {b.dims().begin(), b.dims().end()}, {}, b.flat()};
    for (const auto& sd : b.segmented()) {
      ElasticSegmentedDim dim;
      dim.dim = sd.dim();
      for (const auto& seg : sd.segments()) dim.segments.push_back({seg.axis(), seg.fixed_elems()});
      binding.segmented.push_back(std::move(dim));
    }
    m.bindings.push_back(std::move(binding));
  }
  for (const auto& b : p.budgets()) {
    ElasticBudget budget;
    budget.name = b.name();
    budget.layer_keep.assign(b.layer_keep().begin(), b.layer_keep().end());
    for (const auto& s : b.sizes()) budget.sizes.push_back({s.axis(), {s.counts().begin(), s.counts().end()}});
    budget.nested_in = b.nested_in();
    m.budgets.push_back(std::move(budget));
  }
  for (const auto& i : p.importance()) {
    m.importance.push_back({i.axis(), i.layer(), {i.scores().begin(), i.scores().end()},
                            {i.order().begin(), i.order().end()}, i.method()});
  }
  return m;
}

void ElasticToProto(const ElasticManifest& m, v1::ElasticManifest* out) {
  out->Clear();
  out->set_version(m.version);
  out->set_storage_order(m.prefix_order ? v1::ELASTIC_STORAGE_ORDER_PREFIX : v1::ELASTIC_STORAGE_ORDER_UNSPECIFIED);
  out->set_layer_count(m.layer_count);
  out->set_layer_pattern(m.layer_pattern);
  for (const auto& a : m.axes) {
    auto* pa = out->add_axes();
    pa->set_name(a.name);
    pa->set_scope(a.scope == ElasticScope::kLayer    ? v1::ELASTIC_SCOPE_LAYER
                  : a.scope == ElasticScope::kGlobal ? v1::ELASTIC_SCOPE_GLOBAL
                                                     : v1::ELASTIC_SCOPE_UNSPECIFIED);
    pa->set_granularity(a.granularity);
    pa->set_unit_elems(a.unit_elems);
    for (uint64_t v : a.parent) pa->add_parent(v);
    pa->set_at_most(a.at_most);
    pa->set_metadata_key(a.metadata_key);
    pa->set_groups(a.groups);  // 0 is not serialized: version-1 bytes stay as they were
  }
  for (const auto& b : m.bindings) {
    auto* pb = out->add_bindings();
    pb->set_tensor(b.tensor);
    for (const auto& d : b.dims) pb->add_dims(d);
    pb->set_flat(b.flat);  // false is not serialized: older manifests keep their bytes
    for (const auto& sd : b.segmented) {
      auto* ps = pb->add_segmented();
      ps->set_dim(sd.dim);
      for (const auto& seg : sd.segments) {
        auto* pg = ps->add_segments();
        pg->set_axis(seg.axis);
        pg->set_fixed_elems(seg.fixed_elems);
      }
    }
  }
  for (const auto& b : m.budgets) {
    auto* pb = out->add_budgets();
    pb->set_name(b.name);
    for (bool k : b.layer_keep) pb->add_layer_keep(k);
    for (const auto& s : b.sizes) {
      auto* ps = pb->add_sizes();
      ps->set_axis(s.axis);
      for (uint64_t c : s.counts) ps->add_counts(c);
    }
    pb->set_nested_in(b.nested_in);
  }
  for (const auto& i : m.importance) {
    auto* pi = out->add_importance();
    pi->set_axis(i.axis);
    pi->set_layer(i.layer);
    for (float s : i.scores) pi->add_scores(s);
    for (uint32_t o : i.order) pi->add_order(o);
    pi->set_method(i.method);
  }
}

std::optional<CellLayout> StoredCellLayout(std::string_view codec_id, DType dtype, const CodecParams& params) {
  const Codec* codec = FindCodec(codec_id);
  if (codec == nullptr) return std::nullopt;
  std::optional<StoredLayout> layout = codec->Layout(dtype, params);
  if (layout && (layout->block_elems == 0 || layout->cell_bytes.empty())) return std::nullopt;
  return layout;
}

}  // namespace format
}  // namespace boltpack
