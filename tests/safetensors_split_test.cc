// Split safetensors output (convert/slice --split-max-size), as Hugging
// Face writes it (huggingface_hub split_torch_state_dict_into_shards,
// transformers save_pretrained): the shard plan, the names, the index's
// bytes, the round trip through the reader, stale shards and refusals.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "common/status_macros.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "io/safetensors_split.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::RunCli;
using testing::RunCliWithFileSizeLimit;
using testing::SourceDir;

std::string TinyStories() { return SourceDir() + "/testdata/tinystories-656k/model.safetensors"; }

std::string ReadText(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Every tensor of `a` is in `b` with the same dtype, shape and bytes, and
// the two have the same tensors and (`with_metadata`) __metadata__.
void ExpectSameModel(const std::string& a_path, const std::string& b_path, bool with_metadata = true) {
  auto a = io::SafetensorsModel::Open(a_path);
  auto b = io::SafetensorsModel::Open(b_path);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  if (with_metadata) {
    EXPECT_TRUE((*a)->metadata() == (*b)->metadata());
  }
  ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
  std::map<std::string, size_t> in_b;
  for (size_t i = 0; i < (*b)->tensors().size(); ++i) in_b[(*b)->tensors()[i].name] = i;
  for (size_t i = 0; i < (*a)->tensors().size(); ++i) {
    const auto& t = (*a)->tensors()[i];
    SCOPED_TRACE(t.name);
    auto it = in_b.find(t.name);
    ASSERT_NE(it, in_b.end());
    const auto& u = (*b)->tensors()[it->second];
    EXPECT_EQ(t.dtype, u.dtype);
    EXPECT_EQ(t.shape, u.shape);
    auto x = (*a)->TensorBytes(i), y = (*b)->TensorBytes(it->second);
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end()));
  }
}

TEST(SafetensorsSplit, PlanFollowsHuggingFace) {
  using V = std::vector<uint32_t>;
  // huggingface_hub's own test (tests/test_serialization.py, max 10): the
  // 30-byte tensor gets a file of its own, numbered before the file that
  // was still being filled.
  auto hub = io::PlanSafetensorsSplit(std::vector<uint64_t>{6, 10, 30, 2, 2}, 10, 0);
  EXPECT_EQ(hub.file_of, (V{0, 2, 1, 3, 3}));
  EXPECT_EQ(hub.files, 4u);
  // Exact fit: a file is full at the maximum, not over it.
  auto exact = io::PlanSafetensorsSplit(std::vector<uint64_t>{5, 5, 5, 5}, 10, 0);
  EXPECT_EQ(exact.file_of, (V{0, 0, 1, 1}));
  // A tiny maximum: every tensor alone, in order.
  auto tiny = io::PlanSafetensorsSplit(std::vector<uint64_t>{4, 4, 4}, 1, 0);
  EXPECT_EQ(tiny.file_of, (V{0, 1, 2}));
  // Tensors over the maximum in a row, and a zero-byte one that joins the current file.
  auto big = io::PlanSafetensorsSplit(std::vector<uint64_t>{3, 20, 20, 0, 3}, 8, 0);
  EXPECT_EQ(big.file_of, (V{2, 0, 1, 2, 2}));
  auto count = io::PlanSafetensorsSplit(std::vector<uint64_t>{1, 1, 1, 1, 1}, 0, 2);
  EXPECT_EQ(count.file_of, (V{0, 0, 1, 1, 2}));
  auto both = io::PlanSafetensorsSplit(std::vector<uint64_t>{1, 1, 9, 1}, 4, 1);
  EXPECT_EQ(both.file_of, (V{0, 2, 1, 3}));
  EXPECT_EQ(io::PlanSafetensorsSplit(std::vector<uint64_t>{1, 2, 3}, 100, 0).files, 1u);
  EXPECT_EQ(io::PlanSafetensorsSplit(std::vector<uint64_t>{}, 100, 0).files, 0u);
}

