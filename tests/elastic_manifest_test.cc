// The elastic manifest: authoring JSON parsing, validation rules (each
// error names what is wrong), the proto round trip and layer-name matching.
#include <algorithm>
#include <string>
#include <vector>

#include "boltpack/elastic.h"
#include "boltpack/reader.h"
#include "boltpack/writer.h"
#include "boltpack_proto/boltpack.pb.h"
#include "format/elastic_manifest.h"
#include "format/elastic_validate.h"
#include "format/layout.h"
#include "gtest/gtest.h"
#include "io/elastic_json.h"
#include "tests/manifest_rewrite.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::WithManifest;

// Two layers of an MoE: experts [E, F, 64] up, [E, 64, F] down.
std::vector<io::ElasticTensorShape> Shapes() {
  return {{"blk.0.up.weight", {4, 64, 64}}, {"blk.0.down.weight", {4, 64, 64}},
          {"blk.1.up.weight", {4, 96, 64}}, {"blk.1.down.weight", {4, 64, 96}},
          {"out.weight", {10, 64}}};
}

std::string Json(const std::string& budgets, const std::string& extra = "") {
  return R"({"version": 1, "layers": {"count": 2, "name_pattern": "blk.{L}."},
    "axes": {"experts": {"scope": "layer"}, "moe_ffn": {"scope": "layer", "granularity": 16},
             "top_k": {"scope": "layer", "parent": 2, "at_most": "experts"}},
    "bindings": [{"tensor": "blk.{L}.up.weight", "dims": ["experts", "moe_ffn", "-"]},
                 {"tensor": "blk.{L}.down.weight", "dims": ["experts", "-", "moe_ffn"]}],
    "budgets": [)" + budgets + "]" + extra + "}";
}

// Validates with q8_0 (32-element blocks) on the down projections.
absl::Status Check(const std::string& json) {
  auto shapes = Shapes();
  auto a = io::ParseElasticJson(json, "e.json", shapes);
  if (!a.ok()) return a.status();
  CodecParams none;
  std::vector<format::ElasticTensorRef> refs;
  for (const auto& t : shapes) {
    bool down = t.name.find("down") != std::string::npos;
    refs.push_back({t.name, t.shape, down ? "q8_0" : "f32", DType::kF32, &none});
  }
  return format::ValidateElastic(a->manifest, refs, "e.bolt");
}

void ExpectError(const std::string& json, std::vector<std::string> parts) {
  absl::Status s = Check(json);
  ASSERT_FALSE(s.ok()) << json;
  for (const auto& p : parts) EXPECT_NE(s.message().find(p), std::string::npos) << s.message() << "\n  lacks: " << p;
}

TEST(ElasticJson, ValidBudgetsResolveParentSizes) {
  auto a = io::ParseElasticJson(
      Json(R"({"name": "b", "per_layer": {"experts": [2, 3], "moe_ffn": [32, 64], "top_k": [1, 2]}})"), "e.json",
      Shapes());
  ASSERT_TRUE(a.ok()) << a.status();
  const auto& m = a->manifest;
  ASSERT_EQ(m.axes.size(), 3u);
  EXPECT_EQ(m.axes[0].parent, (std::vector<uint64_t>{4, 4}));
  EXPECT_EQ(m.axes[1].parent, (std::vector<uint64_t>{64, 96}));
  EXPECT_EQ(m.axes[2].parent, (std::vector<uint64_t>{2, 2}));
  EXPECT_EQ(m.axes[0].metadata_key, "expert_count");
  EXPECT_TRUE(Check(Json(R"({"name": "b", "per_layer": {"experts": [2, 3], "moe_ffn": [32, 64], "top_k": [1, 2]}})")).ok());
}

TEST(ElasticJson, QuantBlockMisalignmentNamesBudgetTensorAndBlock) {
  // 48 channels: a multiple of the granularity 16 but not of q8_0's 32.
  ExpectError(Json(R"({"name": "narrow", "per_layer": {"moe_ffn": [48, 64]}})"),
              {"budget \"narrow\"", "tensor \"blk.0.down.weight\"", "block of 32"});
}

