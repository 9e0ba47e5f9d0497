// Format 1.4 flat bindings (spec/elastic.md §1 "Flat bindings", §2 rules 1,
// 3, 4, 6 and 9) and the Mamba-2 keys of a slice (§5.2 [E-5.2.3]): llama.cpp's
// grouped ssm_norm [n_group][d_inner / n_group] bound flat as "h*c", cut as
// the tensor's own two dimensions (outer whole, the same columns of every
// row), checked against a reference written from the definition; then
// `{arch}.ssm.inner_size` / `ssm.time_step_rank` rewritten by `slice` and a
// budget whose Mamba layers keep different head counts refused.
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "boltpack/reader.h"
#include "format/elastic_plan.h"
#include "format/elastic_runs.h"
#include "format/elastic_validate.h"
#include "gtest/gtest.h"
#include "io/elastic_json.h"
#include "io/gguf.h"
#include "tests/elastic_reference.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::Count;
using testing::MakeTempDir;
using testing::RunCli;
using testing::Values;

// 2 Mamba layers of 4 heads of 4 channels in 2 groups (d_inner 16), model 8.
constexpr uint64_t kHeads = 4, kGroups = 2, kHeadDim = 4, kInner = kHeads * kHeadDim, kModel = 8;

struct SourceTensor {
  std::string name;
  std::vector<uint64_t> shape;  // outermost first
};

std::vector<SourceTensor> Tensors() {
  std::vector<SourceTensor> t = {{"token_embd.weight", {4, kModel}}};
  for (int l = 0; l < 2; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    t.push_back({p + "ssm_in.weight", {2 * kInner + kHeads, kModel}});  // z, x, dt
    t.push_back({p + "ssm_a", {kHeads, 1}});
    t.push_back({p + "ssm_norm.weight", {kGroups, kInner / kGroups}});
    t.push_back({p + "ssm_out.weight", {kModel, kInner}});
  }
  return t;
}

void WriteGguf(const std::string& path) {
  Metadata kv;
  kv.emplace_back("general.architecture", MetaValue::String("nemotron_h_moe"));
  kv.emplace_back("nemotron_h_moe.block_count", MetaValue::Uint(ValueType::kUint32, 2));
  kv.emplace_back("nemotron_h_moe.ssm.inner_size", MetaValue::Uint(ValueType::kUint32, kInner));
  kv.emplace_back("nemotron_h_moe.ssm.time_step_rank", MetaValue::Uint(ValueType::kUint32, kHeads));
  kv.emplace_back("nemotron_h_moe.ssm.group_count", MetaValue::Uint(ValueType::kUint32, kGroups));
  std::vector<io::GgufTensorDecl> decls;
  for (const auto& t : Tensors()) decls.push_back({t.name, {t.shape.rbegin(), t.shape.rend()}, 0});
  auto w = io::GgufWriter::Create(path, kv, decls);
  ASSERT_TRUE(w.ok()) << w.status();
  for (const auto& t : Tensors()) {
    auto v = Values(t.name, Count(t.shape));
    ASSERT_TRUE((*w)->WriteNext({reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4}).ok());
  }
  ASSERT_TRUE((*w)->Finish().ok());
}

std::string Json(const std::string& budgets, const std::string& importance = "") {
  return R"({"version": 1, "layers": {"count": 2, "name_pattern": "blk.{L}."},
    "axes": {"h": {"scope": "layer", "groups": 2}, "c": {"scope": "layer"}},
    "bindings": [
      {"tensor": "blk.{L}.ssm_in.weight", "dims": [{"segments": ["h*c", "h*c", "h"]}, "-"]},
      {"tensor": "blk.{L}.ssm_a", "dims": ["h", "-"]},
      {"tensor": "blk.{L}.ssm_norm.weight", "flat": true, "dims": ["h*c"]},
      {"tensor": "blk.{L}.ssm_out.weight", "dims": ["-", "h*c"]}],)" +
         importance + R"( "budgets": [)" + budgets + "]}";
}

const char* kBudgets = R"({"name": "half", "per_layer": {"h": [2, 2]}})";
const char* kUneven = R"({"name": "uneven", "per_layer": {"h": [2, 4]}})";

