// Convert pipelines its tensors over threads (tools/convert.cc): whatever
// the thread count, the file has the same bytes (its random file_id, in
// the header and footer, aside).
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::MakeTempDir;
using testing::ReadFileBytes;
using testing::RunCli;
using testing::SourceDir;

// The file less its header and footer (each 64 bytes; they hold the file_id).
std::vector<uint8_t> Body(const std::string& path) {
  std::vector<uint8_t> b = ReadFileBytes(path);
  if (b.size() < 128) return b;
  return std::vector<uint8_t>(b.begin() + 64, b.end() - 64);
}

std::vector<uint8_t> Header(const std::string& path) {
  std::vector<uint8_t> b = ReadFileBytes(path);
  b.resize(std::min<size_t>(b.size(), 24));  // magic, version, alignment: before file_id
  return b;
}

TEST(ConvertThreads, SameBytesForOneThreadAndMany) {
  const std::string src = SourceDir() + "/testdata/tinystories-656k/model.safetensors";
  const std::string dir = MakeTempDir();
  // Several codecs at once, zstd on: the tensors take different times, so
  // they finish out of order.
  const std::vector<std::string> rules = {"--codec", "*lm_head*=bf16-huffman:from_f32=true", "--codec", "*attn*=q8_0",
                                          "--codec", "*mlp*=nvfp4",
                                          "--zstd",  "3"};
  std::vector<std::string> outputs;
  for (const char* threads : {"1", "2", "7"}) {
    const std::string out = dir + "/t" + threads + ".bolt";
    std::vector<std::string> args = {"convert", src, "-o", out, "--threads", threads, "--no-fsync"};
    args.insert(args.end(), rules.begin(), rules.end());
    auto c = RunCli(args);
    ASSERT_EQ(c.exit_code, 0) << c.output;
    outputs.push_back(out);
  }
  const auto one = Body(outputs[0]);
  ASSERT_GT(one.size(), 100000u);
  for (size_t k = 1; k < outputs.size(); ++k) {
    EXPECT_EQ(Header(outputs[k]), Header(outputs[0])) << outputs[k];
    EXPECT_TRUE(Body(outputs[k]) == one) << outputs[k] << " differs from " << outputs[0];
    auto v = RunCli({"verify", outputs[k]});
    EXPECT_EQ(v.exit_code, 0) << v.output;
  }
}

}  // namespace
}  // namespace boltpack
