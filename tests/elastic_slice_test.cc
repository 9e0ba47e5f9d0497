// Elastic MoE end to end: a 3-layer model with per-layer experts, MoE width
// and heads (and a top-K bounded by experts) is converted with importance
// scores, then every budget is sliced to .bolt, .gguf and .safetensors and
// checked against a reference computed here, independently of the library:
// permute the f32 source by descending score (ties: lower index first) and
// keep the budget's prefix. Once with f32 experts (exact equality) and once
// with q8_0 experts (the slice equals decode-then-cut of the parent, and its
// blocks are the parent's blocks byte for byte).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>

#include "boltpack/budget_view.h"
#include "boltpack/reader.h"
#include "codecs/nvfp4/nvfp4_codec.h"
#include "common/str_cat.h"
#include "gtest/gtest.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "tests/manifest_rewrite.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::RunCli;

struct LayerDims {
  uint64_t experts, moe_ffn, heads;
};
constexpr LayerDims kLayers[3] = {{4, 64, 4}, {6, 96, 4}, {4, 64, 2}};
constexpr uint64_t kD = 64, kHeadDim = 16, kVocab = 32;

struct Bound {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<std::string> dims;  // axis or "-"
  int layer = -1;
};

std::vector<Bound> ModelTensors() {
  std::vector<Bound> t;
  t.push_back({"token_embd.weight", {kVocab, kD}, {"-", "-"}, -1});
  for (int l = 0; l < 3; ++l) {
    const auto& d = kLayers[l];
    std::string p = "blk." + std::to_string(l) + ".";
    t.push_back({p + "attn_norm.weight", {kD}, {"-"}, l});
    t.push_back({p + "attn_q.weight", {d.heads * kHeadDim, kD}, {"heads", "-"}, l});
    t.push_back({p + "attn_output.weight", {kD, d.heads * kHeadDim}, {"-", "heads"}, l});
    t.push_back({p + "ffn_gate_inp.weight", {d.experts, kD}, {"experts", "-"}, l});
    t.push_back({p + "ffn_up_exps.weight", {d.experts, d.moe_ffn, kD}, {"experts", "moe_ffn", "-"}, l});
    t.push_back({p + "ffn_down_exps.weight", {d.experts, kD, d.moe_ffn}, {"experts", "-", "moe_ffn"}, l});
  }
  return t;
}

uint64_t Count(const std::vector<uint64_t>& s) {
  uint64_t n = 1;
  for (uint64_t d : s) n *= d;
  return n;
}

std::vector<float> Values(const std::string& name, uint64_t n) {
  uint32_t h = 2166136261u;
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  std::vector<float> v(n);
  for (auto& x : v) {
    h = h * 1664525u + 1013904223u;
    x = static_cast<float>(static_cast<int32_t>(h >> 8) % 20000) / 10000.0f;
  }
  return v;
}

uint64_t Units(const std::string& axis, int layer) {
  const auto& d = kLayers[layer];
  return axis == "experts" ? d.experts : axis == "moe_ffn" ? d.moe_ffn : d.heads;
}
uint64_t UnitElems(const std::string& axis) { return axis == "heads" ? kHeadDim : 1; }

// Scores with ties (small integers), so tie-breaking is exercised.
std::vector<double> Scores(const std::string& axis, int layer) {
  uint64_t n = Units(axis, layer);
  std::vector<double> s(n);
  for (uint64_t i = 0; i < n; ++i) s[i] = static_cast<double>((i * 7 + layer * 3 + axis.size()) % 5);
  return s;
}

// The reference order, written independently of the library.
std::vector<uint64_t> Order(const std::string& axis, int layer) {
  auto s = Scores(axis, layer);
  std::vector<uint64_t> o(s.size());
  for (uint64_t i = 0; i < o.size(); ++i) o[i] = i;
  // Insertion sort: descending score, lower index first among equals.
  for (size_t i = 1; i < o.size(); ++i) {
    for (size_t j = i; j > 0 && s[o[j]] > s[o[j - 1]]; --j) std::swap(o[j], o[j - 1]);
  }
  return o;
}

struct Budget {
  std::string name;
  std::vector<int> keep;
  std::map<std::string, std::vector<uint64_t>> per_layer;  // 0 for dropped
};
const Budget kBig{"big", {1, 1, 1}, {{"experts", {3, 4, 4}}, {"moe_ffn", {64, 64, 32}}, {"heads", {4, 2, 2}}, {"top_k", {2, 2, 2}}}};
const Budget kSmall{"small", {1, 0, 1}, {{"experts", {2, 0, 2}}, {"moe_ffn", {32, 0, 32}}, {"heads", {2, 0, 1}}, {"top_k", {1, 0, 1}}}};

