// A convert spread over machines: `convert --part I/N` and `merge`
// (tools/part_plan.h, format/part_merge.h, spec/container.md §8.5).
#include <filesystem>
#include <map>
#include <set>

#include "boltpack/reader.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"
#include "tools/part_plan.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::ReadFileBytes;
using testing::RunCli;
using testing::SourceDir;
using testing::WriteFileBytes;

std::string Gguf() { return SourceDir() + "/testdata/tinystories-656k/TinyStories-656K.f16.gguf"; }
std::string Recipe() { return SourceDir() + "/recipes/tinystories-656k.textproto"; }
std::string Elastic() { return SourceDir() + "/recipes/tinystories-656k-elastic.json"; }

std::string PartPath(const std::string& dir, int i, int n) {
  char name[64];
  std::snprintf(name, sizeof(name), "/m.part-%04d-of-%04d.bolt", i, n);
  return dir + name;
}

// Converts in one process (dir/one.bolt) and in `n` parts merged into dir/m.bolt.
void ConvertBothWays(const std::string& dir, int n, const std::vector<std::string>& options) {
  std::vector<std::string> one = {"convert", Gguf(), "-o", dir + "/one.bolt", "--no-fsync"};
  one.insert(one.end(), options.begin(), options.end());
  auto c = RunCli(one);
  ASSERT_EQ(c.exit_code, 0) << c.output;
  std::vector<std::string> merge = {"merge"};
  for (int i = 1; i <= n; ++i) {
    std::vector<std::string> part = {"convert", Gguf(), "-o", PartPath(dir, i, n), "--part", std::to_string(i) + "/" + std::to_string(n), "--no-fsync"};
    part.insert(part.end(), options.begin(), options.end());
    auto p = RunCli(part);
    ASSERT_EQ(p.exit_code, 0) << p.output;
    auto v = RunCli({"verify", PartPath(dir, i, n)});  // each part verifies on its own
    ASSERT_EQ(v.exit_code, 0) << v.output;
    merge.push_back(PartPath(dir, i, n));
  }
  merge.insert(merge.end(), {"-o", dir + "/m.bolt"});
  auto m = RunCli(merge);
  ASSERT_EQ(m.exit_code, 0) << m.output;
}

// Same tensors in the same order, same records but for where the streams
// lie, same decodes, same metadata.
void ExpectSameModel(const std::string& merged_path, const std::string& one_path, uint32_t parts) {
  auto merged = Reader::Open(merged_path);
  auto one = Reader::Open(one_path);
  ASSERT_TRUE(merged.ok()) << merged.status();
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ((*merged)->metadata(), (*one)->metadata());
  ASSERT_EQ((*merged)->tensors().size(), (*one)->tensors().size());
  std::set<uint32_t> shards;
  for (size_t t = 0; t < (*one)->tensors().size(); ++t) {
    TensorInfo a = *(*merged)->SharedTensor(t);
    TensorInfo b = *(*one)->SharedTensor(t);
    ASSERT_EQ(a.name, b.name);
    EXPECT_EQ(a.shape, b.shape) << a.name;
    EXPECT_EQ(a.codec_id, b.codec_id) << a.name;
    EXPECT_EQ(a.codec_params, b.codec_params) << a.name;
    ASSERT_EQ(a.streams.size(), b.streams.size()) << a.name;
    for (size_t s = 0; s < a.streams.size(); ++s) {
      EXPECT_EQ(a.streams[s].xxh3, b.streams[s].xxh3) << a.name;
      EXPECT_EQ(a.streams[s].prefix_bytes, b.streams[s].prefix_bytes) << a.name;
      EXPECT_GE(a.streams[s].shard, 1u) << a.name;  // in a part, not in shard 0
      shards.insert(a.streams[s].shard);
    }
    auto n = (*one)->DecodedBytes(t, OutputType::kF32);
    ASSERT_TRUE(n.ok()) << n.status();
    std::vector<uint8_t> da(*n), db(*n);
    ASSERT_TRUE((*merged)->Decode(t, OutputType::kF32, absl::MakeSpan(da)).ok()) << a.name;
    ASSERT_TRUE((*one)->Decode(t, OutputType::kF32, absl::MakeSpan(db)).ok()) << a.name;
    EXPECT_EQ(da, db) << a.name << " decodes differently";
  }
  EXPECT_EQ(shards.size(), parts);
  EXPECT_TRUE((*merged)->VerifyContainer().ok());
  // No tensor byte copied: shard 0 is a header, a manifest and a footer.
  EXPECT_LT(std::filesystem::file_size(merged_path) * 10, std::filesystem::file_size(one_path));
}