TEST(SafetensorsSplit, Names) {
  EXPECT_EQ(io::SafetensorsShardPath("d/model", 0, 3), "d/model-00001-of-00003.safetensors");
  EXPECT_EQ(io::SafetensorsShardPath("model", 99999, 100000), "model-100000-of-100000.safetensors");
  EXPECT_EQ(*io::SafetensorsSplitPrefix("d/model.safetensors"), "d/model");
  EXPECT_EQ(*io::SafetensorsSplitPrefix("d/model.safetensors.index.json"), "d/model");
  for (const char* bad : {"d/model.bolt", "d/.safetensors", "model.json", ".safetensors.index.json"}) {
    SCOPED_TRACE(bad);
    auto p = io::SafetensorsSplitPrefix(bad);
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.status().message().find(bad), std::string::npos) << p.status();
  }
  EXPECT_TRUE(io::IsSafetensorsShardName("model-00001-of-00002.safetensors", "model"));
  EXPECT_TRUE(io::IsSafetensorsShardName("model-123456-of-123456.safetensors", "model"));
  EXPECT_FALSE(io::IsSafetensorsShardName("model-0001-of-00002.safetensors", "model"));
  EXPECT_FALSE(io::IsSafetensorsShardName("model-00001-of-00002.safetensors", "other"));
  EXPECT_FALSE(io::IsSafetensorsShardName("model.safetensors", "model"));
  EXPECT_FALSE(io::IsSafetensorsShardName("model-00001-of-0000x.safetensors", "model"));
  EXPECT_FALSE(io::IsSafetensorsShardName("model-extra-00001-of-00002.safetensors", "model"));
}

TEST(SafetensorsSplit, IndexBytesAsTransformersWritesThem) {
  // json.dumps(index, indent=2, sort_keys=True) + "\n" (ensure_ascii).
  std::string json = io::SafetensorsIndexJson(
      1234, {{"b.weight", "model-00002-of-00002.safetensors"},
             {"a.weight", "model-00001-of-00002.safetensors"},
             {"q\"\\\n\x7f\xc3\xa9\xf0\x9f\x98\x80", "model-00001-of-00002.safetensors"}});
  EXPECT_EQ(json,
            "{\n"
            "  \"metadata\": {\n"
            "    \"total_size\": 1234\n"
            "  },\n"
            "  \"weight_map\": {\n"
            "    \"a.weight\": \"model-00001-of-00002.safetensors\",\n"
            "    \"b.weight\": \"model-00002-of-00002.safetensors\",\n"
            "    \"q\\\"\\\\\\n\\u007f\\u00e9\\ud83d\\ude00\": \"model-00001-of-00002.safetensors\"\n"
            "  }\n"
            "}\n");
  auto parsed = io::ParseJson(json);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_NE(parsed->Find("weight_map")->Find("q\"\\\n\x7f\xc3\xa9\xf0\x9f\x98\x80"), nullptr);
}

struct Tensor {
  std::string name;
  std::vector<uint64_t> shape;  // F32
};

std::vector<uint8_t> Values(size_t i, uint64_t count) {
  std::vector<uint8_t> v(count * 4);
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<uint8_t>(i * 31 + k * 7);
  return v;
}

// Writes `tensors` split at `max_bytes` to dir/model; returns the writer's status.
absl::Status WriteSplit(const std::string& dir, const std::vector<Tensor>& tensors, uint64_t max_bytes,
                        std::vector<std::string>* paths = nullptr) {
  std::vector<io::SafetensorsTensorDecl> decls;
  for (const auto& t : tensors) decls.push_back({t.name, DType::kF32, t.shape});
  io::SafetensorsSplitOptions options;
  options.max_bytes = max_bytes;
  options.durable = false;
  auto w = io::SafetensorsSplitWriter::Create(dir + "/model.safetensors", {{"format", "pt"}}, decls, options);
  if (!w.ok()) return w.status();
  for (size_t i = 0; i < tensors.size(); ++i) {
    uint64_t n = 1;
    for (uint64_t d : tensors[i].shape) n *= d;
    auto v = Values(i, n);
    BP_RETURN_IF_ERROR((*w)->WriteNext(v));
  }
  BP_RETURN_IF_ERROR((*w)->Finish());
  if (paths != nullptr) *paths = (*w)->paths();
  return absl::OkStatus();
}