TEST(ElasticJson, RuleViolationsAreNamed) {
  ExpectError(Json(R"({"name": "g", "per_layer": {"moe_ffn": [40, 64]}})"), {"budget \"g\"", "granularity 16"});
  ExpectError(Json(R"({"name": "k", "per_layer": {"experts": [1, 4], "top_k": [2, 2]}})"),
              {"budget \"k\"", "top_k", "more than \"experts\""});
  ExpectError(Json(R"({"name": "a", "per_layer": {"experts": [2, 2]}},
                      {"name": "b", "nested_in": "a", "per_layer": {"experts": [3, 2]}})"),
              {"budget \"b\"", "not nested"});
  ExpectError(Json(R"({"name": "b", "nested_in": "later"}, {"name": "later"})"), {"nested_in", "listed before"});
  ExpectError(Json(R"({"name": "z", "per_layer": {"experts": [5, 4]}})"), {"budget \"z\"", "keeps 5 of 4"});
  ExpectError(Json(R"({"name": "l", "layer_keep": [1]})"), {"layer_keep must list 2"});
  ExpectError(Json(R"({"name": "none", "layer_keep": [0, 0]})"), {"keeps no layer"});
  ExpectError(Json(R"({"name": "d"}, {"name": "d"})"), {"budget \"d\" is given twice"});
  ExpectError(Json(R"({"name": "u", "per_layer": {"hidden": [1, 1]}})"), {"unknown axis"});
  ExpectError(Json("", R"(, "extra": 1)"), {"unknown key \"extra\""});
  ExpectError(Json("", R"(, "importance": {"experts": {"0": [1, 2, 3]}})"), {"expected an array of 4 scores"});
  ExpectError(Json("", R"(, "importance": {"experts": {"7": [1, 2, 3, 4]}})"), {"layer index below 2"});
}

TEST(ElasticJson, BindingsMustFitTheTensors) {
  auto shapes = Shapes();
  shapes[2].shape = {4, 96, 64, 1};
  auto a = io::ParseElasticJson(Json(""), "e.json", shapes);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("tensor \"blk.1.up.weight\": has 4 dimensions"), std::string::npos)
      << a.status().message();
  // Two tensors disagree on the units of one axis in one layer.
  shapes = Shapes();
  shapes[1].shape = {3, 64, 64};
  a = io::ParseElasticJson(Json(""), "e.json", shapes);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("blk.0.down.weight"), std::string::npos) << a.status().message();
  // A binding that matches nothing is a typo.
  std::string typo = R"({"version": 1, "layers": {"count": 2, "name_pattern": "blk.{L}."},
    "axes": {"experts": {"scope": "layer", "parent": 4}},
    "bindings": [{"tensor": "blk.{L}.upp.weight", "dims": ["experts", "-", "-"]}]})";
  auto b = io::ParseElasticJson(typo, "e.json", Shapes());
  ASSERT_TRUE(b.ok()) << b.status();
  // The refs are views: the shapes they point into must outlive them.
  const auto typo_shapes = Shapes();
  std::vector<format::ElasticTensorRef> refs;
  for (const auto& t : typo_shapes) refs.push_back({t.name, t.shape, "f32", DType::kF32, nullptr});
  absl::Status s = format::ValidateElastic(b->manifest, refs, "e.bolt");
  EXPECT_NE(s.message().find("binding \"blk.{L}.upp.weight\" matches no tensor"), std::string::npos) << s;
}

TEST(ElasticJson, ImportanceOrdersDescendingTiesByIndex) {
  auto a = io::ParseElasticJson(Json("", R"(, "importance": {"experts": {"1": [0.5, 2, 0.5, 3]}})"), "e.json",
                                Shapes());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->manifest.importance.size(), 1u);
  EXPECT_EQ(a->manifest.importance[0].order, (std::vector<uint32_t>{3, 1, 0, 2}));
  EXPECT_EQ(a->manifest.importance[0].scores, (std::vector<float>{3, 2, 0.5, 0.5}));
  // Layer 1's up: experts move as whole [96, 64] slabs; layer 0 is unchanged.
  auto maps = a->MapsFor("blk.1.up.weight", std::vector<uint64_t>{4, 96, 64});
  ASSERT_EQ(maps.size(), 3u);
  EXPECT_EQ(maps[0], (std::vector<uint64_t>{3, 1, 0, 2}));
  EXPECT_TRUE(maps[1].empty() && maps[2].empty());
  auto none = a->MapsFor("blk.0.up.weight", std::vector<uint64_t>{4, 64, 64});
  EXPECT_TRUE(none[0].empty());
}

TEST(ElasticManifest, ProtoRoundTripAndWriterValidation) {
  auto a = io::ParseElasticJson(
      Json(R"({"name": "b", "layer_keep": [1, 0], "per_layer": {"experts": [2, null], "moe_ffn": [32, null]}})",
           R"(, "importance": {"moe_ffn": {"0": [)" + [] {
             std::string s;
             for (int i = 0; i < 64; ++i) s += (i ? "," : "") + std::to_string(i % 7);
             return s;
           }() + "]}}"),
      "e.json", Shapes());
  ASSERT_TRUE(a.ok()) << a.status();
  v1::ElasticManifest proto;
  format::ElasticToProto(a->manifest, &proto);
  ElasticManifest back = format::ElasticFromProto(proto);
  v1::ElasticManifest again;
  format::ElasticToProto(back, &again);
  EXPECT_EQ(proto.SerializeAsString(), again.SerializeAsString());
  EXPECT_EQ(back.budgets[0].sizes[0].counts, (std::vector<uint64_t>{2, 0}));  // dropped layer -> 0

  // The writer refuses an elastic manifest that does not fit its tensors.
  std::string dir = testing::MakeTempDir();
  auto w = Writer::Create(dir + "/x.bolt");
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->SetElastic(a->manifest).ok());
  absl::Status done = (*w)->Finish();
  EXPECT_FALSE(done.ok());
  EXPECT_NE(done.message().find("elastic manifest"), std::string::npos) << done;
}

