// Format 1.2 elastic features (spec/elastic.md): grouped axes (GQA heads
// pruned inside each KV group) and segmented dimensions (a fused gate_up,
// a Mamba-like in_proj with a fixed segment). Every budget is checked
// against a reference computed here from the unpermuted source tensors and
// the importance scores (sort within each group by descending score, ties
// lower index first, take the per-group prefix), through every path that
// cuts: slice to .bolt/.safetensors/.gguf, zero-copy budget views and
// DecodeBudget, in f32 and q8_0.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "boltpack/budget_view.h"
#include "boltpack/reader.h"
#include "format/elastic_validate.h"
#include "gtest/gtest.h"
#include "io/elastic_json.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "tests/elastic_reference.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::RunCli;
using testing::CheckSlicedTensor;
using testing::Count;
using testing::DecodeF32;
using testing::FloatsOf;
using testing::Gather;
using testing::Index;
using testing::JsonFloats;
using testing::SliceAllFormats;
using testing::SlicedBudget;
using testing::Values;

// The source units a budget keeps: per group, the `count / groups` best by
// descending score (ties: lower index first). Equal scores give the stored
// order's per-group prefix.
std::vector<uint64_t> KeptSourceUnits(const std::vector<float>& scores, uint64_t groups, uint64_t count) {
  uint64_t per = scores.size() / groups;
  std::vector<uint64_t> kept;
  for (uint64_t g = 0; g < groups; ++g) {
    std::vector<uint64_t> units(per);
    std::iota(units.begin(), units.end(), g * per);
    std::stable_sort(units.begin(), units.end(), [&](uint64_t a, uint64_t b) { return scores[a] > scores[b]; });
    kept.insert(kept.end(), units.begin(), units.begin() + count / groups);
  }
  return kept;
}

void AppendElems(const std::vector<uint64_t>& units, uint64_t unit_elems, uint64_t offset, std::vector<uint64_t>* out) {
  for (uint64_t u : units) {
    for (uint64_t e = 0; e < unit_elems; ++e) out->push_back(offset + u * unit_elems + e);
  }
}

struct SourceTensor {
  std::string name;
  std::vector<uint64_t> shape;
};

void WriteGgufSource(const std::string& path, const Metadata& kv, const std::vector<SourceTensor>& tensors) {
  std::vector<io::GgufTensorDecl> decls;
  for (const auto& t : tensors) decls.push_back({t.name, {t.shape.rbegin(), t.shape.rend()}, 0});
  auto w = io::GgufWriter::Create(path, kv, decls);
  ASSERT_TRUE(w.ok()) << w.status();
  for (const auto& t : tensors) {
    auto v = Values(t.name, Count(t.shape));
    ASSERT_TRUE((*w)->WriteNext({reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4}).ok());
  }
  ASSERT_TRUE((*w)->Finish().ok());
}

// Each expected kept tensor: its output name and the source indices kept.
struct Expect {
  std::string source;  // name in the parent
  std::string name;    // in the slice
  std::vector<uint64_t> shape;
  Index index;
  bool quantized = false;  // q8_0 in the parent
  // Quantized tensors whose innermost dimension is permuted are compared
  // with the decode of the parent cut to the stored order's prefix (q8_0 of
  // a permuted tensor is not the permutation of its q8_0).
  Index stored_index;
};

// Checks one budget of `parent` against `expects` through every cutting path.
void CheckBudget(const std::string& dir, const std::string& parent_path, const std::string& budget,
                 const std::vector<Expect>& expects) {
  SCOPED_TRACE(budget);
  SlicedBudget sb;
  ASSERT_NO_FATAL_FAILURE(SliceAllFormats(dir, parent_path, budget, &sb));
  const Reader& parent = *sb.parent;
  const Reader& sliced = *sb.sliced;
  ASSERT_EQ(sliced.tensors().size(), expects.size());
  for (const Expect& e : expects) {
    SCOPED_TRACE(e.name);
    std::vector<float> want;
    if (!e.quantized) {
      want = Gather(Values(e.source, Count(e.shape)), e.shape, e.index);
    } else if (!e.stored_index.empty()) {
      want = Gather(DecodeF32(parent, e.source), e.shape, e.stored_index);
    } else {
      // Rows (whole q8_0 blocks) move with the permutation, so the q8_0 of
      // the permuted tensor is the permutation of the q8_0 of the source.
      auto plain = Reader::Open(dir + "/plain_q8.bolt");
      ASSERT_TRUE(plain.ok()) << plain.status();
      want = Gather(DecodeF32(**plain, e.source), e.shape, e.index);
    }
    // The .bolt slice, DecodeBudget, zero-copy views, .gguf, .safetensors.
    ASSERT_NO_FATAL_FAILURE(CheckSlicedTensor(sb, e.name, want));
  }
}