std::vector<float> F32Of(absl::Span<const uint8_t> bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

std::string Convert(const std::string& dir, const std::string& json) {
  WriteGguf(dir + "/m.gguf");
  std::ofstream(dir + "/e.json") << json;
  auto c = RunCli({"convert", dir + "/m.gguf", "-o", dir + "/e.bolt", "--elastic", dir + "/e.json"});
  EXPECT_EQ(c.exit_code, 0) << c.output;
  return dir + "/e.bolt";
}

TEST(ElasticFlat, FlatRunsByDim) {
  using R = std::vector<ElasticRun>;
  std::vector<uint64_t> shape{2, 8};
  // Head 0 of each group of 2 heads of 4: columns [0, 4) of both rows.
  auto by = format::FlatRunsByDim({{0, 4}, {8, 4}}, shape);
  ASSERT_TRUE(by.has_value());
  EXPECT_EQ((*by)[0], (R{{0, 2}}));
  EXPECT_EQ((*by)[1], (R{{0, 4}}));
  // Channels cut inside heads: the same two runs in each row.
  by = format::FlatRunsByDim({{0, 2}, {4, 2}, {8, 2}, {12, 2}}, shape);
  ASSERT_TRUE(by.has_value());
  EXPECT_EQ((*by)[1], (R{{0, 2}, {4, 2}}));
  EXPECT_EQ(format::FlatRunsByDim({{0, 16}}, shape)->at(1), (R{{0, 8}}));  // whole
  EXPECT_FALSE(format::FlatRunsByDim({{0, 8}}, shape));                   // row 1 dropped
  EXPECT_FALSE(format::FlatRunsByDim({{0, 4}, {12, 4}}, shape));          // different columns
  EXPECT_FALSE(format::FlatRunsByDim({{4, 8}}, shape));                   // a run across rows
  EXPECT_FALSE(format::FlatRunsByDim({{0, 4}, {8, 2}}, shape));           // row 1 short
  EXPECT_EQ(format::FlatRunsByDim({{2, 3}}, std::vector<uint64_t>{8})->at(0), (R{{2, 3}}));  // rank 1
}

TEST(ElasticFlat, JsonWritesVersion3AndSolvesTheProduct) {
  std::vector<io::ElasticTensorShape> shapes;
  for (const auto& t : Tensors()) shapes.push_back({t.name, t.shape});
  auto a = io::ParseElasticJson(Json(kBudgets), "e.json", shapes);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->manifest.version, 3u);
  EXPECT_TRUE(a->manifest.bindings[2].flat);
  EXPECT_FALSE(a->manifest.bindings[1].flat);
  EXPECT_EQ(a->manifest.axes[0].parent, (std::vector<uint64_t>{kHeads, kHeads}));
  EXPECT_EQ(a->manifest.axes[1].parent, (std::vector<uint64_t>{kHeadDim, kHeadDim}));  // 16 / 4 of the flat norm
  auto bad = [&](const std::string& json, const std::string& want) {
    auto r = io::ParseElasticJson(json, "e.json", shapes);
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_NE(std::string(r.status().message()).find(want), std::string::npos) << r.status();
  };
  auto edit = [](std::string j, const std::string& from, const std::string& to) {
    return j.replace(j.find(from), from.size(), to);
  };
  std::string two = edit(Json(kBudgets), R"("dims": ["h*c"]})", R"("dims": ["h", "c"]})");
  bad(two, "bindings[2]: a flat binding binds the tensor's elements as one dimension: \"dims\" must have exactly "
           "one entry, not 2");
  bad(edit(Json(kBudgets), "\"flat\": true", "\"flat\": 1"), "bindings[2]: \"flat\" must be true or false");
}

