// Long work keeps its resident memory bounded whatever the model's size:
// a one-pass tool drops the pages of a mapped input from its address space
// once it is done with them (convert: Inputs::Release after each tensor;
// slice: StreamCutPieces behind its pieces, whose own test reads the page
// table; verify: after each tensor's checksums and decode). Measured here as the CLI's peak resident memory beside its own
// baseline (`--version`), for a 64 MiB model.
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/sanitizers.h"
#include "gtest/gtest.h"
#include "io/safetensors.h"
#include "tests/test_util.h"


namespace boltpack {
namespace {

using testing::CliPeakResidentKib;
using testing::MakeTempDir;

constexpr int kTensors = 64;
constexpr uint64_t kRows = 256, kCols = 1024;  // 1 MiB of f32 each
// Well below the 64 MiB a tool holding its input mapped would show.
constexpr int64_t kMarginKib = 24 * 1024;

std::string WriteModel(const std::string& dir) {
  std::string path = dir + "/model.safetensors";
  std::vector<io::SafetensorsTensorDecl> decls;
  for (int i = 0; i < kTensors; ++i) decls.push_back({"t." + std::to_string(i), DType::kF32, {kRows, kCols}});
  auto w = io::SafetensorsWriter::Create(path, {}, decls, {});
  EXPECT_TRUE(w.ok()) << w.status();
  std::vector<float> values(kRows * kCols);
  for (int i = 0; i < kTensors; ++i) {
    for (size_t k = 0; k < values.size(); ++k) values[k] = static_cast<float>((k * 7 + i) % 1000) * 0.001f;
    std::vector<uint8_t> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    EXPECT_TRUE((*w)->WriteNext(bytes).ok());
  }
  EXPECT_TRUE((*w)->Finish().ok());
  return path;
}

// A 64 MiB model in a fresh folder, and the CLI's baseline.
class BoundedMemory : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef BOLTPACK_ASAN
    GTEST_SKIP() << "ASan keeps freed buffers in quarantine: resident memory would measure the sanitizer";
#endif
    dir_ = MakeTempDir();
    model_ = WriteModel(dir_);
    for (const char* sub : {"/split", "/again"}) std::filesystem::create_directory(dir_ + sub);
    baseline_ = CliPeakResidentKib({"--version"});
    ASSERT_GT(baseline_, 0);
  }
  // Runs the CLI and expects it to succeed well below the model's size.
  void ExpectBounded(const std::vector<std::string>& args) {
    const int64_t peak = CliPeakResidentKib(args);
    ASSERT_GT(peak, 0) << args[0] << " failed";
    EXPECT_LT(peak, baseline_ + kMarginKib) << args[0] << ": baseline " << baseline_ << " KiB";
  }
  std::string dir_, model_;
  int64_t baseline_ = 0;
};

TEST_F(BoundedMemory, ConvertHoldsAboutATensorNotTheModel) {
  // safetensors -> .bolt (every tensor encoded), then .bolt -> GGUF.
  ExpectBounded({"convert", model_, "-o", dir_ + "/m.bolt", "--no-fsync"});
  ExpectBounded({"convert", dir_ + "/m.bolt", "-o", dir_ + "/m.gguf", "--no-fsync"});
}

TEST_F(BoundedMemory, SplitSafetensorsOutputHoldsAboutATensorNotTheModel) {
  // Hugging Face's split layout, 4 MB files: each file is sealed (its buffer
  // freed) when its last tensor is written, so no file is held whole.
  ASSERT_EQ(testing::RunCli({"convert", model_, "-o", dir_ + "/m.bolt", "--no-fsync"}).exit_code, 0);
  ExpectBounded({"convert", dir_ + "/m.bolt", "-o", dir_ + "/split/model.safetensors", "--split-max-size", "4M",
                 "--no-fsync"});
  ExpectBounded({"convert", dir_ + "/split/model.safetensors.index.json", "-o", dir_ + "/again/model.safetensors",
                 "--split-max-size", "10M", "--no-fsync"});
}

TEST_F(BoundedMemory, VerifyHoldsAboutATensorNotTheModel) {
  ASSERT_EQ(testing::RunCli({"convert", model_, "-o", dir_ + "/m.bolt", "--no-fsync"}).exit_code, 0);
  // Checksums of every stream, then every tensor decoded.
  ExpectBounded({"verify", dir_ + "/m.bolt"});
}

}  // namespace
}  // namespace boltpack
