// Split GGUF output (convert --split-max-size), as llama.cpp's gguf-split
// writes it: names, split.* keys and their types/order, tensor distribution,
// and that the reader opens the set as the unsplit model.
#include <algorithm>
#include <filesystem>

#include "gtest/gtest.h"
#include "io/gguf.h"
#include "io/gguf_split.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::ReadFileBytes;
using testing::RunCli;
using testing::SharedDir;
using testing::SourceDir;

std::string Gguf(const std::string& name) { return SourceDir() + "/testdata/gguf/" + name + ".gguf"; }

TEST(GgufSplit, ParseSize) {
  EXPECT_EQ(*io::ParseGgufSplitSize("500M"), 500'000'000u);
  EXPECT_EQ(*io::ParseGgufSplitSize("2G"), 2'000'000'000u);
  EXPECT_EQ(*io::ParseGgufSplitSize("10K"), 10'000u);
  EXPECT_EQ(*io::ParseGgufSplitSize("4096"), 4096u);
  EXPECT_EQ(*io::ParseGgufSplitSize("3gb"), 3'000'000'000u);
  for (const char* bad : {"", "0", "M", "12x", "-5M", "1.5G", "99999999999999999999", "20000000000G"}) {
    SCOPED_TRACE(bad);
    auto r = io::ParseGgufSplitSize(bad);
    EXPECT_FALSE(r.ok());
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("split size"), std::string::npos);
    }
  }
}

TEST(GgufSplit, PlanKeepsOrderAndGivesBigTensorsTheirOwnFile) {
  using V = std::vector<size_t>;
  EXPECT_EQ(io::PlanGgufSplit(std::vector<uint64_t>{64, 64, 64, 64}, 128, 0, 32), (V{0, 2}));
  // Sizes pad to the alignment (as gguf-split's GGML_PAD) before the test.
  EXPECT_EQ(io::PlanGgufSplit(std::vector<uint64_t>{60, 60, 60}, 128, 0, 32), (V{0, 2}));
  EXPECT_EQ(io::PlanGgufSplit(std::vector<uint64_t>{64, 1000, 64}, 128, 0, 32), (V{0, 1, 2}));
  EXPECT_EQ(io::PlanGgufSplit(std::vector<uint64_t>{1000, 64, 64}, 128, 0, 32), (V{0, 1}));
  EXPECT_EQ(io::PlanGgufSplit(std::vector<uint64_t>{1, 2, 3}, 0, 0, 32), (V{0}));
  EXPECT_EQ(io::PlanGgufSplit(std::vector<uint64_t>{1, 2, 3, 4, 5}, 0, 2, 32), (V{0, 2, 4}));
  EXPECT_EQ(io::PlanGgufSplit(std::vector<uint64_t>{}, 128, 0, 32), (V{0}));
  EXPECT_EQ(io::GgufSplitPrefix("dir/model.gguf"), "dir/model");
  EXPECT_EQ(io::GgufSplitPrefix("model.GGUF"), "model");
}

const MetaValue* Find(const Metadata& m, std::string_view key) {
  for (const auto& [k, v] : m) {
    if (k == key) return &v;
  }
  return nullptr;
}

// The split files dir/out-*.gguf, in name order.
std::vector<std::string> SplitFiles(const std::string& dir) {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("out-", 0) == 0) paths.push_back(e.path().string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

TEST(GgufSplit, ConvertSplitsLikeGgufSplitAndReopensAsTheSameModel) {
  std::string dir = MakeTempDir();
  std::string src = Gguf("ggml-writer-experts");
  auto r = RunCli({"convert", src, "-o", dir + "/out.gguf", "--split-max-size", "100K"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> paths = SplitFiles(dir);
  ASSERT_GE(paths.size(), 3u) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/out.gguf"));
  size_t n = paths.size();
  for (size_t k = 0; k < n; ++k) EXPECT_EQ(paths[k], io::GgufSplitPath(dir + "/out", static_cast<int>(k), static_cast<int>(n)));

  auto orig = io::GgufModel::Open(src);
  ASSERT_TRUE(orig.ok()) << orig.status();
  auto split = io::GgufModel::Open(paths[0]);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ((*split)->shard_count(), n);
  // Tensors: same names, order, types, dims and bytes.
  ASSERT_EQ((*split)->tensors().size(), (*orig)->tensors().size());
  for (size_t i = 0; i < (*orig)->tensors().size(); ++i) {
    const auto& a = (*orig)->tensors()[i];
    const auto& b = (*split)->tensors()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.ne, b.ne);
    EXPECT_EQ(a.type, b.type);
    auto x = (*orig)->TensorBytes(i), y = (*split)->TensorBytes(i);
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << a.name;
  }
  // Metadata: the first file has every model key, in order, then the split
  // keys as gguf-split leaves them: split.no, split.tensors.count, split.count.
  const Metadata& m0 = (*split)->metadata();
  const Metadata& mo = (*orig)->metadata();
  ASSERT_EQ(m0.size(), mo.size() + 3);
  for (size_t i = 0; i < mo.size(); ++i) EXPECT_EQ(m0[i], mo[i]) << mo[i].first;
  EXPECT_EQ(m0[mo.size()].first, "split.no");
  EXPECT_EQ(m0[mo.size()].second, MetaValue::Uint(ValueType::kUint16, 0));
  EXPECT_EQ(m0[mo.size() + 1].first, "split.tensors.count");
  EXPECT_EQ(m0[mo.size() + 1].second, MetaValue::Int(ValueType::kInt32, static_cast<int64_t>((*orig)->tensors().size())));
  EXPECT_EQ(m0[mo.size() + 2].first, "split.count");
  EXPECT_EQ(m0[mo.size() + 2].second, MetaValue::Uint(ValueType::kUint16, n));
  // The other files: the three split keys only, each a valid GGUF alone;
  // tensor data within the limit unless one tensor is bigger by itself.
  for (size_t k = 0; k < n; ++k) {
    SCOPED_TRACE(paths[k]);
    std::vector<uint8_t> bytes = ReadFileBytes(paths[k]);
    auto one = io::GgufModel::OpenBuffer(bytes, paths[k]);
    ASSERT_TRUE(one.ok()) << one.status();
    if (k > 0) {
      ASSERT_EQ((*one)->metadata().size(), 3u);
      EXPECT_EQ(Find((*one)->metadata(), "split.no")->u, k);
      EXPECT_EQ(Find((*one)->metadata(), "split.count")->u, n);
    }
    uint64_t data = (*one)->file_size(0) - (*one)->data_offset(0);
    EXPECT_TRUE(data <= 100'000 || (*one)->tensors().size() == 1) << data;
    EXPECT_GE((*one)->tensors().size(), 1u);
  }
  // Merging back (convert the first file to one .gguf) is byte-identical.
  auto merge = RunCli({"convert", paths[0], "-o", dir + "/merged.gguf"});
  ASSERT_EQ(merge.exit_code, 0) << merge.output;
  EXPECT_TRUE(ReadFileBytes(dir + "/merged.gguf") == ReadFileBytes(src)) << "merge is not byte-identical";
  // And through .bolt: the split set is one model.
  ASSERT_EQ(RunCli({"convert", paths[0], "-o", dir + "/m.bolt"}).exit_code, 0);
  ASSERT_EQ(RunCli({"convert", dir + "/m.bolt", "-o", dir + "/m.gguf"}).exit_code, 0);
  EXPECT_TRUE(ReadFileBytes(dir + "/m.gguf") == ReadFileBytes(src));
}

TEST(GgufSplit, OneFileWhenEverythingFits) {
  std::string dir = MakeTempDir();
  auto r = RunCli({"convert", Gguf("ggml-writer-all"), "-o", dir + "/out.gguf", "--split-max-size", "1G"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> paths = SplitFiles(dir);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0], dir + "/out-00001-of-00001.gguf");
  auto m = io::GgufModel::Open(paths[0]);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(Find((*m)->metadata(), "split.count")->u, 1u);
}

TEST(GgufSplit, MaxTensorsPerFile) {
  std::string dir = MakeTempDir();
  std::string src = Gguf("ggml-writer-experts");
  auto orig = io::GgufModel::Open(src);
  ASSERT_TRUE(orig.ok()) << orig.status();
  size_t total = (*orig)->tensors().size();
  auto r = RunCli({"convert", src, "-o", dir + "/out.gguf", "--split-max-tensors", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> paths = SplitFiles(dir);
  ASSERT_EQ(paths.size(), (total + 4) / 5);
  for (size_t k = 0; k < paths.size(); ++k) {
    std::vector<uint8_t> bytes = ReadFileBytes(paths[k]);
    auto one = io::GgufModel::OpenBuffer(bytes, paths[k]);
    ASSERT_TRUE(one.ok()) << one.status();
    EXPECT_EQ((*one)->tensors().size(), std::min<size_t>(5, total - 5 * k));
  }
  auto merge = RunCli({"convert", paths[0], "-o", dir + "/merged.gguf"});
  ASSERT_EQ(merge.exit_code, 0) << merge.output;
  EXPECT_TRUE(ReadFileBytes(dir + "/merged.gguf") == ReadFileBytes(src));
}

TEST(GgufSplit, UsageErrors) {
  std::string dir = MakeTempDir();
  auto bolt = RunCli({"convert", Gguf("ggml-writer-all"), "-o", dir + "/x.bolt", "--split-max-size", "1M"});
  EXPECT_EQ(bolt.exit_code, 2) << bolt.output;
  EXPECT_NE(bolt.output.find("split .gguf and .safetensors output"), std::string::npos) << bolt.output;
  auto st = RunCli({"convert", Gguf("ggml-writer-all"), "-o", dir + "/x.safetensors.index.json"});
  EXPECT_EQ(st.exit_code, 2) << st.output;
  auto size = RunCli({"convert", Gguf("ggml-writer-all"), "-o", dir + "/x.gguf", "--split-max-size", "lots"});
  EXPECT_EQ(size.exit_code, 2) << size.output;
  EXPECT_NE(size.output.find("split size \"lots\""), std::string::npos) << size.output;
  EXPECT_EQ(RunCli({"convert", Gguf("ggml-writer-all"), "-o", dir + "/x.bolt", "--split-max-tensors", "2"}).exit_code, 2);
  EXPECT_EQ(RunCli({"convert", Gguf("ggml-writer-all"), "-o", dir + "/x.gguf", "--split-max-tensors", "0"}).exit_code, 2);
  EXPECT_TRUE(SplitFiles(dir).empty());
}

TEST(GgufSplit, SplitLlamaModelStillPassesTheLlamaCheck) {
  std::string src = SourceDir() + "/testdata/tinystories-656k/TinyStories-656K.f16.gguf";
  if (!std::filesystem::exists(src) && !SharedDir().empty()) {
    src = SharedDir() + "/corpus/gguf/tinystories-656k/TinyStories-656K.f16.gguf";
  }
  if (!std::filesystem::exists(src)) GTEST_SKIP() << "no TinyStories GGUF (testdata/tinystories-656k or ../shared)";
  std::string dir = MakeTempDir();
  auto r = RunCli({"convert", src, "-o", dir + "/out.gguf", "--split-max-size", "500K"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> paths = SplitFiles(dir);
  ASSERT_GE(paths.size(), 2u);
  auto v = RunCli({"verify", "--target", "llama.cpp", paths[0]});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  auto merge = RunCli({"convert", paths[0], "-o", dir + "/merged.gguf"});
  ASSERT_EQ(merge.exit_code, 0) << merge.output;
  EXPECT_TRUE(ReadFileBytes(dir + "/merged.gguf") == ReadFileBytes(src));
}

}  // namespace
}  // namespace boltpack