TEST(ElasticFlat, ImportanceMovesWholeHeadsInsideTheirRows) {
  std::vector<io::ElasticTensorShape> shapes;
  for (const auto& t : Tensors()) shapes.push_back({t.name, t.shape});
  const std::vector<uint64_t> norm{kGroups, kInner / kGroups};
  // Layer 0: head 1 beats head 0 (group 0), head 2 beats head 3 (group 1):
  // row 0 swaps its heads, row 1 keeps its order, so the map is over the
  // flat elements. Layer 1: both groups swap: one map of the columns.
  auto a = io::ParseElasticJson(Json(kBudgets, R"( "importance": {"h": {"0": [1, 2, 4, 3], "1": [1, 2, 3, 4]}},)"),
                                "e.json", shapes);
  ASSERT_TRUE(a.ok()) << a.status();
  auto p0 = a->PermutationFor("blk.0.ssm_norm.weight", norm);
  EXPECT_EQ(p0.grid, (std::vector<uint64_t>{kInner}));
  ASSERT_EQ(p0.maps.size(), 1u);
  EXPECT_EQ(p0.maps[0], (std::vector<uint64_t>{4, 5, 6, 7, 0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15}));
  auto p1 = a->PermutationFor("blk.1.ssm_norm.weight", norm);
  EXPECT_EQ(p1.grid, norm);
  ASSERT_EQ(p1.maps.size(), 2u);
  EXPECT_TRUE(p1.maps[0].empty());
  EXPECT_EQ(p1.maps[1], (std::vector<uint64_t>{4, 5, 6, 7, 0, 1, 2, 3}));
  // Through convert and slice: "half" keeps each row's best head.
  std::string dir = MakeTempDir();
  std::string parent = Convert(dir, Json(kBudgets, R"( "importance": {"h": {"0": [1, 2, 4, 3], "1": [1, 2, 3, 4]}},)"));
  auto s = RunCli({"slice", parent, "--budget", "half", "-o", dir + "/half.gguf"});
  ASSERT_EQ(s.exit_code, 0) << s.output;
  auto g = io::GgufModel::Open(dir + "/half.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  for (int l = 0; l < 2; ++l) {
    std::string name = "blk." + std::to_string(l) + ".ssm_norm.weight";
    std::vector<float> src = Values(name, kInner);
    // Kept heads: layer 0 heads 1 and 2, layer 1 heads 1 and 3.
    std::vector<uint64_t> heads = l == 0 ? std::vector<uint64_t>{1, 2} : std::vector<uint64_t>{1, 3};
    std::vector<float> want;
    for (uint64_t h : heads) {
      for (uint64_t c = 0; c < kHeadDim; ++c) want.push_back(src[h * kHeadDim + c]);
    }
    auto i = (*g)->FindTensor(name);
    ASSERT_TRUE(i.has_value());
    EXPECT_EQ(F32Of((*g)->TensorBytes(*i)), want) << name;
  }
}

// A one-layer manifest over ssm_norm [2][8] (flat "h*c") and ssm_a [4].
struct Fixture {
  ElasticManifest m;
  std::vector<std::vector<uint64_t>> shapes = {{kHeads}, {kGroups, 8}};
  std::vector<std::string> names = {"blk.0.ssm_a", "blk.0.ssm_norm.weight"};
  std::string norm_codec = "f32";
  Fixture() {
    m.version = 3;
    m.layer_count = 1;
    m.layer_pattern = "blk.{L}.";
    m.axes.push_back({"h", ElasticScope::kLayer, 1, 1, {kHeads}, "", "", kGroups});
    m.axes.push_back({"c", ElasticScope::kLayer, 1, 1, {4}, "", "", 0});
    m.bindings.push_back({"blk.{L}.ssm_a", {"h"}, {}});
    m.bindings.push_back({"blk.{L}.ssm_norm.weight", {"h*c"}, {}, true});
    m.budgets.push_back({"half", {true}, {{"h", {2}}, {"c", {4}}}, ""});
  }
  absl::Status Validate() const {
    std::vector<format::ElasticTensorRef> refs = {{names[0], shapes[0], "f32", DType::kF32, nullptr},
                                                  {names[1], shapes[1], norm_codec, DType::kF32, nullptr}};
    return format::ValidateElastic(m, refs, "f.bolt");
  }
};

