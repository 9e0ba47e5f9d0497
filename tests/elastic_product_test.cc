// Format 1.2 product dimensions (spec/elastic.md §1): a Mamba-2 mixer whose
// inner dimension is heads x head channels ("ssm_heads*ssm_ch"), with
// per-head tensors bound to the heads alone. Every budget (heads only,
// channels only, both, a dropped layer) is checked against a reference
// written from the definition — loops over kept heads h and kept channels
// c of the unpermuted source, element h * head_dim + c — through every path
// that cuts: `bolt-pack slice` to .bolt/.gguf/.safetensors, the library cut
// (PlanSlice + CutStoredTensor), zero-copy budget views and DecodeBudget,
// in f32 and with ssm_out in q8_0 (channel cuts on 32-element blocks).
// Then every validation rule for product entries, in the stored manifest
// and in the authoring JSON.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "boltpack/budget_view.h"
#include "boltpack/reader.h"
#include "boltpack_proto/boltpack.pb.h"
#include "format/elastic_cut.h"
#include "format/elastic_manifest.h"
#include "format/elastic_plan.h"
#include "format/elastic_runs.h"
#include "format/elastic_validate.h"
#include "fuzz/elastic_fuzz_model.h"
#include "fuzz/elastic_fuzz_slicer.h"
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

// ---- the model: 2 layers, d_model 32, 4 heads of 64 channels in 2 groups ----

constexpr uint64_t kModel = 32;
constexpr uint64_t kHeads = 4;
constexpr uint64_t kGroups = 2;     // n_groups: heads are pruned inside each
constexpr uint64_t kHeadDim = 64;   // channels per head
constexpr uint64_t kInner = kHeads * kHeadDim;
constexpr uint64_t kState = 16;     // d_state
constexpr uint64_t kBC = 2 * kGroups * kState;  // B and C of in_proj and conv1d
constexpr uint64_t kConv = 4;

// Scores with ties (ties keep the lower index first).
std::vector<float> HeadScores(int layer) {
  return layer == 0 ? std::vector<float>{0.5f, 2, 3, 3} : std::vector<float>{4, 1, 0.25f, 0.75f};
}
std::vector<float> ChannelScores(int layer) {
  std::vector<float> s(kHeadDim);
  for (uint64_t i = 0; i < kHeadDim; ++i) s[i] = static_cast<float>((i * 23 + 7 * layer) % 19);
  return s;
}

// The source units a budget keeps, in stored order: per group, the
// count / groups best by descending score, ties lower index first.
std::vector<uint64_t> BestUnits(const std::vector<float>& scores, uint64_t groups, uint64_t count) {
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

// The stored positions a budget keeps: a prefix of every group.
std::vector<uint64_t> StoredUnits(uint64_t parent, uint64_t groups, uint64_t count) {
  std::vector<uint64_t> kept;
  for (uint64_t g = 0; g < groups; ++g) {
    for (uint64_t i = 0; i < count / groups; ++i) kept.push_back(g * (parent / groups) + i);
  }
  return kept;
}

// Elements of a heads x channels dimension at `offset`: head h, channel c
// is element h * kHeadDim + c.
void AppendHeadChannels(const std::vector<uint64_t>& heads, const std::vector<uint64_t>& channels, uint64_t offset,
                        std::vector<uint64_t>* out) {
  for (uint64_t h : heads) {
    for (uint64_t c : channels) out->push_back(offset + h * kHeadDim + c);
  }
}
void AppendRange(uint64_t begin, uint64_t end, std::vector<uint64_t>* out) {
  for (uint64_t i = begin; i < end; ++i) out->push_back(i);
}

struct SourceTensor {
  std::string name;
  std::vector<uint64_t> shape;
};

std::vector<SourceTensor> MambaTensors() {
  std::vector<SourceTensor> t = {{"token_embd.weight", {8, kModel}}};
  for (int l = 0; l < 2; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    t.push_back({p + "ssm_in.weight", {2 * kInner + kBC + kHeads, kModel}});  // z, x, B, C, dt
    t.push_back({p + "ssm_conv1d.weight", {kInner + kBC, kConv}});          // x, B, C
    t.push_back({p + "ssm_conv1d.bias", {kInner + kBC}});
    t.push_back({p + "ssm_a", {kHeads}});
    t.push_back({p + "ssm_d", {kHeads}});
    t.push_back({p + "ssm_dt.bias", {kHeads}});
    t.push_back({p + "ssm_norm.weight", {kInner}});
    t.push_back({p + "ssm_out.weight", {kModel, kInner}});
  }
  return t;
}

const char* kMambaBudgets = R"([
      {"name": "heads", "per_layer": {"ssm_heads": [2, 2]}},
      {"name": "channels", "per_layer": {"ssm_ch": [32, 32]}},
      {"name": "both", "per_layer": {"ssm_heads": [2, 4], "ssm_ch": [32, 32]}, "nested_in": "channels"},
      {"name": "drop", "layer_keep": [0, 1], "per_layer": {"ssm_heads": [null, 2], "ssm_ch": [null, 32]},
       "nested_in": "both"}])";