TEST(ElasticManifest, ValidatorRejectsHostileValues) {
  ElasticManifest m;
  m.layer_count = 1;
  m.layer_pattern = "blk.{L}.";
  m.axes.push_back({"x", ElasticScope::kLayer, 1, 1, {4}, "", ""});
  m.bindings.push_back({"blk.{L}.w", {"x"}});
  std::vector<uint64_t> shape{4};
  std::vector<format::ElasticTensorRef> refs{{"blk.0.w", shape, "f32", DType::kF32, nullptr}};
  EXPECT_TRUE(format::ValidateElastic(m, refs, "f").ok());
  auto bad = [&](auto mutate, const std::string& want) {
    ElasticManifest c = m;
    mutate(c);
    absl::Status s = format::ValidateElastic(c, refs, "f");
    EXPECT_FALSE(s.ok()) << want;
    EXPECT_NE(std::string(s.message()).find(want), std::string::npos) << s.message();
  };
  bad([](ElasticManifest& c) { c.version = 4; }, "version 4 is not 1, 2 or 3");
  bad([](ElasticManifest& c) { c.axes[0].groups = 2; }, "need version 2");
  bad([](ElasticManifest& c) { c.prefix_order = false; }, "storage order");
  bad([](ElasticManifest& c) { c.layer_count = 70000; }, "layer_count 70000");
  bad([](ElasticManifest& c) { c.layer_pattern = "blk.{L}.{L}"; }, "exactly one");
  bad([](ElasticManifest& c) { c.axes[0].granularity = 0; }, "granularity 0");
  bad([](ElasticManifest& c) { c.axes[0].unit_elems = 0; }, "unit_elems 0");
  bad([](ElasticManifest& c) { c.axes[0].parent = {4, 4}; }, "2 parent sizes");
  bad([](ElasticManifest& c) { c.axes[0].parent = {5}; }, "has 5 units");
  bad([](ElasticManifest& c) { c.axes[0].name = "X!"; }, "axis name");
  bad([](ElasticManifest& c) { c.axes.push_back(c.axes[0]); }, "declared twice");
  bad([](ElasticManifest& c) { c.axes[0].at_most = "x"; }, "at_most");
  bad([](ElasticManifest& c) { c.bindings[0].dims = {"x", "-"}; }, "lists 2");
  bad([](ElasticManifest& c) { c.bindings[0].tensor = "w{L}"; }, "is not where the layer pattern");
  bad([](ElasticManifest& c) { c.budgets.push_back({"b", {true}, {{"x", {0}}}, ""}); }, "keeps 0 of 4");
  bad([](ElasticManifest& c) { c.budgets.push_back({"b", {false}, {{"x", {2}}}, ""}); }, "keeps no layer");
  bad([](ElasticManifest& c) { c.budgets.push_back({"b", {true}, {{"x", {2, 2}}}, ""}); }, "2 counts");
  bad([](ElasticManifest& c) { c.importance.push_back({"x", 0, {1, 2, 3, 4}, {0, 1, 1, 2}, ""}); }, "twice");
  bad([](ElasticManifest& c) { c.importance.push_back({"x", 0, {1, 2, 3}, {0, 1, 2}, ""}); }, "3 scores");
  bad([](ElasticManifest& c) { c.importance.push_back({"x", 3, {1}, {0}, ""}); }, "no such layer");
}

TEST(ElasticManifest, MatchLayer) {
  auto r = MatchLayer("blk.{L}.", "blk.12.ffn_up.weight");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->layer, 12u);
  EXPECT_EQ(r->template_name, "blk.{L}.ffn_up.weight");
  EXPECT_FALSE(MatchLayer("blk.{L}.", "blk.01.x").has_value());
  EXPECT_FALSE(MatchLayer("blk.{L}.", "blk.1x.x").has_value());
  EXPECT_FALSE(MatchLayer("blk.{L}.", "token_embd.weight").has_value());
  EXPECT_FALSE(MatchLayer("blk.{L}.", "blk.99999999999.x").has_value());
  auto hf = MatchLayer("model.layers.{L}.", "model.layers.3.mlp.up_proj.weight");
  ASSERT_TRUE(hf.has_value());
  EXPECT_EQ(hf->layer, 3u);
}

}  // namespace
}  // namespace boltpack