TEST(ElasticFlat, ValidationRefusesWhatTheDimensionsCannotExpress) {
  ASSERT_TRUE(Fixture().Validate().ok()) << Fixture().Validate();
  {
    Fixture f;
    format::BindingIndex index(f.m);
    auto runs = format::KeptRuns(f.m, f.m.budgets[0], index.Resolve("blk.0.ssm_norm.weight"), f.shapes[1]);
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_EQ(runs[0], (std::vector<ElasticRun>{{0, 2}}));
    EXPECT_EQ(runs[1], (std::vector<ElasticRun>{{0, 4}}));
    EXPECT_EQ(format::KeptExtents(f.m, f.m.budgets[0], index.Resolve("blk.0.ssm_norm.weight"), f.shapes[1]),
              (std::vector<uint64_t>{2, 4}));
  }
  struct Case {
    std::string label;
    std::function<void(Fixture&)> edit;
    std::string want;
  };
  std::vector<Case> cases = {
      {"version 2", [](Fixture& f) { f.m.version = 2; },
       "version 2 but binding \"blk.{L}.ssm_norm.weight\" is flat, which needs version 3 (format 1.4)"},
      {"two dims", [](Fixture& f) { f.m.bindings[1].dims = {"h", "c"}; },
       "binding \"blk.{L}.ssm_norm.weight\": a flat binding has exactly one dims entry (the tensor's elements taken "
       "flat), not 2"},
      {"size", [](Fixture& f) { f.shapes[1] = {kGroups, 6}; },
       "tensor \"blk.0.ssm_norm.weight\" (flat, 12 elements): dimension 0 is 12 but product \"h*c\" has 4 units of 1 x "
       "4 units of 1 = 16 elements there"},
      {"ungrouped", [](Fixture& f) { f.m.axes[0].groups = 0; },
       "budget \"half\": tensor \"blk.0.ssm_norm.weight\" of flat binding \"blk.{L}.ssm_norm.weight\" keeps 8 of its "
       "elements (its first kept run is [0, 8)), which is not its outer dimensions whole with the same elements of "
       "every row of 8"},
      {"rows of one head", [](Fixture& f) { f.shapes[1] = {4, 4}; },
       "budget \"half\": tensor \"blk.0.ssm_norm.weight\" of flat binding \"blk.{L}.ssm_norm.weight\" keeps 8 of its "
       "elements"},
      {"q8_0 block", [](Fixture& f) {
         // Rows of 64 in q8_0: half of each group's 2 heads of 32 keeps 32
         // (a block); channels 16 of 32 split them.
         f.shapes[1] = {kGroups, 64};
         f.m.axes[1].parent = {32};
         f.m.budgets[0].sizes[1].counts = {16};
         f.norm_codec = "q8_0";
       },
       "budget \"half\": tensor \"blk.0.ssm_norm.weight\" keeps elements [0, 16) of its innermost dimension (flat "
       "binding \"blk.{L}.ssm_norm.weight\"), which splits its codec's blocks of 32 elements"},
  };
  for (const Case& c : cases) {
    Fixture f;
    c.edit(f);
    absl::Status s = f.Validate();
    ASSERT_FALSE(s.ok()) << c.label;
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << c.label;
    EXPECT_NE(std::string(s.message()).find(c.want), std::string::npos) << c.label << ": " << s.message();
  }
  Fixture q8;  // the same rows in q8_0, cut on whole blocks: valid
  q8.shapes[1] = {kGroups, 64};
  q8.m.axes[1].parent = {32};
  q8.m.budgets[0].sizes[1].counts = {32};
  q8.norm_codec = "q8_0";
  EXPECT_TRUE(q8.Validate().ok()) << q8.Validate();
}