// Row-major gather: out[i...] = in[map0[i0], map1[i1], ...].
std::vector<float> Gather(const std::vector<float>& in, const std::vector<uint64_t>& shape,
                          const std::vector<std::vector<uint64_t>>& maps) {
  std::vector<uint64_t> out_shape;
  for (const auto& m : maps) out_shape.push_back(m.size());
  std::vector<float> out(Count(out_shape));
  std::vector<uint64_t> idx(shape.size(), 0);
  for (uint64_t o = 0; o < out.size(); ++o) {
    uint64_t src = 0;
    for (size_t d = 0; d < shape.size(); ++d) src = src * shape[d] + maps[d][idx[d]];
    out[o] = in[src];
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Maps of tensor `t` under importance order, keeping `budget`'s prefix
// (nullptr: the whole permuted tensor).
std::vector<std::vector<uint64_t>> RefMaps(const Bound& t, const Budget* budget) {
  std::vector<std::vector<uint64_t>> maps;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    std::vector<uint64_t> m;
    if (t.dims[d] == "-") {
      for (uint64_t j = 0; j < t.shape[d]; ++j) m.push_back(j);
    } else {
      auto order = Order(t.dims[d], t.layer);
      uint64_t u = UnitElems(t.dims[d]);
      uint64_t keep = budget ? budget->per_layer.at(t.dims[d])[t.layer] : order.size();
      for (uint64_t j = 0; j < keep * u; ++j) m.push_back(order[j / u] * u + j % u);
    }
    maps.push_back(std::move(m));
  }
  return maps;
}

std::string JsonArray(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(static_cast<int>(v[i]));
  return s + "]";
}

std::string ElasticJson() {
  std::string j = R"({"version": 1, "layers": {"count": 3, "name_pattern": "blk.{L}."},
  "axes": {"experts": {"scope": "layer"}, "moe_ffn": {"scope": "layer", "granularity": 32},
           "heads": {"scope": "layer", "unit_elems": 16},
           "top_k": {"scope": "layer", "parent": 2, "at_most": "experts"}},
  "bindings": [
    {"tensor": "blk.{L}.attn_q.weight", "dims": ["heads", "-"]},
    {"tensor": "blk.{L}.attn_output.weight", "dims": ["-", "heads"]},
    {"tensor": "blk.{L}.ffn_gate_inp.weight", "dims": ["experts", "-"]},
    {"tensor": "blk.{L}.ffn_up_exps.weight", "dims": ["experts", "moe_ffn", "-"]},
    {"tensor": "blk.{L}.ffn_down_exps.weight", "dims": ["experts", "-", "moe_ffn"]}],
  "importance": {)";
  bool first = true;
  for (std::string axis : {"experts", "moe_ffn", "heads"}) {
    j += std::string(first ? "" : ",") + "\"" + axis + "\": {";
    first = false;
    for (int l = 0; l < 3; ++l) j += (l ? "," : "") + std::string("\"") + std::to_string(l) + "\": " + JsonArray(Scores(axis, l));
    j += "}";
  }
  j += R"(},
  "budgets": [
    {"name": "big", "per_layer": {"experts": [3, 4, 4], "moe_ffn": [64, 64, 32], "heads": [4, 2, 2], "top_k": [2, 2, 2]}},
    {"name": "small", "layer_keep": [1, 0, 1], "nested_in": "big",
     "per_layer": {"experts": [2, null, 2], "moe_ffn": [32, null, 32], "heads": [2, null, 1], "top_k": [1, null, 1]}}]})";
  return j;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// The parent model as a GGUF (F32 tensors, llama-style per-layer metadata).
void WriteModel(const std::string& path) {
  Metadata kv;
  kv.emplace_back("general.architecture", MetaValue::String("testmoe"));
  kv.emplace_back("testmoe.block_count", MetaValue::Uint(ValueType::kUint32, 3));
  kv.emplace_back("testmoe.expert_count", MetaValue::Uint(ValueType::kUint32, 6));
  kv.emplace_back("testmoe.expert_used_count", MetaValue::Uint(ValueType::kUint32, 2));
  std::vector<MetaValue> ffn, heads;
  for (const auto& l : kLayers) {
    ffn.push_back(MetaValue::Int(ValueType::kInt32, static_cast<int64_t>(l.moe_ffn)));
    heads.push_back(MetaValue::Uint(ValueType::kUint32, l.heads));
  }
  kv.emplace_back("testmoe.expert_feed_forward_length", MetaValue::Array(ValueType::kInt32, ffn));
  kv.emplace_back("testmoe.attention.head_count", MetaValue::Array(ValueType::kUint32, heads));
  std::vector<io::GgufTensorDecl> decls;
  for (const auto& t : ModelTensors()) decls.push_back({t.name, {t.shape.rbegin(), t.shape.rend()}, 0});
  auto w = io::GgufWriter::Create(path, kv, decls);
  ASSERT_TRUE(w.ok()) << w.status();
  for (const auto& t : ModelTensors()) {
    auto v = Values(t.name, Count(t.shape));
    ASSERT_TRUE((*w)->WriteNext({reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4}).ok());
  }
  ASSERT_TRUE((*w)->Finish().ok());
}

std::vector<float> DecodeF32(const Reader& r, const std::string& name) {
  auto t = r.FindTensor(name);
  EXPECT_TRUE(t.has_value()) << name;
  if (!t) return {};
  std::vector<float> out(r.tensors()[*t].element_count());
  auto st = r.Decode(*t, OutputType::kF32, {reinterpret_cast<uint8_t*>(out.data()), out.size() * 4});
  EXPECT_TRUE(st.ok()) << st;
  return out;
}

std::string Renamed(const Bound& t, const Budget& b) {
  if (t.layer < 0) return t.name;
  int n = 0;
  for (int l = 0; l < t.layer; ++l) n += b.keep[l];
  return "blk." + std::to_string(n) + t.name.substr(t.name.find('.', 4));
}

const MetaValue* Find(const Metadata& m, const std::string& key) {
  for (const auto& [k, v] : m) {
    if (k == key) return &v;
  }
  return nullptr;
}

class ElasticMoe : public ::testing::TestWithParam<bool> {};  // param: q8_0 experts

