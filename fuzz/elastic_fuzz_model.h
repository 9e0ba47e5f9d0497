// The fixed model the elastic fuzz targets resolve manifests against: two
// layers of an MoE (experts x width x 64) with q8_0 down projections, an
// attention tensor with 16-row heads and an unbound tensor, plus the
// checks every accepted manifest must pass: every budget's plan keeps
// prefixes inside the tensors and on q8_0 block boundaries, and the slice's
// own manifest is valid for the sliced tensors.
#ifndef BOLTPACK_FUZZ_ELASTIC_FUZZ_MODEL_H_
#define BOLTPACK_FUZZ_ELASTIC_FUZZ_MODEL_H_

#include <string>
#include <vector>

#include "boltpack/elastic.h"
#include "boltpack/tensor_info.h"
#include "format/elastic_plan.h"
#include "format/elastic_validate.h"

namespace boltpack::fuzz {

inline std::vector<TensorInfo> ElasticFuzzTensors() {
  auto make = [](std::string name, std::vector<uint64_t> shape, std::string codec) {
    TensorInfo t;
    t.name = std::move(name);
    t.shape = std::move(shape);
    t.dtype = DType::kF32;
    t.codec_id = std::move(codec);
    return t;
  };
  return {make("tok.weight", {8, 64}, "f32"),
          make("blk.0.up.weight", {4, 64, 64}, "f32"),
          make("blk.0.down.weight", {4, 64, 64}, "q8_0"),
          make("blk.0.q.weight", {64, 64}, "f32"),
          make("blk.1.up.weight", {6, 96, 64}, "f32"),
          make("blk.1.down.weight", {6, 64, 96}, "q8_0"),
          make("blk.1.q.weight", {32, 64}, "f32"),
          make("blk.1.norm.weight", {64}, "f32")};
}

inline std::vector<format::ElasticTensorRef> RefsOf(const std::vector<TensorInfo>& tensors) {
  std::vector<format::ElasticTensorRef> refs;
  for (const auto& t : tensors) refs.push_back({t.name, t.shape, t.codec_id, t.dtype, &t.codec_params});
  return refs;
}

// Traps when an accepted manifest leads to an inconsistent slice.
inline void CheckEverySlice(const ElasticManifest& m, const std::vector<TensorInfo>& tensors) {
  for (const auto& b : m.budgets) {
    auto plan = format::PlanSlice(m, tensors, {}, b);
    if (!plan.ok()) __builtin_trap();
    std::vector<TensorInfo> out;
    for (const auto& p : plan->tensors) {
      const TensorInfo& t = tensors[p.source];
      if (p.kept.size() != t.shape.size()) __builtin_trap();
      for (size_t d = 0; d < p.kept.size(); ++d) {
        if (p.kept[d] > t.shape[d] || (p.kept[d] == 0 && t.shape[d] != 0)) __builtin_trap();
      }
      if (t.codec_id == "q8_0" && p.kept.back() != t.shape.back() && p.kept.back() % 32 != 0) __builtin_trap();
      // Kept runs (format 1.2: per group, per segment): ascending, disjoint,
      // inside the dimension, adding up to the kept size; on q8_0 block
      // boundaries along a cut innermost dimension.
      if (p.runs.size() != t.shape.size()) __builtin_trap();
      for (size_t d = 0; d < p.runs.size(); ++d) {
        uint64_t end = 0, sum = 0;
        bool cut = p.kept[d] != t.shape[d];
        for (const auto& r : p.runs[d]) {
          if (r.start < end || r.length == 0 || r.length > t.shape[d] || r.start > t.shape[d] - r.length) __builtin_trap();
          if (t.codec_id == "q8_0" && cut && d + 1 == t.shape.size() && (r.start % 32 != 0 || r.length % 32 != 0)) {
            __builtin_trap();
          }
          end = r.start + r.length;
          sum += r.length;
        }
        if (sum != p.kept[d]) __builtin_trap();
      }
      TensorInfo o = t;
      o.name = p.name;
      o.shape = p.kept;
      for (const auto& x : out) {
        if (x.name == o.name) __builtin_trap();
      }
      out.push_back(std::move(o));
    }
    if (!format::ValidateElastic(plan->elastic, RefsOf(out), "slice").ok()) __builtin_trap();
  }
}

}  // namespace boltpack::fuzz

#endif  // BOLTPACK_FUZZ_ELASTIC_FUZZ_MODEL_H_