std::string MambaJson(const std::string& budgets = kMambaBudgets, uint64_t channel_granularity = 32) {
  return R"({"version": 1, "layers": {"count": 2, "name_pattern": "blk.{L}."},
    "axes": {"ssm_heads": {"scope": "layer", "groups": 2},
             "ssm_ch": {"scope": "layer", "granularity": )" +
         std::to_string(channel_granularity) + R"(}},
    "bindings": [
      {"tensor": "blk.{L}.ssm_in.weight",
       "dims": [{"segments": ["ssm_heads*ssm_ch", "ssm_heads*ssm_ch", 64, "ssm_heads"]}, "-"]},
      {"tensor": "blk.{L}.ssm_conv1d.weight", "dims": [{"segments": ["ssm_heads*ssm_ch", 64]}, "-"]},
      {"tensor": "blk.{L}.ssm_conv1d.bias", "dims": [{"segments": ["ssm_heads*ssm_ch", 64]}]},
      {"tensor": "blk.{L}.ssm_a", "dims": ["ssm_heads"]},
      {"tensor": "blk.{L}.ssm_d", "dims": ["ssm_heads"]},
      {"tensor": "blk.{L}.ssm_dt.bias", "dims": ["ssm_heads"]},
      {"tensor": "blk.{L}.ssm_norm.weight", "dims": ["ssm_heads*ssm_ch"]},
      {"tensor": "blk.{L}.ssm_out.weight", "dims": ["-", "ssm_heads*ssm_ch"]}],
    "importance_method": "test scores",
    "importance": {"ssm_heads": {"0": )" +
         JsonFloats(HeadScores(0)) + ", \"1\": " + JsonFloats(HeadScores(1)) + R"(},
                   "ssm_ch": {"0": )" +
         JsonFloats(ChannelScores(0)) + ", \"1\": " + JsonFloats(ChannelScores(1)) + R"(}},
    "budgets": )" + budgets + "}";
}

struct Keep {
  std::vector<bool> layers;
  std::vector<uint64_t> heads, channels;  // per layer
};

// Each kept tensor: its name in the slice and, per dimension, the source
// elements kept (the definition applied to the unpermuted source), plus the
// stored positions (the same cut of the parent as stored) for q8_0 tensors
// whose innermost dimension was permuted before quantization.
struct Expect {
  std::string source, name;
  std::vector<uint64_t> shape;
  Index index, stored_index;
  bool quantized = false;
};

