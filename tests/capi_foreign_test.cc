// bp_open on GGUF (also a split set) and safetensors (also a sharded index)
// files: the same handle lists, describes, finds, reads metadata of and
// decodes (whole and by range) their tensors. The oracle for a GGUF model is
// the .bolt `bolt-pack convert` makes of it (same codecs, the blocks kept
// as they are), decoded through the same API; for safetensors, the file's
// own bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "boltpack/boltpack.h"
#include "codecs/float_convert.h"
#include "io/safetensors.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

std::string TinyStories(const std::string& file) { return testing::SourceDir() + "/testdata/tinystories-656k/" + file; }
std::string Gguf(const std::string& name) { return testing::SourceDir() + "/testdata/gguf/" + name + ".gguf"; }

struct Opened {
  bp_reader* r = nullptr;
  explicit Opened(const std::string& path) { EXPECT_EQ(bp_open(path.c_str(), &r), BP_OK) << bp_last_error_message(); }
  ~Opened() { bp_close(r); }
};

std::vector<uint8_t> DecodeAll(bp_reader* r, size_t t, bp_output out, bp_status* st) {
  uint64_t n = 0;
  *st = bp_decoded_size(r, t, out, &n);
  if (*st != BP_OK) return {};
  std::vector<uint8_t> bytes(n);
  *st = bp_decode(r, t, out, bytes.data(), n, 2);
  return bytes;
}

// Every tensor of `a` and `b` has the same name, shape and dtype, and
// decodes to the same bytes in f32 and bf16 (or fails the same way).
// Returns how many decodes succeeded, so a caller can tell "all equal"
// from "all refused".
size_t ExpectSameTensors(bp_reader* a, bp_reader* b) {
  size_t decoded = 0;
  EXPECT_EQ(bp_tensor_count(a), bp_tensor_count(b));
  if (bp_tensor_count(a) != bp_tensor_count(b)) return 0;
  EXPECT_GT(bp_tensor_count(a), 0u);
  for (size_t t = 0; t < bp_tensor_count(a); ++t) {
    struct bp_tensor_info x, y;
    if (bp_tensor_info(a, t, &x) != BP_OK || bp_tensor_info(b, t, &y) != BP_OK) {
      ADD_FAILURE() << "tensor #" << t << ": " << bp_last_error(a) << " / " << bp_last_error(b);
      return decoded;
    }
    EXPECT_STREQ(x.name, y.name);
    EXPECT_EQ(x.ndim, y.ndim) << x.name;
    EXPECT_TRUE(std::equal(x.shape, x.shape + BP_MAX_DIMS, y.shape)) << x.name;
    EXPECT_EQ(x.dtype, y.dtype) << x.name;
    EXPECT_STREQ(x.codec, y.codec) << x.name;
    size_t found = SIZE_MAX;
    EXPECT_EQ(bp_find_tensor(a, x.name, &found), BP_OK);
    EXPECT_EQ(found, t);
    for (bp_output out : {BP_OUT_F32, BP_OUT_BF16}) {
      bp_status sa, sb;
      auto da = DecodeAll(a, t, out, &sa);
      auto db = DecodeAll(b, t, out, &sb);
      EXPECT_EQ(sa, sb) << x.name << ": " << bp_last_error(a) << " / " << bp_last_error(b);
      EXPECT_TRUE(da == db) << x.name << " to " << out;
      decoded += sa == BP_OK;
    }
  }
  return decoded;
}

// Rows and columns of a 2-D tensor equal its whole decode cut by hand.
void ExpectRangeIsACut(bp_reader* r, size_t t) {
  struct bp_tensor_info info;
  ASSERT_EQ(bp_tensor_info(r, t, &info), BP_OK);
  ASSERT_EQ(info.ndim, 2u);
  const uint64_t rows = info.shape[0], cols = info.shape[1];
  ASSERT_GE(rows, 4u);
  ASSERT_GE(cols, 4u);
  bp_status st;
  std::vector<uint8_t> all = DecodeAll(r, t, BP_OUT_F32, &st);
  ASSERT_EQ(st, BP_OK) << bp_last_error(r);
  const uint64_t r0 = 1, r1 = rows - 1, c0 = 1, c1 = cols - 2;
  std::vector<uint8_t> want;
  for (uint64_t i = r0; i < r1; ++i) {
    const uint8_t* row = all.data() + i * cols * 4;
    want.insert(want.end(), row + c0 * 4, row + c1 * 4);
  }
  for (int threads : {1, 0}) {
    std::vector<uint8_t> got(want.size());
    ASSERT_EQ(bp_decode_range(r, t, r0, r1, c0, c1, BP_OUT_F32, got.data(), got.size(), threads), BP_OK)
        << bp_last_error(r);
    EXPECT_TRUE(got == want) << info.name;
  }
  EXPECT_EQ(bp_decode_range(r, t, 0, rows + 1, 0, cols, BP_OUT_F32, all.data(), all.size(), 1), BP_ERR_OUT_OF_RANGE);
}

