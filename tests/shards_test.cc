// Multi-file models written by the Writer (WriterOptions::shard_max_bytes,
// spec/container.md §8): placement, read-back bit for bit, refused siblings,
// nothing left by a failed write, stale siblings, the CLI and the C API.
#include <filesystem>
#include <set>

#include "boltpack/boltpack.h"
#include "boltpack/reader.h"
#include "boltpack/writer.h"
#include "format/shard_files.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::ReadFileBytes;
using testing::RunCli;
using testing::SourceDir;
using testing::WriteFileBytes;

namespace fs = std::filesystem;

std::set<std::string> Entries(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// f32 tensors of `rows` x 64 (256 bytes a row), with distinct contents.
std::vector<std::vector<float>> Data(const std::vector<uint64_t>& rows) {
  std::vector<std::vector<float>> out;
  for (size_t t = 0; t < rows.size(); ++t) {
    std::vector<float> v(rows[t] * 64);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(t * 1000003 + i * 7 % 977) * 0.25f;
    out.push_back(std::move(v));
  }
  return out;
}

absl::Status WriteModel(const std::string& path, const std::vector<uint64_t>& rows, uint64_t shard_max,
                        std::vector<std::string> inputs = {}, bool finish = true) {
  WriterOptions options;
  options.alignment = 64;
  options.shard_max_bytes = shard_max;
  options.inputs = std::move(inputs);
  auto w = Writer::Create(path, options);
  if (!w.ok()) return w.status();
  auto data = Data(rows);
  for (size_t t = 0; t < rows.size(); ++t) {
    std::vector<uint64_t> shape = {rows[t], 64};
    auto bytes = absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(data[t].data()), data[t].size() * 4);
    TensorSource src{"", DType::kF32, shape, bytes};
    std::string name = "t." + std::to_string(t);
    src.name = name;
    auto enc = EncodeTensor("f32", src, {}, {});
    if (!enc.ok()) return enc.status();
    absl::Status s = (*w)->AddTensor(name, shape, DType::kF32, "f32", std::move(*enc));
    if (!s.ok()) return s;
  }
  return finish ? (*w)->Finish() : absl::OkStatus();
}

std::vector<std::vector<uint8_t>> DecodeAll(const Reader& r) {
  std::vector<std::vector<uint8_t>> out;
  for (size_t t = 0; t < r.tensors().size(); ++t) {
    auto n = r.DecodedBytes(t, OutputType::kNative);
    EXPECT_TRUE(n.ok()) << n.status();
    std::vector<uint8_t> buf(*n);
    EXPECT_TRUE(r.Decode(t, OutputType::kNative, absl::MakeSpan(buf)).ok());
    out.push_back(std::move(buf));
  }
  return out;
}

const std::vector<uint64_t> kRows = {4, 4, 4, 40, 4, 4, 4, 4};  // 1 KiB tensors, one of 10 KiB

TEST(Shards, StreamsFillSiblingsInOrderAndDecodeAsOneFile) {
  const std::string dir = MakeTempDir();
  ASSERT_TRUE(WriteModel(dir + "/one.bolt", kRows, 0).ok());
  constexpr uint64_t kMax = 3000;
  absl::Status s = WriteModel(dir + "/m.bolt", kRows, kMax);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Entries(dir), (std::set<std::string>{"one.bolt", "m.bolt", "m-1.boltshard", "m-2.boltshard",
                                                 "m-3.boltshard", "m-4.boltshard", "m-5.boltshard"}));
  auto one = Reader::Open(dir + "/one.bolt");
  auto r = Reader::Open(dir + "/m.bolt");
  ASSERT_TRUE(one.ok() && r.ok()) << r.status();
  EXPECT_TRUE((*r)->VerifyContainer().ok());
  EXPECT_EQ(DecodeAll(**r), DecodeAll(**one));
  // In write order, each in one shard: 1 KiB tensors two to a sibling, the
  // 10 KiB one alone in a sibling larger than the limit.
  const std::vector<uint32_t> want = {1, 1, 2, 3, 4, 4, 5, 5};
  for (size_t t = 0; t < kRows.size(); ++t) {
    auto info = (*r)->SharedTensor(t);
    ASSERT_EQ(info->streams.size(), 1u);
    EXPECT_EQ(info->streams[0].shard, want[t]) << t;
  }
  for (int k = 1; k <= 5; ++k) {
    const uint64_t size = fs::file_size(dir + "/m-" + std::to_string(k) + ".boltshard");
    if (k == 3) {
      EXPECT_GT(size, kMax);
    } else {
      EXPECT_LE(size, kMax) << k;
    }
  }
  EXPECT_LE(fs::file_size(dir + "/m.bolt"), kMax);
  auto path = (*r)->ShardPath(2);
  ASSERT_TRUE(path.ok());
  EXPECT_EQ(*path, dir + "/m-2.boltshard");
}