// ---- GQA attention: 8 query heads in 2 groups (2 KV heads) ----

constexpr uint64_t kHidden = 64;
constexpr uint64_t kHeads = 8;
constexpr uint64_t kGroups = 2;
const std::vector<float> kHeadScores[2] = {{0.5f, 2, 1, 3, 0.1f, 0.9f, 0.9f, 4}, {1, 1, 1, 1, 5, 4, 3, 2}};

std::vector<SourceTensor> AttentionTensors(uint64_t hd) {
  std::vector<SourceTensor> t = {{"token_embd.weight", {16, kHidden}}};
  for (int l = 0; l < 2; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    t.push_back({p + "attn_q.weight", {kHeads * hd, kHidden}});
    t.push_back({p + "attn_k.weight", {kGroups * hd, kHidden}});
    t.push_back({p + "attn_v.weight", {kGroups * hd, kHidden}});
    t.push_back({p + "attn_output.weight", {kHidden, kHeads * hd}});
  }
  return t;
}

std::string AttentionJson(uint64_t hd, const std::string& budgets) {
  return "{\"version\": 1, \"layers\": {\"count\": 2, \"name_pattern\": \"blk.{L}.\"},"
         "\"axes\": {\"heads\": {\"scope\": \"layer\", \"unit_elems\": " +
         std::to_string(hd) +
         ", \"groups\": 2}},"
         "\"bindings\": [{\"tensor\": \"blk.{L}.attn_q.weight\", \"dims\": [\"heads\", \"-\"]},"
         "{\"tensor\": \"blk.{L}.attn_output.weight\", \"dims\": [\"-\", \"heads\"]}],"
         "\"importance\": {\"heads\": {\"0\": " +
         JsonFloats(kHeadScores[0]) + ", \"1\": " + JsonFloats(kHeadScores[1]) + "}}, \"budgets\": " + budgets + "}";
}

const char* kAttentionBudgets =
    R"([{"name": "six", "per_layer": {"heads": [6, 8]}},
        {"name": "four", "per_layer": {"heads": [4, 2]}, "nested_in": "six"},
        {"name": "drop", "layer_keep": [0, 1], "per_layer": {"heads": [null, 4]}}])";

void WriteAttentionModel(const std::string& dir, uint64_t hd) {
  Metadata kv;
  kv.emplace_back("general.architecture", MetaValue::String("llama"));
  kv.emplace_back("llama.block_count", MetaValue::Uint(ValueType::kUint32, 2));
  kv.emplace_back("llama.attention.head_count", MetaValue::Uint(ValueType::kUint32, kHeads));
  kv.emplace_back("llama.attention.head_count_kv", MetaValue::Uint(ValueType::kUint32, kGroups));
  WriteGgufSource(dir + "/attn.gguf", kv, AttentionTensors(hd));
}