TEST(Parts, RecipeConvertInFourPartsMergesToTheOneProcessModel) {
  const std::string dir = MakeTempDir();
  ConvertBothWays(dir, 4, {"--recipe", Recipe()});
  ExpectSameModel(dir + "/m.bolt", dir + "/one.bolt", 4);
  auto v = RunCli({"verify", dir + "/m.bolt"});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  // Balanced by cost, not count: the embedding (as costly as a quarter of
  // the model) has a part to itself; the other parts hold 6 or 7 tensors.
  auto merged = Reader::Open(dir + "/m.bolt");
  ASSERT_TRUE(merged.ok());
  std::map<uint32_t, std::vector<std::string>> by_part;
  for (size_t t = 0; t < (*merged)->tensors().size(); ++t) {
    auto info = (*merged)->SharedTensor(t);
    by_part[info->streams[0].shard].push_back(info->name);
  }
  ASSERT_EQ(by_part.size(), 4u);
  bool alone = false;
  for (const auto& [part, names] : by_part) alone |= names == std::vector<std::string>{"token_embd.weight"};
  EXPECT_TRUE(alone);
}

TEST(Parts, ElasticManifestWorksAcrossParts) {
  const std::string dir = MakeTempDir();
  ConvertBothWays(dir, 3, {"--elastic", Elastic()});
  ExpectSameModel(dir + "/m.bolt", dir + "/one.bolt", 3);
  auto merged = Reader::Open(dir + "/m.bolt");
  ASSERT_TRUE(merged.ok());
  ASSERT_NE((*merged)->elastic(), nullptr);
  for (const char* budget : {"ffn75", "ffn50-heads50"}) {
    auto a = RunCli({"slice", dir + "/m.bolt", "--budget", budget, "-o", dir + "/a.safetensors", "--no-fsync"});
    auto b = RunCli({"slice", dir + "/one.bolt", "--budget", budget, "-o", dir + "/b.safetensors", "--no-fsync"});
    ASSERT_EQ(a.exit_code, 0) << a.output;
    ASSERT_EQ(b.exit_code, 0) << b.output;
    EXPECT_EQ(ReadFileBytes(dir + "/a.safetensors"), ReadFileBytes(dir + "/b.safetensors")) << budget;
  }
}

TEST(Parts, MergeRefusesWhatIsNotOneConvertAndWritesNothing) {
  const std::string dir = MakeTempDir();
  ConvertBothWays(dir, 2, {"--recipe", Recipe()});
  const std::string out = dir + "/bad.bolt";
  auto missing = RunCli({"merge", PartPath(dir, 1, 2), "-o", out});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.output.find("parts were given"), std::string::npos) << missing.output;
  auto twice = RunCli({"merge", PartPath(dir, 1, 2), PartPath(dir, 1, 2), "-o", out});
  EXPECT_NE(twice.exit_code, 0);
  EXPECT_NE(twice.output.find("given twice"), std::string::npos) << twice.output;
  // Part 2 of another convert (no recipe: another plan).
  auto other = RunCli({"convert", Gguf(), "-o", PartPath(dir, 2, 2), "--part", "2/2", "--no-fsync"});
  ASSERT_EQ(other.exit_code, 0) << other.output;
  auto mixed = RunCli({"merge", PartPath(dir, 1, 2), PartPath(dir, 2, 2), "-o", out});
  EXPECT_NE(mixed.exit_code, 0);
  EXPECT_NE(mixed.output.find("the plan differs"), std::string::npos) << mixed.output;
  auto plain = RunCli({"merge", dir + "/one.bolt", PartPath(dir, 1, 2), "-o", out});
  EXPECT_NE(plain.exit_code, 0);
  EXPECT_NE(plain.output.find("not a part"), std::string::npos) << plain.output;
  const std::string elsewhere = MakeTempDir();
  auto far = RunCli({"merge", PartPath(dir, 1, 2), PartPath(dir, 2, 2), "-o", elsewhere + "/m.bolt"});
  EXPECT_NE(far.exit_code, 0);
  EXPECT_NE(far.output.find("folder of the output"), std::string::npos) << far.output;
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(elsewhere + "/m.bolt"));
  auto usage = RunCli({"convert", Gguf(), "-o", dir + "/x.bolt", "--part", "3/2"});
  EXPECT_EQ(usage.exit_code, 2) << usage.output;
}

TEST(Parts, AChangedPartIsCaughtWhenTheModelOpens) {
  const std::string dir = MakeTempDir();
  ConvertBothWays(dir, 2, {});
  // Re-converting part 2 writes another file (another File_Id): the merged
  // model no longer names it.
  auto again = RunCli({"convert", Gguf(), "-o", PartPath(dir, 2, 2), "--part", "2/2", "--no-fsync"});
  ASSERT_EQ(again.exit_code, 0) << again.output;
  auto opened = Reader::Open(dir + "/m.bolt");
  ASSERT_FALSE(opened.ok());
  EXPECT_TRUE(absl::IsDataLoss(opened.status())) << opened.status();
}

TEST(PartPlan, CostsAndSpecs) {
  EXPECT_EQ(tools::EncodeCostPerByte("iq2_xxs", true), 100 * tools::EncodeCostPerByte("q8_0", true));
  EXPECT_LT(tools::EncodeCostPerByte("q8_0", false), tools::EncodeCostPerByte("q8_0", true));
  auto spec = tools::ParsePartSpec("3/4");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->index, 3u);
  EXPECT_EQ(spec->count, 4u);
  for (const char* bad : {"0/4", "5/4", "4", "/4", "1/", "a/b", "1/5000", "-1/4"}) {
    EXPECT_FALSE(tools::ParsePartSpec(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace boltpack
