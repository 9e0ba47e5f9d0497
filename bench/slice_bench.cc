// Generator for the `slice` speed measurement (bench/slice_vs_cp.sh): writes
// a synthetic elastic MoE .bolt big enough for I/O to dominate, through the
// library Writer, so the script can time `bolt-pack slice` per budget and
// output format against `cp`/`cat` of the same number of bytes.
//
//   slice_bench OUT.bolt [--codec q8_0|f32] [--layers 8] [--experts 32]
//                        [--ffn 512] [--hidden 1024] [--no-line-prefixes]
//
// Per layer: ffn_up_exps [E, F, D] (an experts cut keeps one contiguous
// prefix; a width cut keeps one run per expert) and ffn_down_exps [E, D, F]
// (a width cut keeps one run of blocks per row: the strided case), both in
// --codec; a router ffn_gate_inp [E, D] and attn_norm [D] in f32. Budgets:
//   experts50  half the experts of every layer
//   width50    half the MoE width of every layer
//   drop1      every layer but the last, whole (tensors copied as stored)
//   small      drop1 with half the experts and half the width
// The file has line-prefix checksums (as `convert --elastic` writes it)
// unless --no-line-prefixes, which shows what a width cut costs without.
// Not a Google Benchmark: the measured program is the bolt-pack binary.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "boltpack/elastic.h"
#include "boltpack/writer.h"
#include "common/parallel_for.h"

