// A small elastic model with view-tagged streams, for the budget-view tests
// (tests/budget_view_test.cc, tests/capi_test.cc): two layers whose FFN width
// is elastic ("width": 64 and 96, granularity 16), the up and down
// projections stored with bf16-spec (speculation stream: every view;
// verification stream: "full" only), the gate and the rest as plain bf16.
// Budgets: "half" (width 32 and 48) and "first" (layer 0 only, width 16).
// No importance scores, so stored order is source order and a budget keeps a
// plain prefix of the source tensors.
#ifndef BOLTPACK_TESTS_BUDGET_FIXTURE_H_
#define BOLTPACK_TESTS_BUDGET_FIXTURE_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace boltpack::testing {

struct BudgetFixture {
  std::string path;  // the elastic .bolt
  struct Source {
    std::vector<uint64_t> shape;
    std::vector<uint16_t> bf16;
  };
  std::map<std::string, Source> sources;  // by tensor name
};

inline constexpr uint64_t kBudgetD = 48;
inline constexpr uint64_t kBudgetWidth[2] = {64, 96};

// Prefix `kept` of a row-major array of `shape` with `esize`-byte elements,
// computed element by element.
inline std::vector<uint8_t> CutPrefix(const uint8_t* src, const std::vector<uint64_t>& shape,
                                      const std::vector<uint64_t>& kept, size_t esize) {
  uint64_t n = 1;
  for (uint64_t k : kept) n *= k;
  std::vector<uint8_t> out(n * esize);
  std::vector<uint64_t> idx(kept.size(), 0);
  for (uint64_t e = 0; e < n; ++e) {
    uint64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + idx[d];
    std::memcpy(out.data() + e * esize, src + off * esize, esize);
    for (size_t d = kept.size(); d-- > 0;) {
      if (++idx[d] < kept[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Writes a bf16 safetensors file of pseudo-random values, returns them.
inline std::map<std::string, BudgetFixture::Source> WriteBf16Safetensors(
    const std::string& path, const std::vector<std::pair<std::string, std::vector<uint64_t>>>& tensors) {
  std::map<std::string, BudgetFixture::Source> sources;
  std::string header = "{";
  std::vector<uint8_t> data;
  uint32_t h = 12345;
  for (const auto& [name, shape] : tensors) {
    BudgetFixture::Source s;
    s.shape = shape;
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    s.bf16.resize(n);
    for (auto& v : s.bf16) {
      h = h * 1664525u + 1013904223u;
      // Magnitudes over a few octaves, both signs.
      float x = std::ldexp(static_cast<float>((h >> 9) & 0xffff) / 65536.0f + 0.5f, static_cast<int>((h >> 4) % 9) - 6);
      if (h & 1) x = -x;
      uint32_t bits;
      std::memcpy(&bits, &x, 4);
      v = static_cast<uint16_t>(bits >> 16);
    }
    size_t begin = data.size();
    data.resize(begin + n * 2);
    std::memcpy(data.data() + begin, s.bf16.data(), n * 2);
    std::string dims;
    for (size_t d = 0; d < shape.size(); ++d) dims += (d ? "," : "") + std::to_string(shape[d]);
    header += (header.size() > 1 ? "," : "") + std::string("\"") + name + "\":{\"dtype\":\"BF16\",\"shape\":[" + dims +
              "],\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
    sources[name] = std::move(s);
  }
  header += "}";
  while (header.size() % 8) header += ' ';
  std::vector<uint8_t> file(8);
  uint64_t len = header.size();
  for (int i = 0; i < 8; ++i) file[i] = static_cast<uint8_t>(len >> (8 * i));
  file.insert(file.end(), header.begin(), header.end());
  file.insert(file.end(), data.begin(), data.end());
  WriteFileBytes(path, file);
  return sources;
}

// `extra` is added to the convert command line (e.g. {"--zstd", "5"}).
inline BudgetFixture WriteBudgetFixture(const std::string& dir, const std::vector<std::string>& extra = {}) {
  BudgetFixture f;
  std::vector<std::pair<std::string, std::vector<uint64_t>>> tensors;
  tensors.push_back({"token_embd.weight", {16, kBudgetD}});
  for (int l = 0; l < 2; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    uint64_t w = kBudgetWidth[l];
    tensors.push_back({p + "attn_norm.weight", {kBudgetD}});
    tensors.push_back({p + "ffn_up.weight", {w, kBudgetD}});
    tensors.push_back({p + "ffn_gate.weight", {w, kBudgetD}});
    tensors.push_back({p + "ffn_down.weight", {kBudgetD, w}});
  }
  f.sources = WriteBf16Safetensors(dir + "/m.safetensors", tensors);
  std::ofstream(dir + "/e.json") << R"({"version": 1, "layers": {"count": 2, "name_pattern": "blk.{L}."},
  "axes": {"width": {"scope": "layer", "granularity": 16}},
  "bindings": [
    {"tensor": "blk.{L}.ffn_up.weight", "dims": ["width", "-"]},
    {"tensor": "blk.{L}.ffn_gate.weight", "dims": ["width", "-"]},
    {"tensor": "blk.{L}.ffn_down.weight", "dims": ["-", "width"]}],
  "budgets": [
    {"name": "half", "per_layer": {"width": [32, 48]}},
    {"name": "first", "layer_keep": [1, 0], "per_layer": {"width": [16, null]}}]})";
  f.path = dir + "/e.bolt";
  std::vector<std::string> args = {"convert", dir + "/m.safetensors", "-o", f.path, "--elastic", dir + "/e.json",
                                   "--codec", "*ffn_up*=bf16-spec", "--codec", "*ffn_down*=bf16-spec",
                                   "--codec", "*=bf16"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto c = RunCli(args);
  if (c.exit_code != 0) f.path = "convert failed: " + c.output;
  return f;
}

}  // namespace boltpack::testing

#endif  // BOLTPACK_TESTS_BUDGET_FIXTURE_H_
