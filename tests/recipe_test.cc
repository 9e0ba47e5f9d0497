// --recipe and codec fallbacks through the CLI.
#include <fstream>
#include <map>

#include "gtest/gtest.h"
#include "io/json.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::RunCli;
using testing::SourceDir;

std::string TinyStories() { return SourceDir() + "/testdata/tinystories-656k/model.safetensors"; }

std::map<std::string, std::string> CodecsOf(const std::string& bolt) {
  auto i = RunCli({"inspect", bolt, "--json"});
  EXPECT_EQ(i.exit_code, 0) << i.output;
  auto json = io::ParseJson(i.output);
  EXPECT_TRUE(json.ok()) << json.status();
  std::map<std::string, std::string> out;
  for (const auto& t : json->Find("tensors")->array()) {
    out[t.Find("name")->string_value()] = t.Find("codec")->string_value();
  }
  return out;
}

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(Recipe, ShippedBoltRecipeOnTheShippedModel) {
  std::string dir = MakeTempDir();
  auto c = RunCli({"convert", TinyStories(), "-o", dir + "/m.bolt", "--recipe", SourceDir() + "/recipes/nemotron-bolt.textproto"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto codecs = CodecsOf(dir + "/m.bolt");
  EXPECT_EQ(codecs["lm_head.weight"], "q8_0");
  EXPECT_EQ(codecs["model.layers.0.self_attn.q_proj.weight"], "q8_0");
  EXPECT_EQ(codecs["model.layers.1.mlp.down_proj.weight"], "q8_0");
  EXPECT_EQ(codecs["model.norm.weight"], "f32");
  EXPECT_EQ(codecs["model.layers.0.input_layernorm.weight"], "f32");
  EXPECT_EQ(RunCli({"verify", dir + "/m.bolt"}).exit_code, 0);
}

TEST(Recipe, FallbackWhenTheCodecCannotTakeTheTensorWithOneWarning) {
  std::string dir = MakeTempDir();
  WriteText(dir + "/r.textproto", R"(
    name: "test"
    rules { pattern: "*mlp*" use { codec: "iq2_xxs" } fallback { codec: "q8_0" } }
    rules { pattern: "*self_attn*" use { codec: "iq2_xxs" } }
  )");
  auto c = RunCli({"convert", TinyStories(), "-o", dir + "/m.bolt", "--recipe", dir + "/r.textproto"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  // One warning line, then one line per tensor that fell back.
  EXPECT_EQ(c.output.find("warning"), c.output.rfind("warning")) << c.output;
  EXPECT_NE(c.output.find("14 tensors cannot take"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("model.layers.0.mlp.down_proj.weight: iq2_xxs -> q8_0"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("model.layers.0.self_attn.q_proj.weight: iq2_xxs -> kept as F32"), std::string::npos);
  auto codecs = CodecsOf(dir + "/m.bolt");
  EXPECT_EQ(codecs["model.layers.0.mlp.up_proj.weight"], "q8_0");
  EXPECT_EQ(codecs["model.layers.0.self_attn.k_proj.weight"], "f32");
  EXPECT_EQ(codecs["lm_head.weight"], "f32");
}

TEST(Recipe, CommandLineRulesComeFirst) {
  std::string dir = MakeTempDir();
  WriteText(dir + "/r.textproto", R"(rules { pattern: "*" use { codec: "q8_0" } })");
  auto c = RunCli({"convert", TinyStories(), "-o", dir + "/m.bolt", "--recipe", dir + "/r.textproto", "--codec",
                   "lm_head*=bf16", "--codec", "*norm*=keep"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto codecs = CodecsOf(dir + "/m.bolt");
  EXPECT_EQ(codecs["lm_head.weight"], "bf16");
  EXPECT_EQ(codecs["model.norm.weight"], "f32");
  EXPECT_EQ(codecs["model.layers.0.self_attn.q_proj.weight"], "q8_0");
}

TEST(Recipe, BadRecipesAreUsageErrorsNamingFileAndRule) {
  std::string dir = MakeTempDir();
  WriteText(dir + "/syntax.textproto", "rules { pattern: ");
  auto s = RunCli({"convert", TinyStories(), "-o", dir + "/m.bolt", "--recipe", dir + "/syntax.textproto"});
  EXPECT_EQ(s.exit_code, 2);
  EXPECT_NE(s.output.find("syntax.textproto: not a recipe: line"), std::string::npos) << s.output;
  WriteText(dir + "/codec.textproto", R"(rules { pattern: "a" use { codec: "q8_0" } } rules { pattern: "b" use { codec: "nope" } })");
  auto u = RunCli({"convert", TinyStories(), "-o", dir + "/m.bolt", "--recipe", dir + "/codec.textproto"});
  EXPECT_EQ(u.exit_code, 2);
  EXPECT_NE(u.output.find("rule 2 (\"b\"): unknown codec \"nope\""), std::string::npos) << u.output;
}

}  // namespace
}  // namespace boltpack