namespace boltpack {
namespace {

struct Config {
  std::string out;
  std::string codec = "q8_0";
  uint64_t layers = 8, experts = 32, ffn = 512, hidden = 1024;
  bool line_prefixes = true;  // as `convert --elastic` writes
};

// Values in [-1, 1) from a per-tensor xorshift stream: cheap, and varied
// enough that q8_0 blocks are not all alike.
std::vector<float> Values(uint64_t n, uint64_t seed) {
  std::vector<float> v(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& f : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    f = static_cast<float>(static_cast<int64_t>(x >> 40) - (int64_t{1} << 23)) / static_cast<float>(1 << 23);
  }
  return v;
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "slice_bench: %s\n", std::string(s.message()).c_str());
  return 1;
}

int Generate(const Config& c) {
  WriterOptions options;
  options.writer_name = "slice_bench";
  options.threads = HardwareThreads();
  options.line_prefixes = c.line_prefixes;
  auto writer = Writer::Create(c.out, options);
  if (!writer.ok()) return Fail(writer.status());
  Writer& w = **writer;
  auto u32 = [](uint64_t v) { return MetaValue::Uint(ValueType::kUint32, v); };
  std::vector<std::pair<std::string, MetaValue>> meta = {
      {"general.architecture", MetaValue::String("benchmoe")},
      {"benchmoe.block_count", u32(c.layers)},
      {"benchmoe.embedding_length", u32(c.hidden)},
      {"benchmoe.expert_count", u32(c.experts)},
      {"benchmoe.expert_used_count", u32(4)},
      {"benchmoe.expert_feed_forward_length", u32(c.ffn)},
  };
  for (auto& [k, v] : meta) {
    if (auto s = w.AddMetadata(k, v); !s.ok()) return Fail(s);
  }
  ElasticManifest m;
  m.layer_count = static_cast<uint32_t>(c.layers);
  m.layer_pattern = "blk.{L}.";
  std::vector<uint64_t> experts(c.layers, c.experts), ffn(c.layers, c.ffn), top_k(c.layers, 4);
  m.axes.push_back({"experts", ElasticScope::kLayer, 1, 1, experts, "", "expert_count"});
  m.axes.push_back({"moe_ffn", ElasticScope::kLayer, 32, 1, ffn, "", "expert_feed_forward_length"});
  m.axes.push_back({"top_k", ElasticScope::kLayer, 1, 1, top_k, "experts", "expert_used_count"});
  m.bindings.push_back({"blk.{L}.ffn_gate_inp.weight", {"experts", "-"}});
  m.bindings.push_back({"blk.{L}.ffn_up_exps.weight", {"experts", "moe_ffn", "-"}});
  m.bindings.push_back({"blk.{L}.ffn_down_exps.weight", {"experts", "-", "moe_ffn"}});
  std::vector<bool> all(c.layers, true), drop1 = all;
  drop1.back() = false;
  auto per_layer = [&](uint64_t v, const std::vector<bool>& keep) {
    std::vector<uint64_t> out(c.layers);
    for (uint64_t l = 0; l < c.layers; ++l) out[l] = keep[l] ? v : 0;
    return out;
  };
  uint64_t half_ffn = std::max<uint64_t>(32, c.ffn / 2 / 32 * 32);
  m.budgets.push_back({"experts50", all, {{"experts", per_layer(c.experts / 2, all)}}, ""});
  m.budgets.push_back({"width50", all, {{"moe_ffn", per_layer(half_ffn, all)}}, ""});
  m.budgets.push_back({"drop1", drop1, {}, ""});
  m.budgets.push_back({"small", drop1,
                       {{"experts", per_layer(c.experts / 2, drop1)}, {"moe_ffn", per_layer(half_ffn, drop1)},
                        {"top_k", per_layer(4, drop1)}},
                       ""});
  // Axes a budget does not list keep their parent size on kept layers, so
  // drop1 needs the dropped layer's zeros spelled out for every axis.
  for (auto& b : m.budgets) {
    for (const auto& a : m.axes) {
      bool listed = false;
      for (const auto& s : b.sizes) listed |= s.axis == a.name;
      if (!listed) {
        std::vector<uint64_t> counts(c.layers);
        for (uint64_t l = 0; l < c.layers; ++l) counts[l] = b.layer_keep[l] ? a.parent[l] : 0;
        b.sizes.push_back({a.name, counts});
      }
    }
  }
  // Before the tensors: the writer plans line-prefix checksums from it.
  if (auto s = w.SetElastic(m); !s.ok()) return Fail(s);
  ExecOptions exec;
  exec.threads = options.threads;
  uint64_t seed = 1;
  auto add = [&](const std::string& name, std::vector<uint64_t> shape, const std::string& codec) -> absl::Status {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    std::vector<float> v = Values(n, seed++);
    TensorSource src{name, DType::kF32, shape,
                     absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4)};
    auto enc = EncodeTensor(codec, src, {}, exec);
    if (!enc.ok()) return enc.status();
    return w.AddTensor(name, shape, DType::kF32, codec, std::move(*enc));
  };
  for (uint64_t l = 0; l < c.layers; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    for (auto s : {add(p + "attn_norm.weight", {c.hidden}, "f32"),
                   add(p + "ffn_gate_inp.weight", {c.experts, c.hidden}, "f32"),
                   add(p + "ffn_up_exps.weight", {c.experts, c.ffn, c.hidden}, c.codec),
                   add(p + "ffn_down_exps.weight", {c.experts, c.hidden, c.ffn}, c.codec)}) {
      if (!s.ok()) return Fail(s);
    }
    std::fprintf(stderr, "\rslice_bench: layer %llu/%llu", static_cast<unsigned long long>(l + 1),
                 static_cast<unsigned long long>(c.layers));
  }
  std::fprintf(stderr, "\n");
  if (auto s = add("output_norm.weight", {c.hidden}, "f32"); !s.ok()) return Fail(s);

  if (auto s = w.Finish(); !s.ok()) return Fail(s);
  std::printf("%s\n", c.out.c_str());
  return 0;
}

}  // namespace
}  // namespace boltpack

int main(int argc, char** argv) {
  boltpack::Config c;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "slice_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--codec") c.codec = value();
    else if (a == "--layers") c.layers = std::stoull(value());
    else if (a == "--experts") c.experts = std::stoull(value());
    else if (a == "--ffn") c.ffn = std::stoull(value());
    else if (a == "--hidden") c.hidden = std::stoull(value());
    else if (a == "--no-line-prefixes") c.line_prefixes = false;
    else if (!a.empty() && a[0] != '-' && c.out.empty()) c.out = a;
    else {
      std::fprintf(stderr, "usage: slice_bench OUT.bolt [--codec q8_0|f32] [--layers N] [--experts N] [--ffn N] "
                           "[--hidden N] [--no-line-prefixes]\n");
      return 2;
    }
  }
  if (c.out.empty() || c.layers < 2 || c.experts < 2 || c.ffn < 64 || c.ffn % 32 != 0 || c.hidden % 32 != 0) {
    std::fprintf(stderr, "slice_bench: give OUT.bolt; layers and experts >= 2, ffn >= 64 and ffn, hidden multiples "
                         "of 32\n");
    return 2;
  }
  return boltpack::Generate(c);
}