TEST(SafetensorsSplit, WriterRoundTripsThroughTheReader) {
  std::string dir = MakeTempDir();
  // Bytes 16, 400 (over the maximum of 64: alone), 48 (16 + 48: an exact
  // fit), 32 (would take that file over: the next), 8.
  std::vector<Tensor> tensors = {{"a", {4}}, {"big", {10, 10}}, {"c", {12}}, {"d", {2, 4}}, {"e", {2}}};
  std::vector<std::string> paths;
  ASSERT_TRUE(WriteSplit(dir, tensors, 64, &paths).ok());
  // big (alone, numbered before the file being filled) | a c | d e.
  EXPECT_EQ(Listing(dir), (std::vector<std::string>{"model-00001-of-00003.safetensors",
                                                    "model-00002-of-00003.safetensors",
                                                    "model-00003-of-00003.safetensors", "model.safetensors.index.json"}));
  ASSERT_EQ(paths.size(), 4u);
  EXPECT_EQ(paths.back(), dir + "/model.safetensors.index.json");
  auto index = io::ParseJson(ReadText(dir + "/model.safetensors.index.json"));
  ASSERT_TRUE(index.ok()) << index.status();
  const io::JsonValue* total = index->Find("metadata")->Find("total_size");
  ASSERT_NE(total, nullptr);
  EXPECT_EQ(total->uint64_value(), 16u + 400 + 48 + 32 + 8);
  const io::JsonValue* wm = index->Find("weight_map");
  ASSERT_NE(wm, nullptr);
  std::map<std::string, std::string> want = {{"a", "model-00002-of-00003.safetensors"},
                                             {"big", "model-00001-of-00003.safetensors"},
                                             {"c", "model-00002-of-00003.safetensors"},
                                             {"d", "model-00003-of-00003.safetensors"},
                                             {"e", "model-00003-of-00003.safetensors"}};
  std::map<std::string, std::string> got;
  for (const auto& [k, v] : wm->object()) got[k] = v.string_value();
  EXPECT_EQ(got, want);

  auto m = io::SafetensorsModel::Open(dir + "/model.safetensors.index.json");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->files().size(), 3u);
  EXPECT_EQ((*m)->metadata(), (std::vector<std::pair<std::string, std::string>>{{"format", "pt"}}));
  ASSERT_EQ((*m)->tensors().size(), tensors.size());
  for (size_t i = 0; i < (*m)->tensors().size(); ++i) {
    const auto& t = (*m)->tensors()[i];
    size_t src = 0;
    while (tensors[src].name != t.name) ++src;
    EXPECT_EQ(t.shape, tensors[src].shape) << t.name;
    uint64_t n = 1;
    for (uint64_t d : t.shape) n *= d;
    auto want_bytes = Values(src, n);
    auto bytes = (*m)->TensorBytes(i);
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), want_bytes.begin(), want_bytes.end())) << t.name;
  }
  // Every shard is a complete safetensors file with the model's metadata.
  for (size_t k = 0; k < 3; ++k) {
    auto one = io::SafetensorsModel::Open(paths[k]);
    ASSERT_TRUE(one.ok()) << one.status();
    EXPECT_EQ((*one)->metadata().size(), 1u);
  }
}

TEST(SafetensorsSplit, EverythingInOneFileIsWrittenWithoutAnIndex) {
  std::string dir = MakeTempDir();
  std::vector<std::string> paths;
  ASSERT_TRUE(WriteSplit(dir, {{"a", {4}}, {"b", {4}}}, 1000, &paths).ok());
  EXPECT_EQ(Listing(dir), std::vector<std::string>{"model.safetensors"});
  EXPECT_EQ(paths, std::vector<std::string>{dir + "/model.safetensors"});
}

TEST(SafetensorsSplit, DuplicateNamesAcrossFilesAreRefusedBeforeWriting) {
  std::string dir = MakeTempDir();
  absl::Status s = WriteSplit(dir, {{"a", {4}}, {"b", {4}}, {"a", {4}}}, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("duplicate tensor name"), std::string::npos) << s;
  EXPECT_TRUE(Listing(dir).empty());
}

