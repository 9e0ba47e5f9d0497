// Inputs that are not regular files (a FIFO, a folder, a character device)
// are refused at open with "PATH: not a regular file (a FIFO)": a FIFO used
// to block inspect, verify, convert and bp_open forever, waiting for a
// writer. The CLI refuses a named input as a usage error (exit 2, as a
// missing one); a file found through another (a shard of an index) fails
// the command (exit 1). Every run here has a deadline, so a hang fails the
// test instead of blocking it.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "boltpack/boltpack.h"
#include "boltpack/reader.h"
#include "gtest/gtest.h"
#include "io/gguf.h"
#include "common/mapped_file.h"
#include "io/safetensors.h"
#include "tests/test_util.h"

namespace boltpack {
namespace {

using testing::CommandResult;
using testing::MakeTempDir;

constexpr int kDeadlineSeconds = 20;

std::string SourceFile() { return testing::SourceDir() + "/testdata/tinystories-656k/model.safetensors"; }

// RunCli with a deadline: a CLI still running after it is killed (exit
// code 128 + SIGKILL).
CommandResult RunCliWithin(const std::vector<std::string>& args, int seconds = kDeadlineSeconds) {
  testing::CliArgv cli(args);
  char* const* argv = cli.pointers.data();
  int out[2];
  CommandResult result;
  if (::pipe2(out, O_CLOEXEC) != 0) return result;
  pid_t pid = ::fork();
  if (pid == 0) {
    int null_fd = ::open("/dev/null", O_RDONLY);
    ::dup2(null_fd, 0);
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::execv(argv[0], argv);
    ::_exit(127);
  }
  ::close(out[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      result.output += "[killed at the deadline]";
      break;
    }
    struct pollfd p = {out[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    ssize_t n = ::read(out[0], buf, sizeof(buf));
    if (n <= 0) break;
    result.output.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

// A test process that hangs in an open dies of SIGALRM instead.
class NonRegular : public ::testing::Test {
 protected:
  void SetUp() override {
    ::alarm(kDeadlineSeconds * 4);
    dir_ = MakeTempDir();
    fifo_ = dir_ + "/m.bolt";
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
    folder_ = dir_ + "/folder.bolt";
    ASSERT_EQ(::mkdir(folder_.c_str(), 0700), 0);
  }
  void TearDown() override { ::alarm(0); }
  std::string dir_, fifo_, folder_;
};

void ExpectUsageError(const CommandResult& r, const std::string& message) {
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << r.output << "\n  lacks: " << message;
}

TEST_F(NonRegular, TheCliRefusesAFifoAFolderAndADeviceAsUsageErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {fifo_, fifo_ + ": not a regular file (a FIFO)"},
      {folder_, folder_ + ": not a regular file (a directory)"},
      {"/dev/null", "/dev/null: not a regular file (a character device)"}};
  for (const auto& [path, message] : cases) {
    SCOPED_TRACE(path);
    ExpectUsageError(RunCliWithin({"inspect", path}), message);
    ExpectUsageError(RunCliWithin({"verify", path}), message);
    if (path == folder_) {
      // convert reads a folder as a Hugging Face checkpoint (tools/hf_input.cc):
      // this one has none, which is the input's fault (1), not a usage error.
      const CommandResult r = RunCliWithin({"convert", path, "-o", dir_ + "/out.safetensors"});
      EXPECT_EQ(r.exit_code, 1) << r.output;
      EXPECT_NE(r.output.find(folder_ + "/config.json: not found"), std::string::npos) << r.output;
    } else {
      ExpectUsageError(RunCliWithin({"convert", path, "-o", dir_ + "/out.safetensors"}), message);
    }
    ExpectUsageError(RunCliWithin({"slice", path, "--list-budgets"}), message);
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out.safetensors"));
}

TEST_F(NonRegular, SideFilesOfConvertAreRefusedToo) {
  const std::string model = SourceFile();
  ExpectUsageError(RunCliWithin({"convert", model, "-o", dir_ + "/o.bolt", "--recipe", fifo_}),
                   fifo_ + ": not a regular file (a FIFO)");
  ExpectUsageError(RunCliWithin({"convert", model, "-o", dir_ + "/o.bolt", "--elastic", fifo_}),
                   fifo_ + ": not a regular file (a FIFO)");
  ExpectUsageError(RunCliWithin({"convert", model, "-o", dir_ + "/o.bolt", "--imatrix", "/dev/null"}),
                   "/dev/null: not a regular file (a character device)");
}

TEST_F(NonRegular, AShardThatIsAFifoFailsTheCommand) {
  // An index naming a FIFO as its shard: found through the index, so the
  // command fails (exit 1) rather than being misused.
  const std::string shard = dir_ + "/model-00001-of-00001.safetensors";
  ASSERT_EQ(::mkfifo(shard.c_str(), 0600), 0);
  const std::string index = dir_ + "/model.safetensors.index.json";
  std::ofstream(index) << R"({"metadata": {}, "weight_map": {"w": "model-00001-of-00001.safetensors"}})";
  for (const char* command : {"inspect", "verify"}) {
    auto r = RunCliWithin({command, index});
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.output;
    EXPECT_NE(r.output.find(shard + ": not a regular file (a FIFO)"), std::string::npos) << r.output;
  }
}

TEST_F(NonRegular, AGgufSplitSiblingThatIsAFifoFailsTheCommand) {
  const std::string gguf = testing::SourceDir() + "/testdata/tinystories-656k/TinyStories-656K.f16.gguf";
  auto c = RunCliWithin({"convert", gguf, "-o", dir_ + "/s.gguf", "--split-max-tensors", "10", "--no-fsync"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  const std::string second = dir_ + "/s-00002-of-00002.gguf";
  ASSERT_TRUE(std::filesystem::remove(second)) << c.output;
  ASSERT_EQ(::mkfifo(second.c_str(), 0600), 0);
  auto r = RunCliWithin({"inspect", dir_ + "/s-00001-of-00002.gguf"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(second + ": not a regular file (a FIFO)"), std::string::npos) << r.output;
}

TEST_F(NonRegular, EveryOpenOfTheLibraryRefusesThem) {
  for (const std::string& path : {fifo_, folder_, std::string("/dev/null")}) {
    SCOPED_TRACE(path);
    auto map = io::MappedFile::Open(path);
    ASSERT_FALSE(map.ok());
    EXPECT_EQ(map.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(map.status().message().find(path + ": not a regular file (a"), std::string::npos) << map.status();
    EXPECT_FALSE(Reader::Open(path).ok());
    EXPECT_FALSE(io::GgufModel::Open(path).ok());
    EXPECT_FALSE(io::SafetensorsModel::Open(path).ok());
    EXPECT_FALSE(io::ReadRegularFile(path, 1 << 20).ok());
  }
  EXPECT_EQ(io::MappedFile::Open(dir_ + "/missing.bolt").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(io::CheckRegularFile(SourceFile()).ok());
}

TEST_F(NonRegular, BpOpenRefusesAFifo) {
  for (const std::string& path : {fifo_, folder_, std::string("/dev/null")}) {
    SCOPED_TRACE(path);
    bp_reader* r = reinterpret_cast<bp_reader*>(1);
    EXPECT_EQ(bp_open(path.c_str(), &r), BP_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(r, nullptr);
    EXPECT_NE(std::string(bp_last_error_message()).find(path + ": not a regular file (a"), std::string::npos)
        << bp_last_error_message();
  }
}

}  // namespace
}  // namespace boltpack