size_t First2D(bp_reader* r, const std::string& codec) {
  for (size_t t = 0; t < bp_tensor_count(r); ++t) {
    struct bp_tensor_info info;
    if (bp_tensor_info(r, t, &info) == BP_OK && info.ndim == 2 && codec == info.codec) return t;
  }
  ADD_FAILURE() << "no 2-D " << codec << " tensor";
  return 0;
}

TEST(CApiForeign, GgufOpensAsTheBoltItConvertsTo) {
  for (const char* file : {"TinyStories-656K-Q8_0.from-llama.cpp.zig.gguf", "TinyStories-656K.f16.gguf"}) {
    const std::string src = TinyStories(file);
    const std::string bolt = testing::MakeTempDir() + "/model.bolt";
    auto cli = testing::RunCli({"convert", src, "-o", bolt});
    ASSERT_EQ(cli.exit_code, 0) << cli.output;
    Opened g(src), b(bolt);
    ASSERT_NE(g.r, nullptr);
    ASSERT_NE(b.r, nullptr);
    // Every tensor of these models decodes, to both outputs.
    EXPECT_EQ(ExpectSameTensors(g.r, b.r), 2 * bp_tensor_count(g.r));
    ExpectRangeIsACut(g.r, First2D(g.r, std::string(file).find("Q8_0") != std::string::npos ? "q8_0" : "f16"));
    // Metadata: GGUF's own keys and types.
    size_t k = SIZE_MAX;
    ASSERT_EQ(bp_metadata_find(g.r, "general.architecture", &k), BP_OK) << bp_last_error(g.r);
    const char* arch = nullptr;
    size_t len = 0;
    ASSERT_EQ(bp_metadata_get_string(g.r, k, &arch, &len), BP_OK);
    EXPECT_EQ(std::string(arch, len), "llama");
    // Zero-copy bytes are the tensor's GGUF bytes (its stored size).
    struct bp_tensor_info info;
    ASSERT_EQ(bp_tensor_info(g.r, 0, &info), BP_OK);
    const void* data = nullptr;
    uint64_t size = 0;
    ASSERT_EQ(bp_stream_data(g.r, 0, 0, &data, &size), BP_OK);
    EXPECT_EQ(size, info.stored_bytes);
    EXPECT_NE(data, nullptr);
    // What only a .bolt file has.
    EXPECT_EQ(bp_view_count(g.r), 1u);
    EXPECT_STREQ(bp_view_name(g.r, 0), "full");
    EXPECT_EQ(bp_view_name(g.r, 1), nullptr);
    EXPECT_EQ(bp_verify(g.r), BP_ERR_UNSUPPORTED);
    uint32_t major, minor;
    EXPECT_EQ(bp_format_version(g.r, &major, &minor), BP_ERR_UNSUPPORTED);
    EXPECT_EQ(bp_budget_count(g.r), 0u);
    bp_budget* budget = nullptr;
    EXPECT_EQ(bp_budget_open(g.r, "half", nullptr, &budget), BP_ERR_NOT_FOUND);
    EXPECT_EQ(budget, nullptr);
  }
}

TEST(CApiForeign, SplitGgufOpensByItsFirstShardAsTheWholeModel) {
  const std::string dir = testing::MakeTempDir();
  const std::string src = Gguf("ggml-writer-experts");
  auto cli = testing::RunCli({"convert", src, "-o", dir + "/out.gguf", "--split-max-size", "100K"});
  ASSERT_EQ(cli.exit_code, 0) << cli.output;
  std::vector<std::string> shards;
  for (const auto& e : std::filesystem::directory_iterator(dir)) shards.push_back(e.path().string());
  std::sort(shards.begin(), shards.end());
  ASSERT_GE(shards.size(), 3u);
  Opened whole(src), split(shards[0]);
  ASSERT_NE(split.r, nullptr);
  EXPECT_GT(ExpectSameTensors(whole.r, split.r), 0u);
}