// Slices "half" to .gguf and .bolt: ssm_norm [2][4] holding the first head
// of each group row, byte for byte; ssm.inner_size 8 and time_step_rank 2.
TEST(ElasticFlat, SliceCutsRowsAndRewritesTheMambaKeys) {
  std::string dir = MakeTempDir();
  std::string parent = Convert(dir, Json(kBudgets));
  {
    auto r = Reader::Open(parent);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)->version().minor, 4u);
    EXPECT_EQ((*r)->elastic()->version, 3u);
  }
  auto s = RunCli({"slice", parent, "--budget", "half", "-o", dir + "/half.gguf"});
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_NE(s.output.find("ssm.inner_size"), std::string::npos) << s.output;
  auto g = io::GgufModel::Open(dir + "/half.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  std::map<std::string, uint64_t> keys;
  for (const auto& [k, v] : (*g)->metadata()) {
    if (v.type == ValueType::kUint32) keys[k] = v.u;
  }
  EXPECT_EQ(keys["nemotron_h_moe.ssm.inner_size"], 8u);
  EXPECT_EQ(keys["nemotron_h_moe.ssm.time_step_rank"], 2u);
  EXPECT_EQ(keys["nemotron_h_moe.ssm.group_count"], kGroups);
  for (int l = 0; l < 2; ++l) {
    std::string name = "blk." + std::to_string(l) + ".ssm_norm.weight";
    auto i = (*g)->FindTensor(name);
    ASSERT_TRUE(i.has_value()) << name;
    EXPECT_EQ((*g)->tensors()[*i].Shape(), (std::vector<uint64_t>{kGroups, kHeadDim}));
    std::vector<float> src = Values(name, kInner);
    std::vector<float> want;  // row g: its first head's channels, elements g * 8 + [0, 4)
    for (uint64_t r = 0; r < kGroups; ++r) {
      for (uint64_t c = 0; c < kHeadDim; ++c) want.push_back(src[r * (kInner / kGroups) + c]);
    }
    EXPECT_EQ(F32Of((*g)->TensorBytes(*i)), want) << name;
    auto out = (*g)->FindTensor("blk." + std::to_string(l) + ".ssm_out.weight");
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ((*g)->tensors()[*out].Shape(), (std::vector<uint64_t>{kModel, 8}));
  }
  // The .bolt slice: the same tensor, the keys rewritten, a valid manifest.
  s = RunCli({"slice", parent, "--budget", "half", "-o", dir + "/half.bolt"});
  ASSERT_EQ(s.exit_code, 0) << s.output;
  auto b = Reader::Open(dir + "/half.bolt");
  ASSERT_TRUE(b.ok()) << b.status();
  auto i = (*b)->FindTensor("blk.1.ssm_norm.weight");
  ASSERT_TRUE(i.has_value());
  EXPECT_EQ((*b)->tensors()[*i].shape, (std::vector<uint64_t>{kGroups, kHeadDim}));
  for (const auto& [k, v] : (*b)->metadata()) {
    if (k == "nemotron_h_moe.ssm.inner_size") {
      EXPECT_EQ(v.u, 8u);
    }
    if (k == "nemotron_h_moe.ssm.time_step_rank") {
      EXPECT_EQ(v.u, 2u);
    }
  }
}

TEST(ElasticFlat, PerLayerMambaHeadCountsAreRefusedWhereLlamaCppKeysAre) {
  const std::string want =
      "budget \"uneven\": its kept Mamba layers differ in inner size (heads x head_dim) (layer 0: 8, layer 1: 16); "
      "llama.cpp reads \"nemotron_h_moe.ssm.inner_size\" as one number for every layer";
  std::string dir = MakeTempDir();
  // convert --elastic refuses the budget before writing anything.
  WriteGguf(dir + "/m.gguf");
  std::ofstream(dir + "/e.json") << Json(std::string(kBudgets) + ", " + kUneven);
  auto c = RunCli({"convert", dir + "/m.gguf", "-o", dir + "/e.bolt", "--elastic", dir + "/e.json"});
  EXPECT_NE(c.exit_code, 0);
  EXPECT_NE(c.output.find(want), std::string::npos) << c.output;
  // A file holding such a budget (written without the keys' check) is
  // refused by the slice plan, for .gguf and .bolt alike.
  std::string parent = Convert(dir, Json(kBudgets));
  auto r = Reader::Open(parent);
  ASSERT_TRUE(r.ok()) << r.status();
  ElasticBudget uneven{"uneven", {true, true}, {{"h", {2, 4}}}, ""};
  auto plan = format::PlanSlice(*(*r)->elastic(), (*r)->tensors(), (*r)->metadata(), uneven);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(std::string(plan.status().message()).find(want), std::string::npos) << plan.status();
  // Without the llama.cpp keys the same budget slices (per-layer shapes).
  Metadata plain;
  EXPECT_TRUE(format::PlanSlice(*(*r)->elastic(), (*r)->tensors(), plain, uneven).ok());
}

}  // namespace
}  // namespace boltpack
