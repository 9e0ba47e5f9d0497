#include "io/hf_arch.h"

#include <array>
#include <utility>

#include "common/str_cat.h"
#include "io/hf_arch_tables.h"

namespace boltpack::io {
namespace {

// The layer number of a "model.layers.N." name: the digits and where they
// start, or nullopt when the name has no layer.
struct LayerRef {
  size_t begin = 0;
  size_t end = 0;
};
std::optional<LayerRef> FindNumber(std::string_view name, std::string_view kLayers) {
  size_t at = name.find(kLayers);
  if (at == std::string_view::npos) return std::nullopt;
  size_t begin = at + kLayers.size();
  size_t end = begin;
  while (end < name.size() && name[end] >= '0' && name[end] <= '9') ++end;
  // At most 9 digits: a layer or expert number is far below 10^9 (and a
  // longer run of digits is not a number a table means).
  if (end == begin || end - begin > 9 || end == name.size() || name[end] != '.') return std::nullopt;
  return LayerRef{begin, end};
}

std::string Replace(std::string_view pattern, std::string_view bid, std::string_view field = "{bid}") {
  std::string out(pattern);
  size_t at = out.find(field);
  if (at != std::string::npos) out.replace(at, field.size(), bid);
  return out;
}

// `name` without its ".weight" or ".bias", and that suffix.
std::pair<std::string_view, std::string_view> SplitSuffix(std::string_view name) {
  for (std::string_view s : {std::string_view(".weight"), std::string_view(".bias")}) {
    if (name.size() > s.size() && name.substr(name.size() - s.size()) == s) {
      return {name.substr(0, name.size() - s.size()), s};
    }
  }
  return {name, {}};
}

}  // namespace

absl::StatusOr<const HfArch*> FindHfArch(const JsonValue& config, const std::string& path) {
  const JsonValue* archs = config.Find("architectures");
  if (archs == nullptr || !archs->is_array() || archs->array().empty() || !archs->array()[0].is_string()) {
    return absl::InvalidArgumentError(
        StrCat(path, ": no \"architectures\" list naming the model class (e.g. [\"LlamaForCausalLM\"])"));
  }
  const std::string& name = archs->array()[0].string_value();
  std::string known;
  auto has = [&](std::string_view field) {
    const JsonValue* v = config.Find(field);
    return v != nullptr && !v->is_null();
  };
  for (absl::Span<const HfArch> family : {LlamaArchs(), QwenArchs(), GemmaArchs(), NemotronArchs()}) {
    for (const HfArch& a : family) {
      if (a.hf_class == name && (a.if_has.empty() || has(a.if_has)) && (a.unless_has.empty() || !has(a.unless_has))) {
        return &a;
      }
      if (known.find(a.hf_class) == std::string::npos) known += StrCat(known.empty() ? "" : ", ", a.hf_class);
    }
  }
  return absl::NotFoundError(StrCat(path, ": architecture \"", name, "\" has no GGUF mapping in bolt-pack (known: ",
                                    known, ")"));
}

std::optional<HfMapped> MapHfTensorName(const HfArch& arch, std::string_view name) {
  const auto [stem, suffix] = SplitSuffix(name);
  std::string pattern(stem);
  std::string bid;
  std::optional<uint32_t> expert;
  // The expert number first: it comes after the layer's, so replacing it
  // leaves the layer's offsets as they are.
  if (std::optional<LayerRef> x = FindNumber(stem, "experts.")) {
    expert = static_cast<uint32_t>(std::stoul(std::string(stem.substr(x->begin, x->end - x->begin))));
    pattern.replace(x->begin, x->end - x->begin, "{xid}");
  }
  if (std::optional<LayerRef> layer = FindNumber(pattern, "layers.")) {
    bid = pattern.substr(layer->begin, layer->end - layer->begin);
    pattern.replace(layer->begin, layer->end - layer->begin, "{bid}");
  }
  for (const HfTensorRule& rule : arch.tensors) {
    if (rule.hf != pattern) continue;
    if (rule.gguf.empty()) return HfMapped{"", &rule, expert};  // a tensor llama.cpp does without
    return HfMapped{StrCat(Replace(rule.gguf, bid), suffix), &rule, expert};
  }
  return std::nullopt;
}

std::optional<std::string> HfNameOfGguf(const HfArch& arch, std::string_view gguf_name,
                                        std::optional<uint32_t> expert) {
  const auto [stem, suffix] = SplitSuffix(gguf_name);
  std::string pattern(stem);
  std::string bid;
  if (std::optional<LayerRef> layer = FindNumber(pattern, "blk."); layer && layer->begin == 4) {
    bid = pattern.substr(layer->begin, layer->end - layer->begin);
    pattern.replace(layer->begin, layer->end - layer->begin, "{bid}");
  }
  for (const HfTensorRule& rule : arch.tensors) {
    if (rule.gguf.empty() || rule.gguf != pattern) continue;
    const bool per_expert = rule.hf.find("{xid}") != std::string_view::npos;
    if (per_expert != expert.has_value()) continue;
    std::string hf = Replace(rule.hf, bid);
    if (per_expert) hf = Replace(hf, StrCat(*expert), "{xid}");
    return StrCat(hf, suffix);
  }
  return std::nullopt;
}

}  // namespace boltpack::io