std::vector<Expect> MambaExpects(const Keep& keep, bool q8) {
  std::vector<Expect> out;
  for (const auto& t : MambaTensors()) {
    Expect e{t.name, t.name, t.shape, Index(t.shape.size()), {}, false};
    if (t.name.rfind("blk.", 0) != 0) {
      out.push_back(std::move(e));
      continue;
    }
    int l = t.name[4] - '0';
    if (!keep.layers[l]) continue;
    int renumbered = 0;
    for (int k = 0; k < l; ++k) renumbered += keep.layers[k];
    e.name = "blk." + std::to_string(renumbered) + t.name.substr(5);
    // Whole axes are still stored in importance order: the "kept" units of
    // a whole axis are all of them, best first.
    std::vector<uint64_t> heads = BestUnits(HeadScores(l), kGroups, keep.heads[l]);
    std::vector<uint64_t> channels = BestUnits(ChannelScores(l), 1, keep.channels[l]);
    std::string kind = t.name.substr(6);
    if (kind == "ssm_in.weight") {
      AppendHeadChannels(heads, channels, 0, &e.index[0]);       // z
      AppendHeadChannels(heads, channels, kInner, &e.index[0]);  // x
      AppendRange(2 * kInner, 2 * kInner + kBC, &e.index[0]);    // B, C
      for (uint64_t h : heads) e.index[0].push_back(2 * kInner + kBC + h);  // dt
    } else if (kind == "ssm_conv1d.weight" || kind == "ssm_conv1d.bias") {
      AppendHeadChannels(heads, channels, 0, &e.index[0]);
      AppendRange(kInner, kInner + kBC, &e.index[0]);
    } else if (kind == "ssm_a" || kind == "ssm_d" || kind == "ssm_dt.bias") {
      e.index[0] = heads;
    } else if (kind == "ssm_norm.weight") {
      AppendHeadChannels(heads, channels, 0, &e.index[0]);
    } else if (kind == "ssm_out.weight") {
      AppendHeadChannels(heads, channels, 0, &e.index[1]);
      if (q8) {
        e.quantized = true;
        e.stored_index = Index(2);
        std::vector<uint64_t> stored_channels(keep.channels[l]);
        std::iota(stored_channels.begin(), stored_channels.end(), 0);
        AppendHeadChannels(StoredUnits(kHeads, kGroups, keep.heads[l]), stored_channels, 0, &e.stored_index[1]);
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

void WriteMambaGguf(const std::string& path) {
  Metadata kv;
  kv.emplace_back("general.architecture", MetaValue::String("mamba2"));
  kv.emplace_back("mamba2.block_count", MetaValue::Uint(ValueType::kUint32, 2));
  std::vector<io::GgufTensorDecl> decls;
  for (const auto& t : MambaTensors()) decls.push_back({t.name, {t.shape.rbegin(), t.shape.rend()}, 0});
  auto w = io::GgufWriter::Create(path, kv, decls);
  ASSERT_TRUE(w.ok()) << w.status();
  for (const auto& t : MambaTensors()) {
    auto v = Values(t.name, Count(t.shape));
    ASSERT_TRUE((*w)->WriteNext({reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4}).ok());
  }
  ASSERT_TRUE((*w)->Finish().ok());
}

// Writes the elastic parent (ssm_out in q8_0 when `q8`).
std::string WriteParent(const std::string& dir, bool q8) {
  WriteMambaGguf(dir + "/mamba.gguf");
  std::ofstream(dir + "/e.json") << MambaJson();
  std::vector<std::string> args = {"convert", dir + "/mamba.gguf", "-o", dir + "/e.bolt", "--elastic", dir + "/e.json"};
  if (q8) args.insert(args.end(), {"--codec", "*ssm_out*=q8_0"});
  auto c = RunCli(args);
  EXPECT_EQ(c.exit_code, 0) << c.output;
  return dir + "/e.bolt";
}

// Checks one budget of `parent_path` against `expects` through every path.
void CheckBudget(const std::string& dir, const std::string& parent_path, const std::string& budget,
                 const std::vector<Expect>& expects) {
  SCOPED_TRACE(budget);
  SlicedBudget sb;
  ASSERT_NO_FATAL_FAILURE(SliceAllFormats(dir, parent_path, budget, &sb));
  const Reader& parent = *sb.parent;
  const Reader& sliced = *sb.sliced;
  // The library cut: the plan's runs as element maps, cut by CutStoredTensor.
  const ElasticBudget* b = parent.elastic()->FindBudget(budget);
  ASSERT_NE(b, nullptr);
  auto plan = format::PlanSlice(*parent.elastic(), parent.tensors(), {}, *b);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::map<std::string, const format::PlannedTensor*> planned;
  for (const auto& p : plan->tensors) planned[p.name] = &p;
  ASSERT_EQ(sliced.tensors().size(), expects.size());
  ASSERT_EQ(plan->tensors.size(), expects.size());
  for (const Expect& e : expects) {
    SCOPED_TRACE(e.name);
    std::vector<float> want = e.quantized ? Gather(DecodeF32(parent, e.source), e.shape, e.stored_index)
                                          : Gather(Values(e.source, Count(e.shape)), e.shape, e.index);
    if (e.quantized) {
      // The stored positions hold the source elements the definition names,
      // up to q8_0 rounding (|error| <= half a step of amax / 127 < 0.02).
      std::vector<float> source = Gather(Values(e.source, Count(e.shape)), e.shape, e.index);
      ASSERT_EQ(source.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(want[i], source[i], 0.02f) << i;
    }
    // Library cut
    ASSERT_TRUE(planned.count(e.name));
    const format::PlannedTensor& p = *planned[e.name];
    auto cut = format::CutStoredTensor(parent, p.source, format::RunMaps(parent.tensors()[p.source].shape, p.runs),
                                       p.name);
    ASSERT_TRUE(cut.ok()) << cut.status();
    auto si = sliced.FindTensor(e.name);
    ASSERT_TRUE(si.has_value());
    auto stored = sliced.StoredStream(*si, 0);
    ASSERT_TRUE(stored.ok());
    const std::vector<uint8_t> sliced_bytes(stored->begin(), stored->end());
    ASSERT_EQ(cut->streams.size(), 1u);
    EXPECT_EQ(cut->streams[0], sliced_bytes);
    EXPECT_EQ(cut->info.shape, sliced.tensors()[*si].shape);
    // The .bolt slice, DecodeBudget, zero-copy views, .gguf, .safetensors.
    ASSERT_NO_FATAL_FAILURE(CheckSlicedTensor(sb, e.name, want));
  }
}

const Keep kHeadsOnly{{true, true}, {2, 2}, {kHeadDim, kHeadDim}};
const Keep kChannelsOnly{{true, true}, {kHeads, kHeads}, {32, 32}};
const Keep kBoth{{true, true}, {2, kHeads}, {32, 32}};
const Keep kDropped{{false, true}, {0, 2}, {0, 32}};

TEST(ElasticProduct, MambaHeadsAndChannelsF32AndQ8) {
  for (bool q8 : {false, true}) {
    SCOPED_TRACE(q8 ? "ssm_out q8_0" : "f32");
    std::string dir = MakeTempDir();
    std::string parent = WriteParent(dir, q8);
    auto r = Reader::Open(parent);
    ASSERT_TRUE(r.ok()) << r.status();
    // A product entry needs manifest version 2, format 1.2.
    EXPECT_EQ((*r)->version().minor, 2u);
    const ElasticManifest* m = (*r)->elastic();
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->version, 2u);
    // ssm_ch is bound only inside products: solved from the dimensions.
    ASSERT_NE(m->FindAxis("ssm_ch"), nullptr);
    EXPECT_EQ(m->FindAxis("ssm_ch")->parent, (std::vector<uint64_t>{kHeadDim, kHeadDim}));
    EXPECT_EQ(m->FindAxis("ssm_heads")->parent, (std::vector<uint64_t>{kHeads, kHeads}));
    EXPECT_EQ(m->bindings[6].dims, std::vector<std::string>{"ssm_heads*ssm_ch"});
    CheckBudget(dir, parent, "heads", MambaExpects(kHeadsOnly, q8));
    CheckBudget(dir, parent, "channels", MambaExpects(kChannelsOnly, q8));
    CheckBudget(dir, parent, "both", MambaExpects(kBoth, q8));
    CheckBudget(dir, parent, "drop", MambaExpects(kDropped, q8));
    // A nested budget cut out of a slice equals the same cut of the parent.
    auto again = RunCli({"slice", dir + "/channels.bolt", "--budget", "both", "-o", dir + "/both2.bolt"});
    ASSERT_EQ(again.exit_code, 0) << again.output;
    auto a = Reader::Open(dir + "/both.bolt");
    auto b = Reader::Open(dir + "/both2.bolt");
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
    for (const auto& t : (*a)->tensors()) EXPECT_EQ(DecodeF32(**a, t.name), DecodeF32(**b, t.name)) << t.name;
  }
}

TEST(ElasticProduct, RegionsOfAProductAreStrided) {
  std::string dir = MakeTempDir();
  std::string parent = WriteParent(dir, false);
  auto r = Reader::Open(parent);
  ASSERT_TRUE(r.ok()) << r.status();
  // "channels": ssm_norm keeps 32 of 64 channels of every head: 4 runs of
  // 32 elements, 64 apart: one region of (4, 64 x 4 bytes) levels.
  auto views = BudgetViews(**r, "channels");
  ASSERT_TRUE(views.ok()) << views.status();
  bool seen = false;
  for (const auto& v : *views) {
    if (v.name != "blk.0.ssm_norm.weight") continue;
    seen = true;
    ASSERT_EQ(v.streams.size(), 1u);
    EXPECT_EQ(v.streams[0].counts, std::vector<uint64_t>{kHeads});
    EXPECT_EQ(v.streams[0].strides, std::vector<uint64_t>{kHeadDim * 4});
    EXPECT_EQ(v.streams[0].run_bytes, 32u * 4);
  }
  EXPECT_TRUE(seen);
  // The runs themselves, from the library.
  auto tensors = BudgetTensors(**r, "both");
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  for (const auto& t : *tensors) {
    if (t.name != "blk.0.ssm_norm.weight") continue;
    // Layer 0 keeps the first head of each group (stored 0 and 2), 32
    // channels each.
    EXPECT_EQ(t.runs[0], (std::vector<ElasticRun>{{0, 32}, {2 * kHeadDim, 32}}));
  }
}

TEST(ElasticProduct, Q8SplitChannelRunIsRefused) {
  std::string dir = MakeTempDir();
  WriteMambaGguf(dir + "/mamba.gguf");
  // 16 channels of every head in layer 0: runs of 16 elements split q8_0
  // blocks of ssm_out.
  std::string json = MambaJson(R"([{"name": "channels", "per_layer": {"ssm_ch": [16, 32]}}])", 16);
  std::ofstream(dir + "/bad.json") << json;
  auto bad = RunCli({"convert", dir + "/mamba.gguf", "-o", dir + "/bad.bolt", "--elastic", dir + "/bad.json", "--codec",
                     "*ssm_out*=q8_0"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("budget \"channels\": tensor \"blk.0.ssm_out.weight\" keeps elements [0, 16) of its "
                            "innermost dimension (product \"ssm_heads*ssm_ch\")"),
            std::string::npos)
      << bad.output;
  EXPECT_NE(bad.output.find("blocks of 32 elements"), std::string::npos) << bad.output;
  // The same file in f32 is fine.
  auto ok = RunCli({"convert", dir + "/mamba.gguf", "-o", dir + "/ok.bolt", "--elastic", dir + "/bad.json"});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

TEST(ElasticProduct, AuthoringPermutesHeadBlocksAndChannelsInEveryHead) {
  // 2 heads of 3 channels; head order {1, 0}; channel order {2, 0, 1}.
  std::vector<io::ElasticTensorShape> shapes = {{"blk.0.a", {2}}, {"blk.0.norm", {6}}, {"blk.0.out", {2, 12}}};
  std::string j = R"({"version": 1, "layers": {"count": 1, "name_pattern": "blk.{L}."},
    "axes": {"h": {"scope": "layer"}, "c": {"scope": "layer", "parent": 3}, "u": {"scope": "layer", "unit_elems": 2}},
    "bindings": [{"tensor": "blk.{L}.a", "dims": ["h"]}, {"tensor": "blk.{L}.norm", "dims": ["h*c"]},
                 {"tensor": "blk.{L}.out", "dims": ["-", "c*u"]}],
    "importance": {"h": {"0": [1, 2]}, "c": {"0": [1, 0, 5]}}})";
  auto a = io::ParseElasticJson(j, "e.json", shapes);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->manifest.version, 2u);
  EXPECT_EQ(a->manifest.axes[1].parent, std::vector<uint64_t>{3});  // from "parent"
  EXPECT_EQ(a->manifest.axes[2].parent, std::vector<uint64_t>{2});  // solved: 12 / (3 x 2)
  EXPECT_EQ(a->MapsFor("blk.0.a", std::vector<uint64_t>{2})[0], (std::vector<uint64_t>{1, 0}));
  // Stored head 0 is source head 1 (elements 3..5), channels in order 2, 0, 1.
  EXPECT_EQ(a->MapsFor("blk.0.norm", std::vector<uint64_t>{6})[0], (std::vector<uint64_t>{5, 3, 4, 2, 0, 1}));
  // c outer (blocks of 2 x 2 elements: u has no order), units of u whole.
  auto out = a->MapsFor("blk.0.out", std::vector<uint64_t>{2, 12});
  EXPECT_TRUE(out[0].empty());
  EXPECT_EQ(out[1], (std::vector<uint64_t>{8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7}));
}

// ---- validation ----

// A valid one-layer manifest: "h" (2 heads) x "c" (4 channels) on a [8]
// norm and a [2, 8] projection, per-head [2] tensor.
struct Fixture {
  ElasticManifest m;
  std::vector<std::vector<uint64_t>> shapes = {{2}, {8}, {2, 8}};
  std::vector<std::string> names = {"blk.0.a", "blk.0.norm", "blk.0.out"};
  std::vector<std::string> codecs = {"f32", "f32", "f32"};
  Fixture() {
    m.version = 2;
    m.layer_count = 1;
    m.layer_pattern = "blk.{L}.";
    m.axes.push_back({"h", ElasticScope::kLayer, 1, 1, {2}, "", "", 0});
    m.axes.push_back({"c", ElasticScope::kLayer, 1, 1, {4}, "", "", 0});
    m.axes.push_back({"width", ElasticScope::kGlobal, 1, 1, {4}, "", "", 0});
    m.bindings.push_back({"blk.{L}.a", {"h"}, {}});
    m.bindings.push_back({"blk.{L}.norm", {"h*c"}, {}});
    m.bindings.push_back({"blk.{L}.out", {"-", "+"}, {{1, {{"h*c", 0}}}}});
    m.budgets.push_back({"half", {true}, {{"h", {1}}, {"c", {2}}}, ""});
  }
  absl::Status Validate() const {
    std::vector<format::ElasticTensorRef> refs;
    for (size_t i = 0; i < names.size(); ++i) refs.push_back({names[i], shapes[i], codecs[i], DType::kF32, nullptr});
    return format::ValidateElastic(m, refs, "f.bolt");
  }
};

TEST(ElasticProduct, ValidationErrorsNameTheBinding) {
  ASSERT_TRUE(Fixture().Validate().ok()) << Fixture().Validate();
  {
    // Kept runs of the valid fixture, from the definition: heads {0} x
    // channels {0, 1} of a [2][4] layout.
    Fixture f;
    format::BindingIndex index(f.m);
    auto runs = format::KeptRuns(f.m, f.m.budgets[0], index.Resolve("blk.0.norm"), std::vector<uint64_t>{8});
    EXPECT_EQ(runs[0], (std::vector<ElasticRun>{{0, 2}}));
    f.m.budgets[0].sizes[0].counts = {2};
    runs = format::KeptRuns(f.m, f.m.budgets[0], index.Resolve("blk.0.norm"), std::vector<uint64_t>{8});
    EXPECT_EQ(runs[0], (std::vector<ElasticRun>{{0, 2}, {4, 2}}));
  }
  struct Case {
    std::string label;
    std::function<void(Fixture&)> edit;
    std::string want;
  };
  const std::string norm = "binding \"blk.{L}.norm\": ";
  std::vector<Case> cases = {
      {"version 1", [](Fixture& f) { f.m.version = 1; },
       "version 1 but binding \"blk.{L}.norm\" has the product dims entry \"h*c\", which needs version 2"},
      {"unknown outer", [](Fixture& f) { f.m.bindings[1].dims[0] = "x*c"; }, norm + "unknown axis \"x\""},
      {"unknown inner", [](Fixture& f) { f.m.bindings[1].dims[0] = "h*"; }, norm + "unknown axis \"\""},
      {"same axis", [](Fixture& f) { f.m.bindings[1].dims[0] = "h*h"; }, norm + "product \"h*h\" names axis \"h\" twice"},
      {"three axes", [](Fixture& f) { f.m.bindings[1].dims[0] = "h*c*h"; },
       norm + "product \"h*c*h\" has more than two axes"},
      {"scopes", [](Fixture& f) { f.m.bindings[1].dims[0] = "h*width"; },
       norm + "product \"h*width\" multiplies axes of different scopes"},
      {"segment axis", [](Fixture& f) { f.m.bindings[2].segmented[0].segments[0].axis = "c*c"; },
       "binding \"blk.{L}.out\": product \"c*c\" names axis \"c\" twice"},
      {"size", [](Fixture& f) { f.shapes[1] = {6}; },
       "tensor \"blk.0.norm\": dimension 0 is 6 but product \"h*c\" has 2 units of 1 x 4 units of 1 = 8 elements"},
      {"segment size", [](Fixture& f) { f.shapes[2] = {2, 9}; },
       "tensor \"blk.0.out\": dimension 1 is 9 but its segments add up to 8"},
      {"overflow",
       [](Fixture& f) {
         f.m.axes[0].unit_elems = uint64_t{1} << 32;
         f.m.axes[1].unit_elems = uint64_t{1} << 32;
         f.shapes[0] = {uint64_t{2} << 32};
       },
       "tensor \"blk.0.norm\": dimension 0: product \"h*c\" spans more than 2^64 elements"},
      {"layer lacks", [](Fixture& f) { f.m.axes[1].parent = {0}; f.m.budgets[0].sizes[1].counts = {0}; },
       "tensor \"blk.0.norm\": dimension 0 is the product \"h*c\" but this layer lacks axis \"c\""},
      {"block split",
       [](Fixture& f) {
         // 2 heads x 32 channels in q8_0: 16 channels per head splits blocks.
         f.m.axes[1].parent = {32};
         f.shapes = {{2}, {64}, {2, 64}};
         f.codecs[1] = "q8_0";
         f.m.budgets[0].sizes[1].counts = {16};
       },
       "budget \"half\": tensor \"blk.0.norm\" keeps elements [0, 16) of its innermost dimension (product \"h*c\"), "
       "which splits its codec's blocks of 32 elements"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    Fixture f;
    c.edit(f);
    absl::Status s = f.Validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_NE(std::string(s.message()).find(c.want), std::string::npos) << s.message();
    EXPECT_EQ(std::string(s.message()).rfind("f.bolt: elastic manifest: ", 0), 0u) << s.message();
  }
  // The q8_0 case with whole blocks (32 channels of each kept head) passes.
  Fixture aligned;
  aligned.m.axes[1].parent = {32};
  aligned.shapes = {{2}, {64}, {2, 64}};
  aligned.codecs[1] = "q8_0";
  aligned.m.budgets[0].sizes[1].counts = {32};
  EXPECT_TRUE(aligned.Validate().ok()) << aligned.Validate();
}

TEST(ElasticProduct, JsonErrorsAreClear) {
  std::vector<io::ElasticTensorShape> shapes = {{"blk.0.a", {2}}, {"blk.0.norm", {8}}};
  auto json = [](const std::string& norm_dims, const std::string& c_axis) {
    return R"({"version": 1, "layers": {"count": 1, "name_pattern": "blk.{L}."},
      "axes": {"h": {"scope": "layer"}, "c": )" +
           c_axis + R"(, "g": {"scope": "global", "parent": 2}},
      "bindings": [{"tensor": "blk.{L}.a", "dims": ["h"]}, {"tensor": "blk.{L}.norm", "dims": [)" +
           norm_dims + "]}]}";
  };
  const std::string c = R"({"scope": "layer"})";
  auto ok = io::ParseElasticJson(json(R"("h*c")", c), "e.json", shapes);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->manifest.axes[1].parent, std::vector<uint64_t>{4});
  EXPECT_EQ(ok->manifest.version, 2u);
  struct Case {
    std::string json, want;
  };
  std::vector<Case> cases = {
      {json(R"("h*x")", c), "bindings[1]: unknown axis \"x\" in product \"h*x\""},
      {json(R"("h*h")", c), "bindings[1]: product \"h*h\" names axis \"h\" twice"},
      {json(R"("h*c*h")", c), "bindings[1]: product \"h*c*h\" has more than two axes"},
      {json(R"("h*g")", c), "bindings[1]: product \"h*g\" multiplies axes of different scopes"},
      {json(R"("h*c")", R"({"scope": "layer", "unit_elems": 3})"),
       "tensor \"blk.0.norm\": dimension 0 (8) is not a positive multiple of 6"},
      {json(R"("h*c")", R"({"scope": "layer", "parent": 3})"),
       "tensor \"blk.0.norm\": dimension 0 is 8 but product \"h*c\" spans 6 elements"},
      {json(R"({"segments": ["c*h"]})", c), "the sizes of both axes of product"},
  };
  // Both factors unknown: bind "c*h" on a tensor no plain binding sizes.
  cases.back().json = R"({"version": 1, "layers": {"count": 1, "name_pattern": "blk.{L}."},
      "axes": {"h": {"scope": "layer"}, "c": {"scope": "layer"}},
      "bindings": [{"tensor": "blk.{L}.norm", "dims": ["c*h"]}]})";
  for (const Case& k : cases) {
    auto s = io::ParseElasticJson(k.json, "e.json", shapes).status();
    EXPECT_FALSE(s.ok()) << k.want;
    EXPECT_NE(std::string(s.message()).find(k.want), std::string::npos) << s.message();
  }
}

// The fuzz seeds holding product entries are valid against the fuzz model
// and reach the product code: their budgets cut product dimensions (runs
// that are not one prefix), and the fuzz targets' own checks hold.
TEST(ElasticProduct, FuzzSeedsReachProducts) {
  const std::vector<TensorInfo> tensors = fuzz::ElasticFuzzTensors();
  auto read = [](const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  };
  auto cuts_a_product = [&](const ElasticManifest& m) {
    bool product_cut = false;
    for (const auto& b : m.budgets) {
      auto plan = format::PlanSlice(m, tensors, {}, b);
      EXPECT_TRUE(plan.ok()) << plan.status();
      if (!plan.ok()) return false;
      for (const auto& p : plan->tensors) {
        const std::string& name = tensors[p.source].name;
        bool product = name.find(".q.") != std::string::npos || name.find("norm") != std::string::npos;
        product_cut |= product && p.runs[0].size() > 1;
      }
    }
    return product_cut;
  };
  const std::string corpus = std::string(BOLTPACK_SOURCE_DIR) + "/fuzz/corpus/";
  v1::ElasticManifest proto;
  ASSERT_TRUE(proto.ParseFromString(read(corpus + "elastic_manifest/v2_product.pb")));
  ElasticManifest m = format::ElasticFromProto(proto);
  ASSERT_TRUE(format::ValidateElastic(m, fuzz::RefsOf(tensors), "seed").ok())
      << format::ValidateElastic(m, fuzz::RefsOf(tensors), "seed");
  EXPECT_TRUE(cuts_a_product(m));
  fuzz::CheckEverySlice(m, tensors);  // traps on an inconsistent slice
  fuzz::CheckEveryCut(m, tensors);
  // The misaligned seed is refused by the run-by-run block check.
  ASSERT_TRUE(proto.ParseFromString(read(corpus + "elastic_manifest/v2_product_misaligned.pb")));
  absl::Status bad = format::ValidateElastic(format::ElasticFromProto(proto), fuzz::RefsOf(tensors), "seed");
  EXPECT_NE(std::string(bad.message()).find("(product \"kv*hd\"), which splits its codec's blocks of 32"),
            std::string::npos)
      << bad;
  // The authoring JSON seed.
  std::vector<io::ElasticTensorShape> shapes;
  for (const auto& t : tensors) shapes.push_back({t.name, t.shape});
  auto a = io::ParseElasticJson(read(corpus + "elastic_json/product_heads_channels.json"), "seed.json", shapes);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(format::ValidateElastic(a->manifest, fuzz::RefsOf(tensors), "seed").ok());
  EXPECT_TRUE(cuts_a_product(a->manifest));
  EXPECT_FALSE(a->MapsFor("blk.0.q.weight", std::vector<uint64_t>{64, 64})[0].empty());
}

}  // namespace
}  // namespace boltpack