TEST(SafetensorsSplit, AbandonedWriteLeavesNothing) {
  std::string dir = MakeTempDir();
  {
    io::SafetensorsSplitOptions options;
    options.max_bytes = 1;
    auto w = io::SafetensorsSplitWriter::Create(dir + "/model.safetensors", {},
                                                {{"a", DType::kU8, {1}}, {"b", DType::kU8, {1}}}, options);
    ASSERT_TRUE(w.ok()) << w.status();
    uint8_t x = 1;
    ASSERT_TRUE((*w)->WriteNext({&x, 1}).ok());  // the first shard is complete and sealed
    EXPECT_FALSE((*w)->Finish().ok());
  }
  EXPECT_TRUE(Listing(dir).empty());
}

TEST(SafetensorsSplit, ConvertSplitsAndTheSplitReadsBackBitIdentical) {
  std::string dir = MakeTempDir();
  auto r = RunCli({"convert", TinyStories(), "-o", dir + "/model.safetensors", "--split-max-size", "500K"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> names = Listing(dir);
  ASSERT_GE(names.size(), 4u) << r.output;
  EXPECT_EQ(names.back(), "model.safetensors.index.json");
  const size_t n = names.size() - 1;
  for (size_t k = 0; k < n; ++k) EXPECT_EQ(dir + "/" + names[k], io::SafetensorsShardPath(dir + "/model", k, n));
  EXPECT_NE(r.output.find("model.safetensors.index.json"), std::string::npos) << r.output;
  ExpectSameModel(TinyStories(), dir + "/model.safetensors.index.json");
  // The 1 MiB embedding (over 500K) is alone in its file.
  auto m = io::SafetensorsModel::Open(dir + "/model.safetensors.index.json");
  ASSERT_TRUE(m.ok());
  for (const auto& t : (*m)->tensors()) {
    if (t.data_end - t.data_begin <= 500'000) continue;
    size_t in_file = 0;
    for (const auto& u : (*m)->tensors()) in_file += u.file_index == t.file_index;
    EXPECT_EQ(in_file, 1u) << t.name;
  }
  // Read back through the index: to one file, to .bolt and back.
  ASSERT_EQ(RunCli({"convert", dir + "/model.safetensors.index.json", "-o", dir + "/one.safetensors"}).exit_code, 0);
  ExpectSameModel(TinyStories(), dir + "/one.safetensors");
  ASSERT_EQ(RunCli({"convert", dir + "/model.safetensors.index.json", "-o", dir + "/m.bolt"}).exit_code, 0);
  std::string back = MakeTempDir();
  auto b = RunCli({"convert", dir + "/m.bolt", "-o", back + "/model.safetensors.index.json", "--split-max-tensors",
                   "3"});
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(Listing(back).size(), (20u + 2) / 3 + 1);
  ExpectSameModel(TinyStories(), back + "/model.safetensors.index.json");
}

TEST(SafetensorsSplit, IndexNameOutputWritesTheSameFiles) {
  std::string a = MakeTempDir(), b = MakeTempDir();
  ASSERT_EQ(RunCli({"convert", TinyStories(), "-o", a + "/model.safetensors", "--split-max-size", "300K"}).exit_code,
            0);
  ASSERT_EQ(
      RunCli({"convert", TinyStories(), "-o", b + "/model.safetensors.index.json", "--split-max-size", "300K"})
          .exit_code,
      0);
  ASSERT_EQ(Listing(a), Listing(b));
  for (const auto& name : Listing(a)) EXPECT_EQ(ReadText(a + "/" + name), ReadText(b + "/" + name)) << name;
  // A fit in one file: model.safetensors alone, as Hugging Face.
  std::string c = MakeTempDir();
  auto one = RunCli({"convert", TinyStories(), "-o", c + "/model.safetensors.index.json", "--split-max-size", "1G"});
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(Listing(c), std::vector<std::string>{"model.safetensors"});
  ExpectSameModel(TinyStories(), c + "/model.safetensors");
}

TEST(SafetensorsSplit, StaleShardsOfTheReplacedIndexAreRemoved) {
  std::string dir = MakeTempDir();
  ASSERT_EQ(RunCli({"convert", TinyStories(), "-o", dir + "/model.safetensors", "--split-max-size", "200K"}).exit_code,
            0);
  const size_t many = Listing(dir).size();
  // Not named by any index: never removed.
  std::ofstream(dir + "/model-00007-of-00099.safetensors") << "x";
  std::ofstream(dir + "/notes.txt") << "x";
  auto r = RunCli({"convert", TinyStories(), "-o", dir + "/model.safetensors", "--split-max-size", "1500K"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("removed " + dir + "/model-00001-of-"), std::string::npos) << r.output;
  std::vector<std::string> names = Listing(dir);
  EXPECT_LT(names.size(), many + 2);
  const std::string total = std::to_string(names.size() - 3);  // less the index and the two others
  for (const auto& name : names) {
    if (name == "model.safetensors.index.json" || name == "notes.txt" || name == "model-00007-of-00099.safetensors") {
      continue;
    }
    EXPECT_NE(name.find("-of-0000" + total + ".safetensors"), std::string::npos) << name;
  }
  ExpectSameModel(TinyStories(), dir + "/model.safetensors.index.json");
  // All in one file now: the replaced index goes (first), then its shards.
  auto one = RunCli({"convert", TinyStories(), "-o", dir + "/model.safetensors", "--split-max-size", "1G"});
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_NE(one.output.find("removed " + dir + "/model.safetensors.index.json"), std::string::npos) << one.output;
  EXPECT_EQ(Listing(dir), (std::vector<std::string>{"model-00007-of-00099.safetensors", "model.safetensors",
                                                    "notes.txt"}));
  ExpectSameModel(TinyStories(), dir + "/model.safetensors");
}

TEST(SafetensorsSplit, Refusals) {
  std::string dir = MakeTempDir();
  // A model.safetensors beside the split would be read instead of the index.
  std::filesystem::copy_file(TinyStories(), dir + "/model.safetensors");
  auto beside = RunCli({"convert", dir + "/model.safetensors", "-o", dir + "/model.safetensors.index.json",
                        "--split-max-size", "500K"});
  EXPECT_EQ(beside.exit_code, 1) << beside.output;
  EXPECT_NE(beside.output.find(dir + "/model.safetensors: exists beside the split output"), std::string::npos)
      << beside.output;
  EXPECT_EQ(Listing(dir), std::vector<std::string>{"model.safetensors"});
  // An index names a split: without a split option it is a usage error.
  auto no_split = RunCli({"convert", TinyStories(), "-o", dir + "/x.safetensors.index.json"});
  EXPECT_EQ(no_split.exit_code, 2) << no_split.output;
  EXPECT_NE(no_split.output.find("x.safetensors.index.json: an index names a split model"), std::string::npos)
      << no_split.output;
  // Other outputs do not split this way.
  auto bolt = RunCli({"convert", TinyStories(), "-o", dir + "/x.bolt", "--split-max-size", "1M"});
  EXPECT_EQ(bolt.exit_code, 2) << bolt.output;
  EXPECT_NE(bolt.output.find("split .gguf and .safetensors output"), std::string::npos) << bolt.output;
  // The index of the input is never overwritten.
  std::string in = MakeTempDir();
  ASSERT_EQ(RunCli({"convert", TinyStories(), "-o", in + "/model.safetensors", "--split-max-size", "500K"}).exit_code,
            0);
  const std::vector<std::string> before = Listing(in);
  const std::string index = in + "/model.safetensors.index.json";
  const std::string old_index = ReadText(index);
  auto self = RunCli({"convert", index, "-o", index, "--split-max-size", "200K"});
  EXPECT_EQ(self.exit_code, 1) << self.output;
  EXPECT_NE(self.output.find(index), std::string::npos) << self.output;
  EXPECT_EQ(Listing(in), before);
  EXPECT_EQ(ReadText(index), old_index);
  EXPECT_EQ(Listing(dir), std::vector<std::string>{"model.safetensors"});
}

// kill -9 at any moment never leaves an index that names a missing or
// partial shard: the shards get their names (after all are written and
// fsynced) before the index gets its own. Killed at times spread over the
// write of a 48 MiB model split into 4 MB files.
TEST(SafetensorsSplit, KillNineNeverLeavesAnIndexWithoutItsShards) {
  std::string src = MakeTempDir() + "/m.safetensors";
  {
    std::vector<io::SafetensorsTensorDecl> decls;
    for (int i = 0; i < 48; ++i) decls.push_back({"t." + std::to_string(i), DType::kF32, {256, 1024}});
    auto w = io::SafetensorsWriter::Create(src, {}, decls, {}, /*durable=*/false);
    ASSERT_TRUE(w.ok()) << w.status();
    for (int i = 0; i < 48; ++i) ASSERT_TRUE((*w)->WriteNext(Values(i, 256 * 1024)).ok());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  int killed = 0, completed = 0;
  for (int delay_ms : {0, 5, 20, 50, 100, 150, 200, 300, 400, 600, 900, 1300}) {
    SCOPED_TRACE(delay_ms);
    std::string dir = MakeTempDir();
    testing::CliArgv cli({"convert", src, "-o", dir + "/model.safetensors", "--split-max-size", "4M"});
    pid_t pid = ::fork();
    if (pid == 0) {
      int null_fd = ::open("/dev/null", O_RDWR);
      ::dup2(null_fd, 1);
      ::dup2(null_fd, 2);
      ::execv(cli.pointers[0], cli.pointers.data());
      ::_exit(127);
    }
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status)) {
      ASSERT_EQ(WEXITSTATUS(status), 0);
      ++completed;
    } else {
      ++killed;
    }
    const std::string index = dir + "/model.safetensors.index.json";
    for (const auto& name : Listing(dir)) {
      EXPECT_TRUE(name == "model.safetensors.index.json" || io::IsSafetensorsShardName(name, "model")) << name;
    }
    if (std::filesystem::exists(index)) {
      auto m = io::SafetensorsModel::Open(index);  // every shard there, complete
      ASSERT_TRUE(m.ok()) << m.status();
      EXPECT_EQ((*m)->tensors().size(), 48u);
    }
  }
  EXPECT_GT(killed, 0);
  std::printf("killed %d runs, %d completed first\n", killed, completed);
}

// A Hugging Face checkpoint folder whose weights are a split: read through
// its index, which (like its shards) is never overwritten.
TEST(SafetensorsSplit, CheckpointFolderWithASplitReadsAndKeepsItsIndex) {
  std::string hf = MakeTempDir();
  const std::string from = SourceDir() + "/testdata/tinystories-656k";
  for (const auto& e : std::filesystem::directory_iterator(from)) {
    const std::string name = e.path().filename().string();
    if (name.ends_with(".json")) std::filesystem::copy_file(e.path(), hf + "/" + name);
  }
  ASSERT_EQ(RunCli({"convert", TinyStories(), "-o", hf + "/model.safetensors", "--split-max-size", "500K"}).exit_code,
            0);
  std::string out = MakeTempDir();
  auto a = RunCli({"convert", hf, "-o", out + "/split.gguf"});
  ASSERT_EQ(a.exit_code, 0) << a.output;
  auto b = RunCli({"convert", from, "-o", out + "/one.gguf"});
  ASSERT_EQ(b.exit_code, 0) << b.output;
  ASSERT_EQ(RunCli({"convert", out + "/split.gguf", "-o", out + "/split.safetensors"}).exit_code, 0);
  ASSERT_EQ(RunCli({"convert", out + "/one.gguf", "-o", out + "/one.safetensors"}).exit_code, 0);
  // The same tensors (general.name comes from the folder's name).
  ExpectSameModel(out + "/one.safetensors", out + "/split.safetensors", /*with_metadata=*/false);
  const std::string index = hf + "/model.safetensors.index.json";
  const std::string before = ReadText(index);
  auto self = RunCli({"convert", hf, "-o", index, "--split-max-size", "300K"});
  EXPECT_EQ(self.exit_code, 1) << self.output;
  EXPECT_NE(self.output.find(index), std::string::npos) << self.output;
  EXPECT_EQ(ReadText(index), before);
}

TEST(SafetensorsSplit, AFailedWriteLeavesNoFile) {
  std::string dir = MakeTempDir();
  // Files capped at 600 KB: the 1 MiB embedding's shard cannot be written.
  auto r = RunCliWithFileSizeLimit(
      {"convert", TinyStories(), "-o", dir + "/model.safetensors", "--split-max-size", "300K"}, 600'000);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Listing(dir).empty()) << r.output;
}

}  // namespace
}  // namespace boltpack