TEST_P(ElasticMoe, EveryBudgetMatchesTheReference) {
  bool q8 = GetParam();
  std::string dir = MakeTempDir();
  WriteModel(dir + "/m.gguf");
  WriteText(dir + "/e.json", ElasticJson());
  std::vector<std::string> args = {"convert", dir + "/m.gguf", "-o", dir + "/e.bolt", "--elastic", dir + "/e.json"};
  if (q8) args.insert(args.end(), {"--codec", "*_exps.weight=q8_0"});
  auto c = RunCli(args);
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto parent = Reader::Open(dir + "/e.bolt");
  ASSERT_TRUE(parent.ok()) << parent.status();
  ASSERT_NE((*parent)->elastic(), nullptr);
  EXPECT_EQ((*parent)->elastic()->budgets.size(), 2u);

  // The parent stores every tensor permuted by importance.
  for (const auto& t : ModelTensors()) {
    auto src = Values(t.name, Count(t.shape));
    auto want = t.layer < 0 ? src : Gather(src, t.shape, RefMaps(t, nullptr));
    bool quantized = q8 && t.name.find("_exps") != std::string::npos;
    auto got = DecodeF32(**parent, t.name);
    if (!quantized) {
      EXPECT_EQ(got, want) << t.name;
    } else {
      // q8_0 of the permuted elements: within one quantization step.
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 2.0 / 127) << t.name << " " << i;
    }
  }

  for (const Budget* b : {&kBig, &kSmall}) {
    SCOPED_TRACE(b->name);
    std::string out = dir + "/" + b->name;
    for (const char* ext : {".bolt", ".gguf", ".safetensors"}) {
      auto s = RunCli({"slice", dir + "/e.bolt", "--budget", b->name, "-o", out + ext});
      ASSERT_EQ(s.exit_code, 0) << s.output;
    }
    auto sliced = Reader::Open(out + ".bolt");
    ASSERT_TRUE(sliced.ok()) << sliced.status();
    auto gguf = io::GgufModel::Open(out + ".gguf");
    ASSERT_TRUE(gguf.ok()) << gguf.status();
    auto st = io::SafetensorsModel::Open(out + ".safetensors");
    ASSERT_TRUE(st.ok()) << st.status();
    size_t expected_tensors = 0;
    for (const auto& t : ModelTensors()) {
      if (t.layer >= 0 && !b->keep[t.layer]) continue;
      ++expected_tensors;
      std::string name = Renamed(t, *b);
      auto maps = RefMaps(t, t.layer < 0 ? nullptr : b);
      std::vector<float> want;
      bool quantized = q8 && t.name.find("_exps") != std::string::npos;
      if (t.layer < 0) {
        want = Values(t.name, Count(t.shape));
      } else if (!quantized) {
        want = Gather(Values(t.name, Count(t.shape)), t.shape, maps);
      } else {
        // Decode-then-cut of the parent: the parent is already permuted, so
        // the cut is the plain prefix.
        std::vector<std::vector<uint64_t>> prefix;
        for (const auto& m : maps) {
          std::vector<uint64_t> p(m.size());
          std::iota(p.begin(), p.end(), 0);
          prefix.push_back(p);
        }
        want = Gather(DecodeF32(**parent, t.name), t.shape, prefix);
      }
      auto got = DecodeF32(**sliced, name);
      EXPECT_EQ(got, want) << name;
      auto ti = (*sliced)->FindTensor(name);
      ASSERT_TRUE(ti.has_value());
      std::vector<uint64_t> shape;
      for (const auto& m : maps) shape.push_back(m.size());
      EXPECT_EQ((*sliced)->tensors()[*ti].shape, shape) << name;
      EXPECT_EQ((*sliced)->tensors()[*ti].codec_id, quantized ? "q8_0" : "f32") << name;
      // GGUF: the same stored bytes (q8_0 blocks copied, not re-quantized).
      auto gi = (*gguf)->FindTensor(name);
      ASSERT_TRUE(gi.has_value()) << name;
      auto gbytes = (*gguf)->TensorBytes(*gi);
      auto stored = (*sliced)->StoredStream(*ti, 0);
      ASSERT_TRUE(stored.ok());
      EXPECT_TRUE(std::equal(gbytes.begin(), gbytes.end(), stored->begin(), stored->end())) << name;
      EXPECT_EQ((*gguf)->tensors()[*gi].type->name, quantized ? "Q8_0" : "F32") << name;
      // safetensors: the decoded f32 elements.
      size_t si = 0;
      while (si < (*st)->tensors().size() && (*st)->tensors()[si].name != name) ++si;
      ASSERT_LT(si, (*st)->tensors().size()) << name;
      auto sb = (*st)->TensorBytes(si);
      ASSERT_EQ(sb.size(), want.size() * 4) << name;
      EXPECT_EQ(std::memcmp(sb.data(), got.data(), sb.size()), 0) << name;
    }
    EXPECT_EQ((*sliced)->tensors().size(), expected_tensors);
    EXPECT_EQ((*gguf)->tensors().size(), expected_tensors);

    // Per-layer metadata rewritten for the kept layers.
    const Metadata& md = (*gguf)->metadata();
    uint64_t kept = std::accumulate(b->keep.begin(), b->keep.end(), 0);
    ASSERT_NE(Find(md, "testmoe.block_count"), nullptr);
    EXPECT_EQ(Find(md, "testmoe.block_count")->u, kept);
    std::vector<uint64_t> ffn, heads, experts, topk;
    for (int l = 0; l < 3; ++l) {
      if (!b->keep[l]) continue;
      ffn.push_back(b->per_layer.at("moe_ffn")[l]);
      heads.push_back(b->per_layer.at("heads")[l]);
      experts.push_back(b->per_layer.at("experts")[l]);
      topk.push_back(b->per_layer.at("top_k")[l]);
    }
    auto ints = [](const MetaValue* v) {
      std::vector<uint64_t> r;
      if (v == nullptr) return r;
      if (v->type != ValueType::kArray) return std::vector<uint64_t>{IsSignedInt(v->type) ? static_cast<uint64_t>(v->i) : v->u};
      for (size_t k = 0; k < v->array_size(); ++k) r.push_back(v->uint_element(k));
      return r;
    };
    const MetaValue* ffn_md = Find(md, "testmoe.expert_feed_forward_length");
    ASSERT_NE(ffn_md, nullptr);
    EXPECT_EQ(ffn_md->type, ValueType::kArray);
    EXPECT_EQ(ffn_md->element_type, ValueType::kInt32);
    EXPECT_EQ(ints(ffn_md), ffn);
    EXPECT_EQ(ints(Find(md, "testmoe.attention.head_count")), heads);
    // Scalars stay scalars where every kept layer agrees, else per-layer arrays.
    auto expect_scalar_or_array = [&](const std::string& key, const std::vector<uint64_t>& v) {
      const MetaValue* m = Find(md, key);
      ASSERT_NE(m, nullptr) << key;
      bool uniform = std::all_of(v.begin(), v.end(), [&](uint64_t x) { return x == v[0]; });
      EXPECT_EQ(m->type == ValueType::kArray, !uniform) << key;
      EXPECT_EQ(uniform ? std::vector<uint64_t>{v[0]} : v, ints(m)) << key;
    };
    expect_scalar_or_array("testmoe.expert_count", experts);
    expect_scalar_or_array("testmoe.expert_used_count", topk);
    // The .bolt keeps the same metadata.
    EXPECT_EQ(ints(Find((*sliced)->metadata(), "testmoe.expert_feed_forward_length")), ffn);
  }

  // "small" is nested in "big": slicing big keeps small (re-expressed), and
  // small cut from the big slice equals small cut from the parent.
  auto big = Reader::Open(dir + "/big.bolt");
  ASSERT_TRUE(big.ok());
  ASSERT_NE((*big)->elastic(), nullptr);
  ASSERT_EQ((*big)->elastic()->budgets.size(), 1u);
  EXPECT_EQ((*big)->elastic()->budgets[0].name, "small");
  auto again = RunCli({"slice", dir + "/big.bolt", "--budget", "small", "-o", dir + "/small2.gguf"});
  ASSERT_EQ(again.exit_code, 0) << again.output;
  auto a = io::GgufModel::Open(dir + "/small.gguf");
  auto b2 = io::GgufModel::Open(dir + "/small2.gguf");
  ASSERT_TRUE(a.ok() && b2.ok());
  ASSERT_EQ((*a)->tensors().size(), (*b2)->tensors().size());
  for (size_t i = 0; i < (*a)->tensors().size(); ++i) {
    EXPECT_EQ((*a)->tensors()[i].name, (*b2)->tensors()[i].name);
    auto x = (*a)->TensorBytes(i);
    auto y = (*b2)->TensorBytes(i);
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << (*a)->tensors()[i].name;
  }
  // Equal metadata, except that expert_count became a per-layer array in the
  // "big" slice ([3, 4, 4]) and so stays one ([2, 2]) where the parent's
  // scalar collapses to 2.
  ASSERT_EQ((*a)->metadata().size(), (*b2)->metadata().size());
  for (size_t i = 0; i < (*a)->metadata().size(); ++i) {
    const auto& [ka, va] = (*a)->metadata()[i];
    const auto& [kb, vb] = (*b2)->metadata()[i];
    EXPECT_EQ(ka, kb);
    if (ka == "testmoe.expert_count") {
      EXPECT_EQ(va.u, 2u);
      ASSERT_EQ(vb.array_size(), 2u);
      EXPECT_EQ(vb.uint_element(0), 2u);
      EXPECT_EQ(vb.uint_element(1), 2u);
    } else {
      EXPECT_TRUE(va == vb) << ka;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(F32AndQ8, ElasticMoe, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "q8_0" : "f32"; });

// dir/m.gguf, dir/e.json and dir/e.bolt: the model converted with its
// elastic manifest and q8_0 experts. Use in ASSERT_NO_FATAL_FAILURE.
void WriteQ8Elastic(const std::string& dir) {
  WriteModel(dir + "/m.gguf");
  WriteText(dir + "/e.json", ElasticJson());
  auto c = RunCli({"convert", dir + "/m.gguf", "-o", dir + "/e.bolt", "--elastic", dir + "/e.json", "--codec",
                   "*_exps.weight=q8_0"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
}

TEST(ElasticCli, ListBudgetsAndAdHocKeep) {
  std::string dir = MakeTempDir();
  ASSERT_NO_FATAL_FAILURE(WriteQ8Elastic(dir));
  auto l = RunCli({"slice", dir + "/e.bolt", "--list-budgets"});
  ASSERT_EQ(l.exit_code, 0) << l.output;
  EXPECT_NE(l.output.find("small: layers 2/3"), std::string::npos) << l.output;
  EXPECT_NE(l.output.find("nested in big"), std::string::npos) << l.output;
  // Half the MoE width: 64 -> 32, 96 -> 32 (rounded down to granularity 32).
  auto k = RunCli({"slice", dir + "/e.bolt", "--keep", "moe_ffn=0.5", "-o", dir + "/half.bolt"});
  ASSERT_EQ(k.exit_code, 0) << k.output;
  auto r = Reader::Open(dir + "/half.bolt");
  ASSERT_TRUE(r.ok());
  auto t = (*r)->FindTensor("blk.1.ffn_up_exps.weight");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ((*r)->tensors()[*t].shape, (std::vector<uint64_t>{6, 32, kD}));
  // 0.3 x 64 = 19 rounds down to 0 granules of 32, so one granule is kept.
  auto coarse = RunCli({"slice", dir + "/e.bolt", "--keep", "moe_ffn=0.3", "-o", dir + "/coarse.bolt"});
  EXPECT_EQ(coarse.exit_code, 0) << coarse.output;
  // More units than a layer has: refused, naming the axis.
  auto odd = RunCli({"slice", dir + "/e.bolt", "--keep", "heads=3", "-o", dir + "/odd.bolt"});
  EXPECT_NE(odd.exit_code, 0);
  EXPECT_NE(odd.output.find("heads"), std::string::npos) << odd.output;
  auto unknown = RunCli({"slice", dir + "/e.bolt", "--keep", "ffn=0.5", "-o", dir + "/u.bolt"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("no axis \"ffn\""), std::string::npos) << unknown.output;
  auto nob = RunCli({"slice", dir + "/e.bolt", "--budget", "nope", "-o", dir + "/n.bolt"});
  EXPECT_EQ(nob.exit_code, 1);
  EXPECT_NE(nob.output.find("budgets: big, small"), std::string::npos) << nob.output;
}

// slice --split-max-tensors / --split-max-size to safetensors: Hugging
// Face's shards plus index, the same tensors as the one-file slice.
TEST(ElasticCli, SliceSplitsSafetensorsLikeHuggingFace) {
  std::string dir = MakeTempDir();
  WriteModel(dir + "/m.gguf");
  WriteText(dir + "/e.json", ElasticJson());
  ASSERT_EQ(RunCli({"convert", dir + "/m.gguf", "-o", dir + "/e.bolt", "--elastic", dir + "/e.json"}).exit_code, 0);
  ASSERT_EQ(RunCli({"slice", dir + "/e.bolt", "--budget", "small", "-o", dir + "/one.safetensors"}).exit_code, 0);
  std::filesystem::create_directory(dir + "/split");
  auto s = RunCli({"slice", dir + "/e.bolt", "--budget", "small", "-o", dir + "/split/model.safetensors",
                   "--split-max-tensors", "4", "--split-max-size", "20K"});
  ASSERT_EQ(s.exit_code, 0) << s.output;
  auto one = io::SafetensorsModel::Open(dir + "/one.safetensors");
  auto split = io::SafetensorsModel::Open(dir + "/split/model.safetensors.index.json");
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_GE((*split)->files().size(), ((*one)->tensors().size() + 3) / 4);
  EXPECT_EQ((*one)->metadata(), (*split)->metadata());
  ASSERT_EQ((*one)->tensors().size(), (*split)->tensors().size());
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < (*split)->tensors().size(); ++i) at[(*split)->tensors()[i].name] = i;
  for (size_t i = 0; i < (*one)->tensors().size(); ++i) {
    const auto& t = (*one)->tensors()[i];
    ASSERT_TRUE(at.count(t.name)) << t.name;
    EXPECT_EQ(t.shape, (*split)->tensors()[at[t.name]].shape) << t.name;
    auto x = (*one)->TensorBytes(i), y = (*split)->TensorBytes(at[t.name]);
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << t.name;
  }
  // Split options split safetensors output only.
  auto bolt = RunCli({"slice", dir + "/e.bolt", "--budget", "small", "-o", dir + "/s.bolt", "--split-max-size", "1M"});
  EXPECT_EQ(bolt.exit_code, 2) << bolt.output;
  EXPECT_NE(bolt.output.find("split .safetensors output"), std::string::npos) << bolt.output;
}

}  // namespace
}  // namespace boltpack

namespace boltpack {
namespace {

// Budget views: the strided regions over the mapping hold exactly the bytes
// `slice` writes, and a cut of the outermost dimension alone is contiguous.
TEST(ElasticViews, RegionsAreTheSlicedBytes) {
  std::string dir = MakeTempDir();
  ASSERT_NO_FATAL_FAILURE(WriteQ8Elastic(dir));
  ASSERT_EQ(RunCli({"slice", dir + "/e.bolt", "--budget", "small", "-o", dir + "/s.bolt"}).exit_code, 0);
  auto parent = Reader::Open(dir + "/e.bolt");
  auto sliced = Reader::Open(dir + "/s.bolt");
  ASSERT_TRUE(parent.ok() && sliced.ok());
  auto views = BudgetViews(**parent, "small");
  ASSERT_TRUE(views.ok()) << views.status();
  EXPECT_EQ(views->size(), (*sliced)->tensors().size());
  for (const auto& v : *views) {
    auto t = (*sliced)->FindTensor(v.name);
    ASSERT_TRUE(t.has_value()) << v.name;
    EXPECT_EQ((*sliced)->tensors()[*t].shape, v.shape) << v.name;
    ASSERT_EQ(v.streams.size(), 1u);
    std::vector<uint8_t> bytes(v.streams[0].total_bytes());
    ASSERT_TRUE(v.streams[0].CopyTo(absl::MakeSpan(bytes)).ok());
    auto want = (*sliced)->StoredStream(*t, 0);
    ASSERT_TRUE(want.ok());
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), want->begin(), want->end())) << v.name;
    // Router [E, D] keeps a prefix of experts: one contiguous range.
    if (v.name.find("ffn_gate_inp") != std::string::npos) {
      EXPECT_TRUE(v.streams[0].contiguous()) << v.name;
    }
    if (v.name.find("ffn_down_exps") != std::string::npos) {
      // [E, D, F] cut on E and F: E x D runs of F' q8_0 blocks.
      EXPECT_FALSE(v.streams[0].contiguous());
      EXPECT_EQ(v.streams[0].counts.size(), 2u);
      EXPECT_EQ(v.streams[0].run_bytes, 32u / 32 * 34);
    }
  }
  EXPECT_FALSE(BudgetViews(**parent, "nope").ok());
}

}  // namespace
}  // namespace boltpack

