// The bolt-pack command line: conversions bit for bit, exit codes, messages.
#include <filesystem>

#include "gtest/gtest.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::ReadFileBytes;
using testing::RunCli;
using testing::SharedDir;
using testing::SourceDir;
using testing::WriteFileBytes;

std::string TinyStories() { return SourceDir() + "/testdata/tinystories-656k/model.safetensors"; }

// Tensors of two safetensors files are equal: names, order, dtypes, shapes,
// bytes, and __metadata__.
void ExpectSameSafetensors(const std::string& a_path, const std::string& b_path) {
  auto a = io::SafetensorsModel::Open(a_path);
  auto b = io::SafetensorsModel::Open(b_path);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
  EXPECT_EQ((*a)->metadata(), (*b)->metadata());
  for (size_t i = 0; i < (*a)->tensors().size(); ++i) {
    const auto& ta = (*a)->tensors()[i];
    const auto& tb = (*b)->tensors()[i];
    EXPECT_EQ(ta.name, tb.name);
    EXPECT_EQ(ta.dtype, tb.dtype) << ta.name;
    EXPECT_EQ(ta.shape, tb.shape) << ta.name;
    auto ba = (*a)->TensorBytes(i);
    auto bb = (*b)->TensorBytes(i);
    ASSERT_TRUE(std::equal(ba.begin(), ba.end(), bb.begin(), bb.end())) << ta.name << " differs";
  }
}

void RoundTrip(const std::string& src, const std::string& dir, const std::vector<std::string>& extra = {}) {
  std::string bolt = dir + "/m.bolt";
  std::string back = dir + "/back.safetensors";
  std::vector<std::string> args = {"convert", src, "-o", bolt};
  args.insert(args.end(), extra.begin(), extra.end());
  auto c = RunCli(args);
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto v = RunCli({"verify", bolt});
  ASSERT_EQ(v.exit_code, 0) << v.output;
  auto b = RunCli({"convert", bolt, "-o", back});
  ASSERT_EQ(b.exit_code, 0) << b.output;
  ExpectSameSafetensors(src, back);
}

TEST(Cli, ShippedModelRoundTripsBitForBit) {
  std::string dir = MakeTempDir();
  RoundTrip(TinyStories(), dir);
  // Same order, same header: the whole file comes back identical.
  EXPECT_EQ(ReadFileBytes(TinyStories()), ReadFileBytes(dir + "/back.safetensors"));
}

TEST(Cli, ShippedModelRoundTripsThroughZstd) { RoundTrip(TinyStories(), MakeTempDir(), {"--zstd", "9", "--alignment", "64"}); }

TEST(Cli, EveryCorpusSafetensorsRoundTrips) {
  std::string shared = SharedDir();
  if (shared.empty()) GTEST_SKIP() << "../shared is absent; the shipped models are covered by other tests";
  int count = 0;
  for (auto& e : std::filesystem::recursive_directory_iterator(shared + "/corpus")) {
    if (e.path().extension() != ".safetensors") continue;
    SCOPED_TRACE(e.path().string());
    RoundTrip(e.path().string(), MakeTempDir());
    ++count;
  }
  EXPECT_GE(count, 3);
}

