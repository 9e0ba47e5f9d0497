#include "format/elastic_ssm_keys.h"

#include <charconv>
#include <map>
#include <optional>
#include <string_view>

#include "common/status_macros.h"
#include "common/str_cat.h"

namespace boltpack::format {
namespace {

// The layer of a llama.cpp tensor name "blk.N.<suffix>", or nullopt.
std::optional<uint64_t> LayerOf(std::string_view name, std::string_view suffix) {
  constexpr std::string_view kBlk = "blk.";
  if (name.substr(0, kBlk.size()) != kBlk || name.size() <= kBlk.size() + suffix.size() + 1) return std::nullopt;
  if (name.substr(name.size() - suffix.size()) != suffix) return std::nullopt;
  std::string_view digits = name.substr(kBlk.size(), name.size() - kBlk.size() - suffix.size());
  if (digits.empty() || digits.back() != '.') return std::nullopt;
  digits.remove_suffix(1);
  uint64_t v = 0;
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (r.ec != std::errc() || r.ptr != digits.data() + digits.size()) return std::nullopt;
  return v;
}

MetaValue* FindMutable(Metadata& metadata, std::string_view key) {
  for (auto& [k, v] : metadata) {
    if (k == key) return &v;
  }
  return nullptr;
}

// One size per Mamba layer of the slice; `what` names it in messages.
struct LayerSizes {
  std::map<uint64_t, uint64_t> by_layer;
  std::string Describe() const {
    std::string s;
    for (const auto& [l, n] : by_layer) s += StrCat(s.empty() ? "" : ", ", "layer ", l, ": ", n);
    return s;
  }
  std::optional<uint64_t> Uniform() const {
    if (by_layer.empty()) return std::nullopt;
    uint64_t first = by_layer.begin()->second;
    for (const auto& [l, n] : by_layer) {
      if (n != first) return std::nullopt;
    }
    return first;
  }
};

bool IsIntKey(const MetaValue* v) { return v != nullptr && (IsUnsignedInt(v->type) || IsSignedInt(v->type)); }

absl::Status Differ(const std::string& budget, const std::string& key, const char* what, const LayerSizes& sizes) {
  return absl::InvalidArgumentError(StrCat(
      "budget \"", budget, "\": its kept Mamba layers differ in ", what, " (", sizes.Describe(),
      "); llama.cpp reads \"", key, "\" as one number for every layer (no per-layer array), so this budget "
      "cannot be sliced to a model with that key; keep the same ssm heads in every kept Mamba layer"));
}

constexpr const char* kInnerWhat = "inner size (heads x head_dim)";
constexpr const char* kHeadsWhat = "head count";

}  // namespace

absl::Status CheckSsmBudgets(const ElasticManifest& m, const std::vector<ElasticTensorRef>& tensors,
                             const Metadata& metadata) {
  std::string prefix;
  for (const auto& [k, v] : metadata) {
    if (k == "general.architecture" && v.type == ValueType::kString) prefix = v.s + ".";
  }
  if (prefix.empty()) return absl::OkStatus();
  Metadata copy;  // only the two keys, to look them up
  for (const auto& [k, v] : metadata) {
    if (k == prefix + "ssm.inner_size" || k == prefix + "ssm.time_step_rank") copy.emplace_back(k, v);
  }
  bool inner = IsIntKey(FindMutable(copy, prefix + "ssm.inner_size"));
  bool heads = IsIntKey(FindMutable(copy, prefix + "ssm.time_step_rank"));
  if (!inner && !heads) return absl::OkStatus();
  BindingIndex index(m);
  for (const ElasticBudget& b : m.budgets) {
    LayerSizes d_inner, n_heads;
    for (const ElasticTensorRef& t : tensors) {
      auto out = LayerOf(t.name, "ssm_out.weight");
      auto a = LayerOf(t.name, "ssm_a");
      auto l = out ? out : a;
      if (!l || (*l < b.layer_keep.size() && !b.layer_keep[*l]) || t.shape.empty()) continue;
      std::vector<uint64_t> kept = KeptExtents(m, b, index.Resolve(t.name), t.shape);
      if (out) d_inner.by_layer[*l] = kept.back();
      if (a) {
        uint64_t n = 1;
        for (uint64_t k : kept) n *= k;
        n_heads.by_layer[*l] = n;
      }
    }
    if (inner && !d_inner.Uniform() && !d_inner.by_layer.empty()) {
      return Differ(b.name, prefix + "ssm.inner_size", kInnerWhat, d_inner);
    }
    if (heads && !n_heads.Uniform() && !n_heads.by_layer.empty()) {
      return Differ(b.name, prefix + "ssm.time_step_rank", kHeadsWhat, n_heads);
    }
  }
  return absl::OkStatus();
}

absl::Status RewriteSsmKeys(const std::string& prefix, const std::string& budget, SlicePlan* plan) {
  if (prefix.empty()) return absl::OkStatus();
  std::string inner_key = prefix + "ssm.inner_size";
  std::string heads_key = prefix + "ssm.time_step_rank";
  MetaValue* inner = FindMutable(plan->metadata, inner_key);
  MetaValue* heads = FindMutable(plan->metadata, heads_key);
  if (inner == nullptr && heads == nullptr) return absl::OkStatus();
  LayerSizes d_inner, n_heads;
  for (const PlannedTensor& t : plan->tensors) {
    if (t.kept.empty()) continue;
    if (auto l = LayerOf(t.name, "ssm_out.weight")) d_inner.by_layer[*l] = t.kept.back();
    if (auto l = LayerOf(t.name, "ssm_a")) {
      uint64_t n = 1;
      for (uint64_t k : t.kept) n *= k;  // a kept shape: never more elements than the parent's
      n_heads.by_layer[*l] = n;
    }
  }
  auto one = [&](MetaValue* v, const std::string& key, const LayerSizes& sizes, const char* what) -> absl::Status {
    if (v == nullptr || sizes.by_layer.empty() || !(IsUnsignedInt(v->type) || IsSignedInt(v->type))) {
      return absl::OkStatus();
    }
    std::optional<uint64_t> n = sizes.Uniform();
    if (!n) return Differ(budget, key, what, sizes);
    uint64_t old = IsUnsignedInt(v->type) ? v->u : static_cast<uint64_t>(v->i);
    if (old == *n) return absl::OkStatus();
    *v = IsUnsignedInt(v->type) ? MetaValue::Uint(v->type, *n) : MetaValue::Int(v->type, static_cast<int64_t>(*n));
    plan->notes.push_back(StrCat("metadata \"", key, "\" = ", *n, " (was ", old, "): the kept Mamba ", what));
    return absl::OkStatus();
  };
  BP_RETURN_IF_ERROR(one(inner, inner_key, d_inner, kInnerWhat));
  return one(heads, heads_key, n_heads, kHeadsWhat);
}

}  // namespace boltpack::format