std::vector<Expect> AttentionExpects(uint64_t hd, const std::vector<bool>& keep, const std::vector<uint64_t>& heads,
                                     bool q8) {
  std::vector<Expect> out;
  for (const auto& t : AttentionTensors(hd)) {
    Expect e{t.name, t.name, t.shape, Index(t.shape.size()), q8 && t.name != "token_embd.weight", {}};
    if (t.name.rfind("blk.", 0) == 0) {
      int l = t.name[4] - '0';
      if (!keep[l]) continue;
      int renumbered = 0;
      for (int k = 0; k < l; ++k) renumbered += keep[k];
      e.name = "blk." + std::to_string(renumbered) + t.name.substr(5);
      std::vector<uint64_t> units = KeptSourceUnits(kHeadScores[l], kGroups, heads[l]);
      size_t d = t.name.find("attn_q") != std::string::npos        ? 0
                 : t.name.find("attn_output") != std::string::npos ? 1
                                                                   : 2;
      if (d < 2 && heads[l] != kHeads) AppendElems(units, hd, 0, &e.index[d]);
      if (d < 2 && heads[l] == kHeads) {
        // Whole, in stored (importance) order.
        AppendElems(KeptSourceUnits(kHeadScores[l], kGroups, kHeads), hd, 0, &e.index[d]);
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

TEST(ElasticGroups, GqaHeadsF32AndQ8) {
  for (bool q8 : {false, true}) {
    SCOPED_TRACE(q8 ? "q8_0" : "f32");
    std::string dir = MakeTempDir();
    const uint64_t hd = 32;  // one q8_0 block per head
    WriteAttentionModel(dir, hd);
    std::ofstream(dir + "/e.json") << AttentionJson(hd, kAttentionBudgets);
    std::vector<std::string> args = {"convert", dir + "/attn.gguf", "-o", dir + "/e.bolt", "--elastic", dir + "/e.json"};
    if (q8) {
      args.insert(args.end(), {"--codec", "blk.*=q8_0"});
      auto plain = RunCli({"convert", dir + "/attn.gguf", "-o", dir + "/plain_q8.bolt", "--codec", "blk.*=q8_0"});
      ASSERT_EQ(plain.exit_code, 0) << plain.output;
    }
    auto c = RunCli(args);
    ASSERT_EQ(c.exit_code, 0) << c.output;
    auto r = Reader::Open(dir + "/e.bolt");
    ASSERT_TRUE(r.ok()) << r.status();
    // Version 2 manifest, format 1.2.
    EXPECT_EQ((*r)->version().minor, 2u);
    ASSERT_NE((*r)->elastic(), nullptr);
    EXPECT_EQ((*r)->elastic()->version, 2u);
    EXPECT_EQ((*r)->elastic()->axes[0].groups, kGroups);
    CheckBudget(dir, dir + "/e.bolt", "six", AttentionExpects(hd, {true, true}, {6, 8}, q8));
    CheckBudget(dir, dir + "/e.bolt", "four", AttentionExpects(hd, {true, true}, {4, 2}, q8));
    CheckBudget(dir, dir + "/e.bolt", "drop", AttentionExpects(hd, {false, true}, {0, 4}, q8));
    // A nested budget cut out of a slice equals the same cut of the parent.
    auto sliced = Reader::Open(dir + "/six.bolt");
    ASSERT_TRUE(sliced.ok()) << sliced.status();
    EXPECT_EQ((*sliced)->version().minor, 2u);
    auto again = RunCli({"slice", dir + "/six.bolt", "--budget", "four", "-o", dir + "/four2.bolt"});
    ASSERT_EQ(again.exit_code, 0) << again.output;
    auto a = Reader::Open(dir + "/four.bolt");
    auto b = Reader::Open(dir + "/four2.bolt");
    ASSERT_TRUE(a.ok() && b.ok());
    for (const auto& t : (*a)->tensors()) EXPECT_EQ(DecodeF32(**a, t.name), DecodeF32(**b, t.name)) << t.name;
    // The sliced manifest keeps each group's best scores.
    const ElasticManifest* m = (*a)->elastic();
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(m->importance.size(), 2u);
    EXPECT_EQ(m->importance[1].order.size(), 2u);
  }
}

TEST(ElasticGroups, GgufHeadCountIsTheKeptTotal) {
  std::string dir = MakeTempDir();
  WriteAttentionModel(dir, 32);
  std::ofstream(dir + "/e.json") << AttentionJson(32, kAttentionBudgets);
  auto c = RunCli({"convert", dir + "/attn.gguf", "-o", dir + "/e.bolt", "--elastic", dir + "/e.json"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  for (const auto& [budget, want] : std::vector<std::pair<std::string, std::vector<uint64_t>>>{
           {"drop", {4}}, {"four", {4, 2}}}) {
    auto s = RunCli({"slice", dir + "/e.bolt", "--budget", budget, "-o", dir + "/" + budget + ".gguf"});
    ASSERT_EQ(s.exit_code, 0) << s.output;
    auto g = io::GgufModel::Open(dir + "/" + budget + ".gguf");
    ASSERT_TRUE(g.ok()) << g.status();
    std::vector<uint64_t> got;
    for (const auto& [k, v] : (*g)->metadata()) {
      if (k == "llama.attention.head_count") {
        if (v.type == ValueType::kArray) {
          for (size_t e = 0; e < v.array_size(); ++e) got.push_back(v.uint_element(e));
        } else {
          got.push_back(v.u);
        }
      }
      if (k == "llama.attention.head_count_kv") {
        EXPECT_EQ(v.u, kGroups);  // unbound: unchanged
      }
    }
    EXPECT_EQ(got, want) << budget;
  }
}

TEST(ElasticGroups, AdHocKeepRoundsToGroups) {
  std::string dir = MakeTempDir();
  WriteAttentionModel(dir, 32);
  std::ofstream(dir + "/e.json") << AttentionJson(32, "[]");
  auto c = RunCli({"convert", dir + "/attn.gguf", "-o", dir + "/e.bolt", "--elastic", dir + "/e.json"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  // 0.4 of 8 is 3.2: rounded down to a multiple of 2 groups, 2 heads.
  auto s = RunCli({"slice", dir + "/e.bolt", "--keep", "heads=0.4", "-o", dir + "/k.bolt"});
  ASSERT_EQ(s.exit_code, 0) << s.output;
  auto r = Reader::Open(dir + "/k.bolt");
  ASSERT_TRUE(r.ok()) << r.status();
  for (const Expect& e : AttentionExpects(32, {true, true}, {2, 2}, false)) {
    EXPECT_EQ(DecodeF32(**r, e.name), Gather(Values(e.source, Count(e.shape)), e.shape, e.index)) << e.name;
  }
  // A count not divisible by the groups is refused.
  auto bad = RunCli({"slice", dir + "/e.bolt", "--keep", "heads=3", "-o", dir + "/k3.bolt"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("not divisible by its 2 groups"), std::string::npos) << bad.output;
}

TEST(ElasticGroups, Q8MisalignedGroupRunIsRefused) {
  std::string dir = MakeTempDir();
  const uint64_t hd = 16;  // half a q8_0 block per head
  WriteAttentionModel(dir, hd);
  // 4 of 8 heads: 2 per group, 32-element runs at 0 and 64: whole blocks.
  std::ofstream(dir + "/ok.json") << AttentionJson(hd, R"([{"name": "four", "per_layer": {"heads": [4, 4]}}])");
  auto ok = RunCli({"convert", dir + "/attn.gguf", "-o", dir + "/ok.bolt", "--elastic", dir + "/ok.json", "--codec",
                    "*attn_output*=q8_0"});
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  // 2 of 8: one 16-element head per group splits a block.
  std::ofstream(dir + "/bad.json") << AttentionJson(hd, R"([{"name": "two", "per_layer": {"heads": [2, 4]}}])");
  auto bad = RunCli({"convert", dir + "/attn.gguf", "-o", dir + "/bad.bolt", "--elastic", dir + "/bad.json",
                     "--codec", "*attn_output*=q8_0"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("budget \"two\""), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("blk.0.attn_output.weight"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("blocks of 32 elements"), std::string::npos) << bad.output;
  // The same budget ad hoc on the valid file.
  auto keep = RunCli({"slice", dir + "/ok.bolt", "--keep", "heads=2", "-o", dir + "/k.bolt"});
  EXPECT_NE(keep.exit_code, 0);
  EXPECT_NE(keep.output.find("blocks of 32 elements"), std::string::npos) << keep.output;
}

// ---- fused FFN: gate_up {ffn, ffn}, in_proj {ffn, 32, ffn}, mix (innermost
// segmented), down ----

constexpr uint64_t kFfn = 128;
constexpr uint64_t kFixed = 32;

std::vector<float> FfnScores(int layer) {
  std::vector<float> s(kFfn);
  for (uint64_t i = 0; i < kFfn; ++i) s[i] = static_cast<float>((i * 37 + 11 * layer) % 29);  // with ties
  return s;
}

std::vector<SourceTensor> FfnTensors() {
  std::vector<SourceTensor> t;
  for (int l = 0; l < 2; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    t.push_back({p + "ffn_gate_up.weight", {2 * kFfn, kHidden}});
    t.push_back({p + "ffn_down.weight", {kHidden, kFfn}});
    t.push_back({p + "in_proj.weight", {2 * kFfn + kFixed, kHidden}});
    t.push_back({p + "mix.weight", {4, 2 * kFfn + kFixed}});
  }
  return t;
}

std::string FfnJson() {
  return R"({"version": 1, "layers": {"count": 2, "name_pattern": "blk.{L}."},
    "axes": {"ffn": {"scope": "layer", "granularity": 32}},
    "bindings": [
      {"tensor": "blk.{L}.ffn_gate_up.weight", "dims": [{"segments": ["ffn", "ffn"]}, "-"]},
      {"tensor": "blk.{L}.ffn_down.weight", "dims": ["-", "ffn"]},
      {"tensor": "blk.{L}.in_proj.weight", "dims": [{"segments": ["ffn", 32, "ffn"]}, "-"]},
      {"tensor": "blk.{L}.mix.weight", "dims": ["-", {"segments": ["ffn", 32, "ffn"]}]}],
    "importance": {"ffn": {"0": )" +
         JsonFloats(FfnScores(0)) + ", \"1\": " + JsonFloats(FfnScores(1)) + R"(}},
    "budgets": [{"name": "ffn96", "per_layer": {"ffn": [96, 64]}},
                {"name": "ffn64", "per_layer": {"ffn": [64, 32]}, "nested_in": "ffn96"}]})";
}

std::vector<Expect> FfnExpects(const std::vector<uint64_t>& ffn, bool q8) {
  std::vector<Expect> out;
  for (const auto& t : FfnTensors()) {
    int l = t.name[4] - '0';
    Expect e{t.name, t.name, t.shape, Index(t.shape.size()), false, {}};
    std::vector<uint64_t> units = KeptSourceUnits(FfnScores(l), 1, ffn[l]);
    std::vector<uint64_t> stored(ffn[l]);
    std::iota(stored.begin(), stored.end(), 0);
    if (t.name.find("gate_up") != std::string::npos) {
      AppendElems(units, 1, 0, &e.index[0]);
      AppendElems(units, 1, kFfn, &e.index[0]);
      e.quantized = q8;
    } else if (t.name.find("down") != std::string::npos) {
      AppendElems(units, 1, 0, &e.index[1]);
    } else {
      size_t d = t.name.find("in_proj") != std::string::npos ? 0 : 1;
      auto& idx = d == 0 ? e.index[0] : e.index[1];
      AppendElems(units, 1, 0, &idx);
      for (uint64_t i = 0; i < kFixed; ++i) idx.push_back(kFfn + i);
      AppendElems(units, 1, kFfn + kFixed, &idx);
      e.quantized = q8;
      if (q8 && d == 1) {
        // Innermost units move one element at a time: compare with the
        // parent's decode cut to the stored prefix of each segment.
        e.stored_index = Index(2);
        AppendElems(stored, 1, 0, &e.stored_index[1]);
        for (uint64_t i = 0; i < kFixed; ++i) e.stored_index[1].push_back(kFfn + i);
        AppendElems(stored, 1, kFfn + kFixed, &e.stored_index[1]);
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

TEST(ElasticGroups, FusedSegmentsF32AndQ8) {
  for (bool q8 : {false, true}) {
    SCOPED_TRACE(q8 ? "q8_0" : "f32");
    std::string dir = MakeTempDir();
    Metadata kv;
    kv.emplace_back("general.architecture", MetaValue::String("llama"));
    kv.emplace_back("llama.block_count", MetaValue::Uint(ValueType::kUint32, 2));
    WriteGgufSource(dir + "/ffn.gguf", kv, FfnTensors());
    std::ofstream(dir + "/e.json") << FfnJson();
    std::vector<std::string> args = {"convert", dir + "/ffn.gguf", "-o", dir + "/e.bolt", "--elastic", dir + "/e.json"};
    if (q8) {
      for (const char* rule : {"*gate_up*=q8_0", "*in_proj*=q8_0", "*mix*=q8_0"}) args.insert(args.end(), {"--codec", rule});
      auto plain = RunCli({"convert", dir + "/ffn.gguf", "-o", dir + "/plain_q8.bolt", "--codec", "*gate_up*=q8_0",
                           "--codec", "*in_proj*=q8_0", "--codec", "*mix*=q8_0"});
      ASSERT_EQ(plain.exit_code, 0) << plain.output;
    }
    auto c = RunCli(args);
    ASSERT_EQ(c.exit_code, 0) << c.output;
    auto r = Reader::Open(dir + "/e.bolt");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)->version().minor, 2u);
    ASSERT_NE((*r)->elastic(), nullptr);
    EXPECT_EQ((*r)->elastic()->axes[0].parent, (std::vector<uint64_t>{kFfn, kFfn}));
    CheckBudget(dir, dir + "/e.bolt", "ffn96", FfnExpects({96, 64}, q8));
    CheckBudget(dir, dir + "/e.bolt", "ffn64", FfnExpects({64, 32}, q8));
    // Region shapes: gate_up's two equal runs are one strided region;
    // in_proj's mixed runs ([0, 96) and the fixed segment merged with the
    // second ffn segment, [128, 256)) are one region per run, in order, and
    // mix (segmented innermost) one per run for each of its 4 rows.
    auto views = BudgetViews(**r, "ffn96");
    ASSERT_TRUE(views.ok()) << views.status();
    for (const auto& v : *views) {
      if (v.name == "blk.0.ffn_gate_up.weight") {
        ASSERT_EQ(v.streams.size(), 1u);
        EXPECT_EQ(v.streams[0].counts, std::vector<uint64_t>{2});
      }
      if (v.name == "blk.0.in_proj.weight") {
        EXPECT_EQ(v.streams.size(), 2u);
      }
      if (v.name == "blk.0.mix.weight") {
        EXPECT_EQ(v.streams.size(), 4u * 2u);
      }
    }
    auto bytes = BudgetBytes(**r, "ffn64");
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    uint64_t want = 0;
    auto sliced = Reader::Open(dir + "/ffn64.bolt");
    ASSERT_TRUE(sliced.ok()) << sliced.status();
    for (const auto& t : (*sliced)->tensors()) want += t.streams[0].length;
    EXPECT_EQ(*bytes, want);
  }
}

// ---- authoring JSON errors ----

absl::Status Parse(const std::string& json, const std::vector<io::ElasticTensorShape>& shapes) {
  return io::ParseElasticJson(json, "e.json", shapes).status();
}

TEST(ElasticGroups, JsonErrorsAreClear) {
  std::vector<io::ElasticTensorShape> shapes = {{"blk.0.attn_q.weight", {8 * 4, 16}},
                                                {"blk.0.gate_up.weight", {2 * 24, 16}},
                                                {"blk.0.down.weight", {16, 24}}};
  auto json = [](const std::string& axes, const std::string& gate_dims, const std::string& budgets) {
    return R"({"version": 1, "layers": {"count": 1, "name_pattern": "blk.{L}."}, "axes": {)" + axes +
           R"(}, "bindings": [{"tensor": "blk.{L}.attn_q.weight", "dims": ["heads", "-"]},
             {"tensor": "blk.{L}.gate_up.weight", "dims": [)" +
           gate_dims + R"(, "-"]}, {"tensor": "blk.{L}.down.weight", "dims": ["-", "ffn"]}], "budgets": )" + budgets +
           "}";
  };
  const std::string axes = R"("heads": {"scope": "layer", "unit_elems": 4, "groups": 2}, "ffn": {"scope": "layer"})";
  const std::string segs = R"({"segments": ["ffn", "ffn"]})";
  auto ok = io::ParseElasticJson(json(axes, segs, R"([{"name": "b", "per_layer": {"heads": [4], "ffn": [8]}}])"),
                                 "e.json", shapes);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->manifest.version, 2u);
  ASSERT_EQ(ok->manifest.bindings[1].dims, (std::vector<std::string>{"+", "-"}));
  ASSERT_EQ(ok->manifest.bindings[1].segmented.size(), 1u);
  struct Case {
    std::string json, want;
  };
  std::vector<Case> cases = {
      {json(R"("heads": {"scope": "layer", "unit_elems": 4, "groups": 3}, "ffn": {"scope": "layer"})", segs, "[]"),
       "axis \"heads\": parent size 8 in layer 0 is not divisible by its 3 groups"},
      {json(axes, segs, R"([{"name": "b", "per_layer": {"heads": [3]}}])"),
       "per_layer \"heads\"[0]: 3 units is not divisible by the axis' 2 groups"},
      {json(axes, R"({"segments": ["ffn", "ffn", 8]})", "[]"),
       "tensor \"blk.0.gate_up.weight\": dimension 0 is 48 but its segments add up to 56"},
      {json(axes, R"({"segments": ["ffn", "nope"]})", "[]"), "segments[1]: unknown axis \"nope\""},
      {json(axes, R"({"segments": []})", "[]"), "\"segments\" must be an array of 1..64"},
      {json(axes, R"({"segments": ["ffn"], "x": 1})", "[]"), "unknown key \"x\""},
  };
  for (const Case& c : cases) {
    absl::Status s = Parse(c.json, shapes);
    EXPECT_FALSE(s.ok()) << c.want;
    EXPECT_NE(std::string(s.message()).find(c.want), std::string::npos) << s.message();
  }
  // An axis known only through segments is solved from the dimension.
  std::vector<io::ElasticTensorShape> fused_only = {{"blk.0.attn_q.weight", {8 * 4, 16}},
                                                    {"blk.0.gate_up.weight", {2 * 24 + 8, 16}},
                                                    {"blk.0.down.weight", {16, 16}}};
  std::string j = R"({"version": 1, "layers": {"count": 1, "name_pattern": "blk.{L}."},
    "axes": {"heads": {"scope": "layer", "unit_elems": 4}, "ffn": {"scope": "layer"}},
    "bindings": [{"tensor": "blk.{L}.attn_q.weight", "dims": ["heads", "-"]},
                 {"tensor": "blk.{L}.gate_up.weight", "dims": [{"segments": ["ffn", 8, "ffn"]}, "-"]}]})";
  auto solved = io::ParseElasticJson(j, "e.json", fused_only);
  ASSERT_TRUE(solved.ok()) << solved.status();
  EXPECT_EQ(solved->manifest.axes[1].parent, std::vector<uint64_t>{24});
  EXPECT_EQ(solved->manifest.version, 2u);
}

TEST(ElasticGroups, ImportanceSortsWithinGroups) {
  std::vector<io::ElasticTensorShape> shapes = {{"blk.0.attn_q.weight", {8, 4}}};
  std::string j = R"({"version": 1, "layers": {"count": 1, "name_pattern": "blk.{L}."},
    "axes": {"heads": {"scope": "layer", "groups": 2}},
    "bindings": [{"tensor": "blk.{L}.attn_q.weight", "dims": ["heads", "-"]}],
    "importance": {"heads": {"0": [0.5, 2, 1, 3, 0.1, 0.9, 0.9, 4]}}})";
  auto a = io::ParseElasticJson(j, "e.json", shapes);
  ASSERT_TRUE(a.ok()) << a.status();
  // Group 0 (units 0..3) by score 3, 2, 1, 0.5; group 1 (4..7): 4, then the
  // tie 0.9/0.9 lower index first, then 0.1.
  EXPECT_EQ(a->manifest.importance[0].order, (std::vector<uint32_t>{3, 1, 2, 0, 7, 5, 6, 4}));
  auto maps = a->MapsFor("blk.0.attn_q.weight", std::vector<uint64_t>{8, 4});
  EXPECT_EQ(maps[0], (std::vector<uint64_t>{3, 1, 2, 0, 7, 5, 6, 4}));
  EXPECT_TRUE(maps[1].empty());
}

}  // namespace
}  // namespace boltpack