TEST(Shards, MissingTruncatedOrSwappedSiblingIsRefusedByName) {
  const std::string dir = MakeTempDir();
  ASSERT_TRUE(WriteModel(dir + "/m.bolt", kRows, 3000).ok());
  ASSERT_TRUE(WriteModel(dir + "/other.bolt", kRows, 3000).ok());
  const std::string sib = dir + "/m-2.boltshard";
  const auto bytes = ReadFileBytes(sib);

  fs::remove(sib);
  auto r = Reader::Open(dir + "/m.bolt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(sib), std::string::npos) << r.status();

  WriteFileBytes(sib, std::vector<uint8_t>(bytes.begin(), bytes.end() - 1));
  r = Reader::Open(dir + "/m.bolt");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
  EXPECT_NE(r.status().message().find(sib), std::string::npos) << r.status();

  // Another write's sibling of the same size, under this name.
  fs::copy_file(dir + "/other-2.boltshard", sib, fs::copy_options::overwrite_existing);
  r = Reader::Open(dir + "/m.bolt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(sib + ": is not the shard"), std::string::npos) << r.status();

  WriteFileBytes(sib, bytes);
  EXPECT_TRUE(Reader::Open(dir + "/m.bolt").ok());
}

TEST(Shards, AFailedOrAbandonedWriteLeavesNoFile) {
  const std::string dir = MakeTempDir();
  // Siblings written, then the Writer goes without Finish.
  ASSERT_TRUE(WriteModel(dir + "/m.bolt", kRows, 3000, {}, /*finish=*/false).ok());
  EXPECT_TRUE(Entries(dir).empty());
  // Siblings written, then Finish fails: the manifest does not fit the limit.
  std::vector<uint64_t> many(60, 1);
  absl::Status s = WriteModel(dir + "/m.bolt", many, 400);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("does not fit the shard size limit"), std::string::npos) << s;
  EXPECT_TRUE(Entries(dir).empty());
  // A sibling's name is an input: refused, nothing written.
  ASSERT_TRUE(WriteModel(dir + "/in.bolt", kRows, 0).ok());
  fs::rename(dir + "/in.bolt", dir + "/m-3.boltshard");
  s = WriteModel(dir + "/m.bolt", kRows, 3000, {dir + "/m-3.boltshard"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("refusing to overwrite an input"), std::string::npos) << s;
  EXPECT_EQ(Entries(dir), std::set<std::string>{"m-3.boltshard"});
}

TEST(Shards, RewriteReplacesSiblingsAndRemovesStaleOnes) {
  const std::string dir = MakeTempDir();
  ASSERT_TRUE(WriteModel(dir + "/m.bolt", kRows, 3000).ok());  // 5 siblings
  WriteFileBytes(dir + "/m-7.boltshard", {1, 2, 3});           // not a sibling: kept
  ASSERT_TRUE(WriteModel(dir + "/m.bolt", {4, 4, 4, 4}, 3000).ok());  // 2 siblings
  EXPECT_EQ(Entries(dir), (std::set<std::string>{"m.bolt", "m-1.boltshard", "m-2.boltshard", "m-7.boltshard"}));
  auto r = Reader::Open(dir + "/m.bolt");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE((*r)->VerifyContainer().ok());
  EXPECT_EQ(format::SiblingName("/x/model.bolt", 12), "model-12.boltshard");
  EXPECT_EQ(format::SiblingName("model.weights", 1), "model.weights-1.boltshard");
}

TEST(Shards, CApiOpensAndDecodesAMultiFileModel) {
  const std::string dir = MakeTempDir();
  ASSERT_TRUE(WriteModel(dir + "/m.bolt", kRows, 3000).ok());
  bp_reader* r = nullptr;
  ASSERT_EQ(bp_open((dir + "/m.bolt").c_str(), &r), BP_OK) << bp_last_error_message();
  EXPECT_EQ(bp_verify(r), BP_OK);
  ASSERT_EQ(bp_tensor_count(r), kRows.size());
  auto data = Data(kRows);
  for (size_t t = 0; t < kRows.size(); ++t) {
    std::vector<float> out(data[t].size());
    ASSERT_EQ(bp_decode(r, t, BP_OUT_NATIVE, out.data(), out.size() * 4, 1), BP_OK) << bp_last_error(r);
    EXPECT_EQ(out, data[t]) << t;
  }
  const char* path = nullptr;
  uint64_t offset = 0;
  ASSERT_EQ(bp_stream_location(r, 3, 0, &path, &offset), BP_OK) << bp_last_error(r);
  EXPECT_EQ(std::string(path), dir + "/m-3.boltshard");
  bp_close(r);
}

std::string TinyStories() { return SourceDir() + "/testdata/tinystories-656k/model.safetensors"; }

TEST(Shards, CliConvertVerifyInspectAndBackBitForBit) {
  const std::string dir = MakeTempDir();
  auto c = RunCli({"convert", TinyStories(), "-o", dir + "/m.bolt", "--codec", "*.weight=q8_0", "--shard-max-size",
                   "200K", "--no-fsync"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto one = RunCli({"convert", TinyStories(), "-o", dir + "/one.bolt", "--codec", "*.weight=q8_0"});
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_TRUE(fs::exists(dir + "/m-4.boltshard"));
  auto v = RunCli({"verify", dir + "/m.bolt"});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  auto i = RunCli({"inspect", dir + "/m.bolt"});
  EXPECT_NE(i.output.find("shards (5):"), std::string::npos) << i.output;
  EXPECT_NE(i.output.find("m-4.boltshard"), std::string::npos) << i.output;
  for (const char* name : {"m", "one"}) {
    auto b = RunCli({"convert", dir + "/" + name + ".bolt", "-o", dir + "/" + name + ".safetensors"});
    ASSERT_EQ(b.exit_code, 0) << b.output;
  }
  EXPECT_EQ(ReadFileBytes(dir + "/m.safetensors"), ReadFileBytes(dir + "/one.safetensors"));
  // A raw copy of the safetensors model, sharded, converts back byte for byte.
  c = RunCli({"convert", TinyStories(), "-o", dir + "/raw.bolt", "--shard-max-size", "300K"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  c = RunCli({"convert", dir + "/raw.bolt", "-o", dir + "/raw.safetensors"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_EQ(ReadFileBytes(dir + "/raw.safetensors"), ReadFileBytes(TinyStories()));
  // A sibling that goes missing fails verify, naming it.
  fs::remove(dir + "/m-2.boltshard");
  v = RunCli({"verify", dir + "/m.bolt"});
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_NE(v.output.find("m-2.boltshard"), std::string::npos) << v.output;
  // Usage errors: a bad size, a size for another format.
  EXPECT_EQ(RunCli({"convert", TinyStories(), "-o", dir + "/x.bolt", "--shard-max-size", "12Q"}).exit_code, 2);
  EXPECT_EQ(RunCli({"convert", TinyStories(), "-o", dir + "/x.gguf", "--shard-max-size", "1G"}).exit_code, 2);
}

// An elastic model (views, line prefixes) sharded, and a budget sliced from
// it to a sharded .bolt, give the bytes the one-file path gives.
TEST(Shards, ElasticModelSlicesFromAndToShards) {
  const std::string dir = MakeTempDir();
  const std::string gguf = SourceDir() + "/testdata/tinystories-656k/TinyStories-656K.f16.gguf";
  const std::string elastic = SourceDir() + "/recipes/tinystories-656k-elastic.json";
  for (const char* name : {"e", "one"}) {
    std::vector<std::string> args = {"convert", gguf, "-o", dir + "/" + name + ".bolt", "--elastic", elastic, "--no-fsync"};
    if (std::string(name) == "e") args.insert(args.end(), {"--shard-max-size", "300K"});
    auto c = RunCli(args);
    ASSERT_EQ(c.exit_code, 0) << c.output;
  }
  EXPECT_TRUE(fs::exists(dir + "/e-3.boltshard"));
  auto s = RunCli({"slice", dir + "/e.bolt", "--budget", "ffn50-heads50", "-o", dir + "/s.bolt", "--shard-max-size",
                   "100K", "--no-fsync"});
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_TRUE(fs::exists(dir + "/s-3.boltshard"));
  s = RunCli({"slice", dir + "/one.bolt", "--budget", "ffn50-heads50", "-o", dir + "/s1.bolt"});
  ASSERT_EQ(s.exit_code, 0) << s.output;
  auto v = RunCli({"verify", dir + "/s.bolt"});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  for (const char* name : {"s", "s1"}) {
    auto c = RunCli({"convert", dir + "/" + name + ".bolt", "-o", dir + "/" + name + ".safetensors"});
    ASSERT_EQ(c.exit_code, 0) << c.output;
  }
  EXPECT_EQ(ReadFileBytes(dir + "/s.safetensors"), ReadFileBytes(dir + "/s1.safetensors"));
  s = RunCli({"slice", dir + "/e.bolt", "--budget", "ffn50-heads50", "-o", dir + "/s.gguf"});
  ASSERT_EQ(s.exit_code, 0) << s.output;
  s = RunCli({"slice", dir + "/one.bolt", "--budget", "ffn50-heads50", "-o", dir + "/s1.gguf"});
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_EQ(ReadFileBytes(dir + "/s.gguf"), ReadFileBytes(dir + "/s1.gguf"));
}

}  // namespace
}  // namespace boltpack