TEST(Cli, CodecRuleConvertsAndFirstMatchWins) {
  std::string dir = MakeTempDir();
  auto c = RunCli({"convert", TinyStories(), "-o", dir + "/m.bolt", "--codec", "*norm*=f32", "--codec", "*=bf16"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto i = RunCli({"inspect", dir + "/m.bolt", "--json"});
  ASSERT_EQ(i.exit_code, 0) << i.output;
  auto json = io::ParseJson(i.output);
  ASSERT_TRUE(json.ok()) << json.status() << i.output;
  const auto* tensors = json->Find("tensors");
  ASSERT_NE(tensors, nullptr);
  uint64_t total = 0;
  for (const auto& t : tensors->array()) {
    std::string name = t.Find("name")->string_value();
    std::string codec = t.Find("codec")->string_value();
    EXPECT_EQ(codec, name.find("norm") != std::string::npos ? "f32" : "bf16") << name;
    EXPECT_EQ(t.Find("dtype")->string_value(), "F32");
    total += *t.Find("stored_bytes")->uint64_value();
  }
  EXPECT_EQ(*json->Find("views")->Find("full")->Find("bytes")->uint64_value(), total);
  EXPECT_NE(json->Find("metadata")->Find("format"), nullptr);
  // Back to safetensors as bf16 where the rule says so.
  auto b = RunCli({"convert", dir + "/m.bolt", "-o", dir + "/b.safetensors", "--codec", "*norm*=f32", "--codec", "*=bf16"});
  ASSERT_EQ(b.exit_code, 0) << b.output;
  auto m = io::SafetensorsModel::Open(dir + "/b.safetensors");
  ASSERT_TRUE(m.ok());
  for (const auto& t : (*m)->tensors()) {
    EXPECT_EQ(t.dtype, t.name.find("norm") != std::string::npos ? DType::kF32 : DType::kBF16) << t.name;
  }
}

TEST(Cli, InspectTextShowsCodecsAndTotals) {
  auto i = RunCli({"inspect", TinyStories()});
  ASSERT_EQ(i.exit_code, 0) << i.output;
  EXPECT_NE(i.output.find("lm_head.weight"), std::string::npos);
  EXPECT_NE(i.output.find("totals by codec"), std::string::npos);
  EXPECT_NE(i.output.find("32.000"), std::string::npos);
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(RunCli({}).exit_code, 2);
  EXPECT_EQ(RunCli({"convert", TinyStories(), "-o", "x.bolt", "--no-such-flag"}).exit_code, 2);
  auto missing = RunCli({"inspect", "/nonexistent/model.bolt"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("/nonexistent/model.bolt"), std::string::npos);
  auto ext = RunCli({"convert", TinyStories(), "-o", MakeTempDir() + "/x.onnx"});
  EXPECT_EQ(ext.exit_code, 2);
  EXPECT_NE(ext.output.find("x.onnx"), std::string::npos);
  auto codec = RunCli({"convert", TinyStories(), "-o", MakeTempDir() + "/x.bolt", "--codec", "*=nope"});
  EXPECT_EQ(codec.exit_code, 2);
  EXPECT_NE(codec.output.find("unknown codec \"nope\""), std::string::npos);
}

TEST(Cli, BadFilesFailWithTheirNames) {
  std::string dir = MakeTempDir();
  WriteFileBytes(dir + "/junk.bolt", std::vector<uint8_t>(300, 7));
  auto r = RunCli({"verify", dir + "/junk.bolt"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("junk.bolt"), std::string::npos);
  EXPECT_NE(r.output.find("not a bolt-pack file"), std::string::npos);

  WriteFileBytes(dir + "/junk.safetensors", std::vector<uint8_t>(300, 7));
  auto s = RunCli({"inspect", dir + "/junk.safetensors"});
  EXPECT_EQ(s.exit_code, 1);
  EXPECT_NE(s.output.find("junk.safetensors"), std::string::npos);
}

TEST(Cli, VerifyReportsCorruptionNamingTheTensor) {
  std::string dir = MakeTempDir();
  ASSERT_EQ(RunCli({"convert", TinyStories(), "-o", dir + "/m.bolt"}).exit_code, 0);
  auto bytes = ReadFileBytes(dir + "/m.bolt");
  bytes[4096 + 100] ^= 0x10;  // inside the first stream
  WriteFileBytes(dir + "/bad.bolt", bytes);
  auto v = RunCli({"verify", dir + "/bad.bolt"});
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_NE(v.output.find("checksum mismatch"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("tensor \""), std::string::npos) << v.output;
  // Converting a corrupt file does not launder it into a valid one.
  auto c = RunCli({"convert", dir + "/bad.bolt", "-o", dir + "/laundered.bolt"});
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(dir + "/laundered.bolt"));
}

TEST(Cli, RefusesToOverwriteItsInput) {
  std::string dir = MakeTempDir();
  ASSERT_EQ(RunCli({"convert", TinyStories(), "-o", dir + "/m.bolt"}).exit_code, 0);
  auto before = ReadFileBytes(dir + "/m.bolt");
  auto r = RunCli({"convert", dir + "/m.bolt", "-o", dir + "/m.bolt"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("refusing to overwrite"), std::string::npos);
  EXPECT_EQ(ReadFileBytes(dir + "/m.bolt"), before);
}

TEST(Cli, SliceSaysItNeedsAnElasticManifest) {
  std::string dir = MakeTempDir();
  ASSERT_EQ(RunCli({"convert", TinyStories(), "-o", dir + "/m.bolt"}).exit_code, 0);
  auto s = RunCli({"slice", dir + "/m.bolt", "--budget", "half", "-o", dir + "/s.bolt"});
  EXPECT_NE(s.exit_code, 0);
  EXPECT_NE(s.output.find("elastic manifest"), std::string::npos);
}

}  // namespace
}  // namespace boltpack