namespace boltpack {
namespace {

// zstd-compressed parents are decompressed and cut the same way.
TEST(ElasticCli, ZstdParentSlicesLikeAPlainOne) {
  std::string dir = MakeTempDir();
  WriteModel(dir + "/m.gguf");
  WriteText(dir + "/e.json", ElasticJson());
  for (std::string z : {"0", "5"}) {
    auto c = RunCli({"convert", dir + "/m.gguf", "-o", dir + "/e" + z + ".bolt", "--elastic", dir + "/e.json",
                     "--zstd", z, "--codec", "*_exps.weight=q8_0"});
    ASSERT_EQ(c.exit_code, 0) << c.output;
    auto s = RunCli({"slice", dir + "/e" + z + ".bolt", "--budget", "small", "-o", dir + "/s" + z + ".gguf"});
    ASSERT_EQ(s.exit_code, 0) << s.output;
  }
  auto r = Reader::Open(dir + "/e5.bolt");
  ASSERT_TRUE(r.ok());
  const auto& f = (*r)->required_features();
  EXPECT_NE(std::find(f.begin(), f.end(), "zstd"), f.end()) << "nothing was compressed; the test proves nothing";
  EXPECT_EQ(testing::ReadFileBytes(dir + "/s0.gguf"), testing::ReadFileBytes(dir + "/s5.gguf"));
}

}  // namespace
}  // namespace boltpack