namespace boltpack {
namespace {

TEST(ElasticManifest, ReaderRejectsAHostileElasticManifest) {
  // A valid elastic file: two layers, one q8_0 tensor per layer.
  std::string dir = testing::MakeTempDir();
  auto w = Writer::Create(dir + "/e.bolt", {.alignment = 64});
  ASSERT_TRUE(w.ok());
  std::vector<float> x(4 * 64, 0.5f);
  for (int l = 0; l < 2; ++l) {
    std::vector<uint64_t> shape{4, 64};
    TensorSource src{"", DType::kF32, shape, {reinterpret_cast<const uint8_t*>(x.data()), x.size() * 4}};
    auto enc = EncodeTensor("q8_0", src, {}, {});
    ASSERT_TRUE(enc.ok());
    ASSERT_TRUE((*w)->AddTensor("blk." + std::to_string(l) + ".w", shape, DType::kF32, "q8_0", std::move(*enc)).ok());
  }
  ElasticManifest m;
  m.layer_count = 2;
  m.layer_pattern = "blk.{L}.";
  m.axes.push_back({"ffn", ElasticScope::kLayer, 16, 1, {64, 64}, "", "feed_forward_length"});
  m.bindings.push_back({"blk.{L}.w", {"-", "ffn"}});
  m.budgets.push_back({"half", {true, true}, {{"ffn", {32, 32}}}, ""});
  ASSERT_TRUE((*w)->SetElastic(m).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  auto good = Reader::Open(dir + "/e.bolt");
  ASSERT_TRUE(good.ok()) << good.status();
  ASSERT_NE((*good)->elastic(), nullptr);
  EXPECT_EQ((*good)->elastic()->budgets[0].name, "half");
  const auto& opt = (*good)->tensors();
  EXPECT_EQ(opt.size(), 2u);

  auto file = testing::ReadFileBytes(dir + "/e.bolt");
  auto footer = format::ParseFooter(absl::MakeConstSpan(file).subspan(file.size() - format::kFooterSize), "f");
  ASSERT_TRUE(footer.ok());
  v1::Manifest manifest;
  ASSERT_TRUE(manifest.ParseFromArray(file.data() + footer->manifest_offset, static_cast<int>(footer->manifest_length)));
  EXPECT_TRUE(std::find(manifest.optional_features().begin(), manifest.optional_features().end(), "elastic") !=
              manifest.optional_features().end());
  struct Case {
    std::string name;
    void (*mutate)(v1::ElasticManifest*);
    std::string want;
  };
  const Case cases[] = {
      {"misaligned", [](v1::ElasticManifest* e) { e->mutable_budgets(0)->mutable_sizes(0)->set_counts(0, 48); },
       "block of 32"},
      {"past parent", [](v1::ElasticManifest* e) { e->mutable_budgets(0)->mutable_sizes(0)->set_counts(1, 96); },
       "keeps 96 of 64"},
      {"layer mask", [](v1::ElasticManifest* e) { e->mutable_budgets(0)->add_layer_keep(true); }, "layer_keep has 3"},
      {"huge layers", [](v1::ElasticManifest* e) { e->set_layer_count(1u << 30); }, "layer_count"},
      {"version", [](v1::ElasticManifest* e) { e->set_version(7); }, "version 7"},
      {"unknown order", [](v1::ElasticManifest* e) { e->set_storage_order(static_cast<v1::ElasticStorageOrder>(9)); },
       "storage order"},
      {"wrong dim", [](v1::ElasticManifest* e) { e->mutable_axes(0)->set_parent(0, 60); }, "dimension 1 is 64"},
  };
  for (const auto& c : cases) {
    v1::Manifest bad = manifest;
    c.mutate(bad.mutable_elastic());
    auto bytes = WithManifest(file, bad);
    auto r = Reader::OpenBuffer(bytes, "bad.bolt");
    ASSERT_FALSE(r.ok()) << c.name;
    // DATA_LOSS, or RESOURCE_EXHAUSTED for a limit.
    EXPECT_TRUE(r.status().code() == absl::StatusCode::kDataLoss ||
                (c.name == "huge layers" && r.status().code() == absl::StatusCode::kResourceExhausted))
        << c.name << ": " << r.status();
    EXPECT_NE(std::string(r.status().message()).find(c.want), std::string::npos) << c.name << ": " << r.status();
    EXPECT_NE(std::string(r.status().message()).find("elastic manifest"), std::string::npos) << r.status();
  }
  // The untouched manifest re-framed the same way still opens.
  auto same = WithManifest(file, manifest);
  EXPECT_TRUE(Reader::OpenBuffer(same, "same.bolt").ok());
}

}  // namespace
}  // namespace boltpack