TEST(CApiForeign, SafetensorsDecodeToTheirOwnBytes) {
  const std::string path = TinyStories("model.safetensors");
  auto model = io::SafetensorsModel::Open(path);
  ASSERT_TRUE(model.ok()) << model.status();
  Opened s(path);
  ASSERT_NE(s.r, nullptr);
  ASSERT_EQ(bp_tensor_count(s.r), (*model)->tensors().size());
  for (size_t t = 0; t < bp_tensor_count(s.r); ++t) {
    const auto& st = (*model)->tensors()[t];
    struct bp_tensor_info info;
    ASSERT_EQ(bp_tensor_info(s.r, t, &info), BP_OK) << bp_last_error(s.r);
    EXPECT_EQ(std::string(info.name), st.name);
    EXPECT_EQ(info.dtype, static_cast<int>(st.dtype));
    ASSERT_EQ(info.ndim, st.shape.size());
    EXPECT_TRUE(std::equal(st.shape.begin(), st.shape.end(), info.shape));
    // Each float tensor decodes, in its own dtype, to exactly its bytes, and
    // to f32 as the library's own conversion makes it.
    auto bytes = (*model)->TensorBytes(t);
    bp_output own = st.dtype == DType::kF32 ? BP_OUT_F32 : st.dtype == DType::kBF16 ? BP_OUT_BF16 : BP_OUT_F16;
    bp_status status;
    std::vector<uint8_t> got = DecodeAll(s.r, t, own, &status);
    ASSERT_EQ(status, BP_OK) << bp_last_error(s.r);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), bytes.begin(), bytes.end())) << st.name;
    std::vector<uint8_t> f32 = DecodeAll(s.r, t, BP_OUT_F32, &status);
    ASSERT_EQ(status, BP_OK);
    std::vector<uint8_t> want(f32.size());
    ASSERT_TRUE(ConvertFloats(st.dtype, DType::kF32, bytes.data(), want.data(), want.size() / 4));
    EXPECT_TRUE(f32 == want) << st.name;
  }
  ExpectRangeIsACut(s.r, First2D(s.r, "f32"));
}

TEST(CApiForeign, ShardedSafetensorsIndexOpensAsOneModel) {
  const std::string dir = testing::MakeTempDir();
  const std::string src = TinyStories("model.safetensors");
  std::filesystem::copy_file(src, dir + "/model-00001-of-00001.safetensors");
  auto model = io::SafetensorsModel::Open(src);
  ASSERT_TRUE(model.ok()) << model.status();
  std::string index = "{\"metadata\": {}, \"weight_map\": {";
  for (size_t t = 0; t < (*model)->tensors().size(); ++t) {
    index += (t ? ", \"" : "\"") + (*model)->tensors()[t].name + "\": \"model-00001-of-00001.safetensors\"";
  }
  index += "}}";
  std::ofstream(dir + "/model.safetensors.index.json") << index;
  Opened whole(src), sharded(dir + "/model.safetensors.index.json");
  ASSERT_NE(sharded.r, nullptr);
  EXPECT_EQ(ExpectSameTensors(whole.r, sharded.r), 2 * bp_tensor_count(whole.r));
}

TEST(CApiForeign, ForeignFilesHaveNoViewsAndNameTheFileOnFailure) {
  bp_reader* r = reinterpret_cast<bp_reader*>(0x1);
  EXPECT_EQ(bp_open_view(Gguf("ggml-writer-all").c_str(), "draft", &r), BP_ERR_NOT_FOUND);
  EXPECT_EQ(r, nullptr);
  const std::string missing = testing::MakeTempDir() + "/missing.gguf";
  EXPECT_EQ(bp_open(missing.c_str(), &r), BP_ERR_NOT_FOUND);
  EXPECT_NE(std::string(bp_last_error_message()).find(missing), std::string::npos) << bp_last_error_message();
  const std::string garbage = testing::MakeTempDir() + "/garbage.safetensors";
  testing::WriteFileBytes(garbage, std::vector<uint8_t>(64, 0xAB));
  EXPECT_NE(bp_open(garbage.c_str(), &r), BP_OK);
  EXPECT_EQ(r, nullptr);
  EXPECT_NE(std::string(bp_last_error_message()).find(garbage), std::string::npos) << bp_last_error_message();
}

}  // namespace
}  // namespace boltpack