namespace boltpack {
namespace {

// `convert` of an elastic .bolt keeps its elastic manifest (re-encoding
// keeps the stored order), checked against the new codecs; --elastic on an
// elastic input is refused.
TEST(ElasticConvert, KeepsTheManifestOfAnElasticInput) {
  std::string dir = MakeTempDir();
  WriteModel(dir + "/m.gguf");
  WriteText(dir + "/e.json", ElasticJson());
  ASSERT_EQ(RunCli({"convert", dir + "/m.gguf", "-o", dir + "/e.bolt", "--elastic", dir + "/e.json"}).exit_code, 0);
  // Experts to q8_0: every budget cuts moe_ffn at multiples of 32.
  auto c = RunCli({"convert", dir + "/e.bolt", "-o", dir + "/q.bolt", "--codec", "*_exps.weight=q8_0"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto parent = Reader::Open(dir + "/e.bolt");
  auto q = Reader::Open(dir + "/q.bolt");
  ASSERT_TRUE(parent.ok() && q.ok());
  ASSERT_NE((*q)->elastic(), nullptr);
  const ElasticManifest& a = *(*parent)->elastic();
  const ElasticManifest& b = *(*q)->elastic();
  EXPECT_EQ(a.layer_count, b.layer_count);
  ASSERT_EQ(a.budgets.size(), b.budgets.size());
  for (size_t i = 0; i < a.budgets.size(); ++i) EXPECT_EQ(a.budgets[i].name, b.budgets[i].name);
  EXPECT_EQ(a.bindings.size(), b.bindings.size());
  EXPECT_EQ(a.importance.size(), b.importance.size());
  EXPECT_EQ((*q)->tensors()[*(*q)->FindTensor("blk.1.ffn_up_exps.weight")].codec_id, "q8_0");
  // The kept manifest still slices, and the cut is the re-encoded parent's.
  auto s = RunCli({"slice", dir + "/q.bolt", "--budget", "small", "-o", dir + "/s.bolt"});
  ASSERT_EQ(s.exit_code, 0) << s.output;
  auto sliced = Reader::Open(dir + "/s.bolt");
  ASSERT_TRUE(sliced.ok());
  auto t = (*sliced)->FindTensor("blk.1.ffn_down_exps.weight");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ((*sliced)->tensors()[*t].shape, (std::vector<uint64_t>{2, kD, 32}));

  // attn_output [D, heads x 16] to q8_0: "small" keeps 1 head (16 columns)
  // in layer 2, inside a 32-element block: refused, naming all three.
  auto bad = RunCli({"convert", dir + "/e.bolt", "-o", dir + "/bad.bolt", "--codec", "*attn_output.weight=q8_0"});
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("small"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("blk.2.attn_output.weight"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("32"), std::string::npos) << bad.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/bad.bolt"));

  auto twice = RunCli({"convert", dir + "/e.bolt", "-o", dir + "/t.bolt", "--elastic", dir + "/e.json"});
  EXPECT_EQ(twice.exit_code, 1) << twice.output;
  EXPECT_NE(twice.output.find("already has an elastic manifest"), std::string::npos) << twice.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/t.bolt"));
}

// A .gguf slice whose kept layers keep different expert counts has a
// per-layer expert_count, which llama.cpp cannot read: slice warns (naming
// budget and key) and verify --target llama.cpp reports it as an error.
TEST(ElasticCli, GgufSliceWarnsWhereLlamaCppNeedsOneNumber) {
  std::string dir = MakeTempDir();
  WriteModel(dir + "/m.gguf");
  WriteText(dir + "/e.json", ElasticJson());
  ASSERT_EQ(RunCli({"convert", dir + "/m.gguf", "-o", dir + "/e.bolt", "--elastic", dir + "/e.json"}).exit_code, 0);
  auto big = RunCli({"slice", dir + "/e.bolt", "--budget", "big", "-o", dir + "/big.gguf"});
  ASSERT_EQ(big.exit_code, 0) << big.output;
  EXPECT_NE(big.output.find("warning: budget \"big\": testmoe.expert_count is a per-layer array [3, 4, 4]"),
            std::string::npos)
      << big.output;
  EXPECT_NE(big.output.find("llama.cpp"), std::string::npos) << big.output;
  // Same count in every kept layer: a scalar, no warning. (The parent's
  // expert_feed_forward_length is an array, so it stays one and is warned
  // about even where its kept values agree.)
  auto small = RunCli({"slice", dir + "/e.bolt", "--budget", "small", "-o", dir + "/small.gguf"});
  ASSERT_EQ(small.exit_code, 0) << small.output;
  EXPECT_EQ(small.output.find("testmoe.expert_count"), std::string::npos) << small.output;
  EXPECT_NE(small.output.find("warning: budget \"small\": testmoe.expert_feed_forward_length is a per-layer array "
                              "[32, 32]"),
            std::string::npos)
      << small.output;
  // A .bolt slice is not a llama.cpp file: no warning.
  auto bolt = RunCli({"slice", dir + "/e.bolt", "--budget", "big", "-o", dir + "/big.bolt"});
  ASSERT_EQ(bolt.exit_code, 0) << bolt.output;
  EXPECT_EQ(bolt.output.find("warning"), std::string::npos) << bolt.output;

  auto v = RunCli({"verify", "--target", "llama.cpp", dir + "/big.gguf"});
  EXPECT_EQ(v.exit_code, 1) << v.output;
  EXPECT_NE(v.output.find("error: key \"testmoe.expert_count\": is an array of 3"), std::string::npos) << v.output;
  auto vs = RunCli({"verify", "--target", "llama.cpp", dir + "/small.gguf"});
  EXPECT_EQ(vs.output.find("testmoe.expert_count"), std::string::npos) << vs.output;
}

// --no-fsync only skips the fsync (durability), never what is written:
// the same bytes in every format (a .bolt file differs only in its random
// file id), and an input is still never overwritten.
TEST(ElasticCli, NoFsyncWritesTheSameFiles) {
  std::string dir = MakeTempDir();
  ASSERT_NO_FATAL_FAILURE(WriteQ8Elastic(dir));
  auto fast = RunCli({"convert", dir + "/m.gguf", "-o", dir + "/f.bolt", "--elastic", dir + "/e.json", "--codec",
                      "*_exps.weight=q8_0", "--no-fsync"});
  ASSERT_EQ(fast.exit_code, 0) << fast.output;
  for (const char* ext : {".bolt", ".gguf", ".safetensors"}) {
    SCOPED_TRACE(ext);
    for (const char* flag : {"", "--no-fsync"}) {
      std::vector<std::string> args = {"slice", dir + "/e.bolt", "--budget", "small", "-o",
                                       dir + "/s" + (*flag ? "-nofsync" : "") + ext};
      if (*flag) args.push_back(flag);
      auto s = RunCli(args);
      ASSERT_EQ(s.exit_code, 0) << s.output;
    }
    if (std::string(ext) != ".bolt") {
      EXPECT_TRUE(testing::ReadFileBytes(dir + "/s" + ext) == testing::ReadFileBytes(dir + "/s-nofsync" + ext));
      continue;
    }
    auto a = Reader::Open(dir + "/s.bolt");
    auto b = Reader::Open(dir + "/s-nofsync.bolt");
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
    for (size_t t = 0; t < (*a)->tensors().size(); ++t) {
      for (size_t k = 0; k < (*a)->tensors()[t].streams.size(); ++k) {
        EXPECT_EQ((*a)->tensors()[t].streams[k].xxh3, (*b)->tensors()[t].streams[k].xxh3) << (*a)->tensors()[t].name;
      }
    }
    EXPECT_TRUE((*b)->VerifyContainer().ok());
  }
  for (const char* name : {"f.bolt", "s-nofsync.bolt"}) {
    auto v = RunCli({"verify", dir + "/" + name});
    EXPECT_EQ(v.exit_code, 0) << v.output;
  }
  auto onto_input = RunCli({"slice", dir + "/e.bolt", "--budget", "small", "-o", dir + "/e.bolt", "--no-fsync"});
  EXPECT_NE(onto_input.exit_code, 0);
}

// A kept chunk whose bytes do not match its checksum is reported, never
// copied; bytes a budget drops are not read.
TEST(ElasticCli, SliceVerifiesTheKeptSourceBytes) {
  std::string dir = MakeTempDir();
  ASSERT_NO_FATAL_FAILURE(WriteQ8Elastic(dir));
  size_t offset = 0;
  {
    auto r = Reader::Open(dir + "/e.bolt");
    ASSERT_TRUE(r.ok());
    auto t = (*r)->FindTensor("blk.2.ffn_up_exps.weight");
    ASSERT_TRUE(t.has_value());
    offset = (*r)->tensors()[*t].streams[0].offset;  // expert 0: kept by every budget
  }
  auto bytes = testing::ReadFileBytes(dir + "/e.bolt");
  bytes[offset + 5] ^= 0x40;
  testing::WriteFileBytes(dir + "/e.bolt", bytes);
  for (const char* ext : {".bolt", ".gguf", ".safetensors"}) {
    SCOPED_TRACE(ext);
    auto s = RunCli({"slice", dir + "/e.bolt", "--budget", "small", "-o", dir + "/s" + ext});
    EXPECT_EQ(s.exit_code, 1) << s.output;
    EXPECT_NE(s.output.find("checksum mismatch"), std::string::npos) << s.output;
    EXPECT_NE(s.output.find("blk.2.ffn_up_exps.weight"), std::string::npos) << s.output;
    EXPECT_FALSE(std::filesystem::exists(dir + "/s" + ext));
  }
}

// A write that fails while the output's thread writes behind the reads
// (here past a file-size limit, as on a full disk) fails the slice, names
// the output and what went wrong, and leaves neither the output nor its
// temporary file.
TEST(ElasticCli, AFailedWriteLeavesNoOutput) {
  std::string dir = MakeTempDir();
  ASSERT_NO_FATAL_FAILURE(WriteQ8Elastic(dir));
  for (const char* ext : {".bolt", ".gguf", ".safetensors"}) {
    SCOPED_TRACE(ext);
    const std::string out = dir + "/s" + ext;
    auto whole = RunCli({"slice", dir + "/e.bolt", "--budget", "small", "-o", out});
    ASSERT_EQ(whole.exit_code, 0) << whole.output;
    const uint64_t size = std::filesystem::file_size(out);
    std::filesystem::remove(out);
    auto s = testing::RunCliWithFileSizeLimit({"slice", dir + "/e.bolt", "--budget", "small", "-o", out}, size / 2);
    EXPECT_EQ(s.exit_code, 1) << s.output;
    EXPECT_NE(s.output.find(out + ": write failed: File too large"), std::string::npos) << s.output;
    EXPECT_FALSE(std::filesystem::exists(out));
  }
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "left behind: " << e.path();
  }
}

}  // namespace
}  // namespace boltpack

namespace boltpack {
namespace {

// A tensor slice copies whole (no budget cuts it) is copied only if its
// record is one the reader accepts: an invalid one is refused naming the
// input and the tensor, and no output is left.
TEST(ElasticCli, SliceRefusesToCopyAnInvalidRecord) {
  std::string dir = MakeTempDir();
  ASSERT_NO_FATAL_FAILURE(WriteQ8Elastic(dir));
  auto bad = testing::RewriteManifest(testing::ReadFileBytes(dir + "/e.bolt"), [](v1::Manifest& m) {
    for (auto& t : *m.mutable_tensors()) {
      if (t.name() == "token_embd.weight") t.mutable_streams(0)->set_role("mystery");
    }
  });
  testing::WriteFileBytes(dir + "/bad.bolt", bad);
  auto s = RunCli({"slice", dir + "/bad.bolt", "--budget", "small", "-o", dir + "/s.bolt"});
  EXPECT_EQ(s.exit_code, 1) << s.output;
  EXPECT_NE(s.output.find(dir + "/bad.bolt: not a valid \"f32\" record, not copied: "), std::string::npos) << s.output;
  EXPECT_NE(s.output.find("token_embd.weight"), std::string::npos) << s.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/s.bolt"));
}

// Issue 21 item 4: a GGUF slice keeps two-level nvfp4 as the export writes
// it, NVFP4 blocks plus ".scale" ({kept experts} beside *_exps), repacked
// losslessly from the kept cells; only a cut ggml's 64-wide NVFP4 blocks
// cannot hold (an expert width of 32) is decoded to the dtype. The parent's
// general.file_type (ALL_F32 here, F16 for a real source) becomes the
// slice's mix, MOSTLY_NVFP4, with quantization_version 2 (item 6).
TEST(ElasticCli, GgufSliceKeepsTwoLevelNvfp4AsNvfp4) {
  std::string dir = MakeTempDir();
  WriteModel(dir + "/plain.gguf");
  {  // the same model with the file type llama.cpp's converter writes
    auto src = io::GgufModel::Open(dir + "/plain.gguf");
    ASSERT_TRUE(src.ok()) << src.status();
    Metadata kv = (*src)->metadata();
    kv.emplace_back("general.file_type", MetaValue::Uint(ValueType::kUint32, 0));
    std::vector<io::GgufTensorDecl> decls;
    for (const auto& t : (*src)->tensors()) decls.push_back({std::string(t.name), t.ne, t.type->id});
    auto w = io::GgufWriter::Create(dir + "/m.gguf", kv, decls);
    ASSERT_TRUE(w.ok()) << w.status();
    for (size_t i = 0; i < decls.size(); ++i) ASSERT_TRUE((*w)->WriteNext((*src)->TensorBytes(i)).ok());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  WriteText(dir + "/e.json", ElasticJson());
  auto c = RunCli({"convert", dir + "/m.gguf", "-o", dir + "/e.bolt", "--elastic", dir + "/e.json", "--codec",
                   "*_exps.weight=nvfp4"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  for (const char* ext : {".gguf", ".bolt"}) {
    auto s = RunCli({"slice", dir + "/e.bolt", "--budget", "big", "-o", dir + "/big" + ext});
    ASSERT_EQ(s.exit_code, 0) << s.output;
  }
  auto g = io::GgufModel::Open(dir + "/big.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  auto b = Reader::Open(dir + "/big.bolt");
  ASSERT_TRUE(b.ok()) << b.status();
  size_t nvfp4 = 0;
  for (size_t i = 0; i < (*g)->tensors().size(); ++i) {
    const auto& t = (*g)->tensors()[i];
    if (t.name.find("_exps.weight") == std::string_view::npos) continue;
    SCOPED_TRACE(std::string(t.name));
    if (t.ne[0] % 64 != 0) {
      EXPECT_EQ(t.type->id, 0);  // F32, decoded
      continue;
    }
    ASSERT_EQ(t.type->id, 40);  // GGML_TYPE_NVFP4
    ++nvfp4;
    auto idx = (*b)->FindTensor(std::string(t.name));
    ASSERT_TRUE(idx.has_value());
    auto v = (*b)->StoredStream(*idx, 0), sc = (*b)->StoredStream(*idx, 1);
    ASSERT_TRUE(v.ok() && sc.ok());
    auto want = Nvfp4ToGgml((*b)->tensors()[*idx], *v, *sc);
    ASSERT_TRUE(want.ok()) << want.status();
    auto got = (*g)->TensorBytes(i);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want->blocks.begin(), want->blocks.end()));
    const std::string base(t.name.substr(0, t.name.size() - 7));
    auto s = (*g)->FindTensor(base + ".scale");
    ASSERT_TRUE(s.has_value());
    const auto& st = (*g)->tensors()[*s];
    EXPECT_EQ(st.type->id, 0);
    EXPECT_EQ(st.ne, std::vector<uint64_t>{t.ne[2]});  // one per kept expert
    float first;
    std::memcpy(&first, (*g)->TensorBytes(*s).data(), 4);
    EXPECT_EQ(first, want->tensor_scale);
  }
  EXPECT_EQ(nvfp4, 5u);  // up_exps of 3 layers, down_exps of layers 0 and 1 (64 wide)
  const MetaValue* ft = Find((*g)->metadata(), "general.file_type");
  ASSERT_NE(ft, nullptr);
  EXPECT_EQ(ft->u, 39u);  // LLAMA_FTYPE_MOSTLY_NVFP4
  const MetaValue* qv = Find((*g)->metadata(), "general.quantization_version");
  ASSERT_NE(qv, nullptr);
  EXPECT_EQ(qv->u, 2u);
  auto again = RunCli({"slice", dir + "/e.bolt", "--budget", "big", "-o", dir + "/again.gguf"});
  EXPECT_NE(again.output.find(StrCat("(budget \"big\": ", (*g)->tensors().size(), " tensors")), std::string::npos)
      << again.output;
}

}  // namespace
}  // namespace boltpack
