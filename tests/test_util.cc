#include "tests/test_util.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <stdexcept>

namespace boltpack::testing {

std::string SourceDir() { return BOLTPACK_SOURCE_DIR; }

std::string SharedDir() {
  const char* env = std::getenv("BOLTPACK_SHARED_DIR");
  std::string dir = env != nullptr ? env : std::string(BOLTPACK_SOURCE_DIR) + "/../shared";
  return std::filesystem::is_directory(dir + "/conformance") ? dir : std::string();
}

namespace {

// Every folder MakeTempDir made, removed when the test process exits (set
// BOLTPACK_KEEP_TEST_DIRS to keep them for a look after a failure): left
// behind, a few runs of the suite filled the disk with gigabytes.
class TempDirs {
 public:
  ~TempDirs() {
    if (std::getenv("BOLTPACK_KEEP_TEST_DIRS") != nullptr) return;
    for (const auto& dir : dirs_) {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  }
  void Add(std::filesystem::path dir) {
    std::lock_guard<std::mutex> lock(mu_);
    dirs_.push_back(std::move(dir));
  }

 private:
  std::mutex mu_;
  std::vector<std::filesystem::path> dirs_;
};

TempDirs& MadeDirs() {
  static TempDirs dirs;
  return dirs;
}

}  // namespace

std::string MakeTempDir() {
  static std::atomic<int> counter{0};
  auto base = std::filesystem::temp_directory_path() /
              ("boltpack-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base);
  MadeDirs().Add(base);
  return base.string();
}

std::vector<uint8_t> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void WriteFileBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

static std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

CommandResult RunCli(const std::vector<std::string>& args) {
  std::string cmd = ShellQuote(BOLTPACK_CLI_PATH);
  for (const auto& a : args) cmd += " " + ShellQuote(a);
  cmd += " 2>&1 </dev/null";
  CommandResult result;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return result;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) result.output.append(buf, n);
  int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

CommandResult RunCliWithFileSizeLimit(const std::vector<std::string>& args, uint64_t max_file_bytes) {
  // Set here and inherited by the CLI; this process writes nothing while
  // it waits for it.
  struct rlimit old_limit {};
  ::getrlimit(RLIMIT_FSIZE, &old_limit);
  struct rlimit limit = old_limit;
  limit.rlim_cur = max_file_bytes;
  ::setrlimit(RLIMIT_FSIZE, &limit);
  // SIGXFSZ at its default (death): the CLI ignores it itself, so that the
  // write fails with EFBIG and it reports the error.
  auto old_handler = ::signal(SIGXFSZ, SIG_DFL);
  CommandResult result = RunCli(args);
  ::signal(SIGXFSZ, old_handler);
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  return result;
}

int64_t CliPeakResidentKib(const std::vector<std::string>& args) {
  MeasuredCommand run = RunCliMeasured(args);
  return run.exit_code == 0 ? run.peak_rss_kib : -1;
}

CliArgv::CliArgv(const std::vector<std::string>& args) : strings{BOLTPACK_CLI_PATH} {
  strings.insert(strings.end(), args.begin(), args.end());
  for (auto& a : strings) pointers.push_back(a.data());
  pointers.push_back(nullptr);
}

namespace {

// The probe's report ("STATUS MAXRSS_KIB") into `result`; false if none.
bool ReadProbeReport(int fd, MeasuredCommand* result) {
  std::string report;
  char buf[64];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) report.append(buf, static_cast<size_t>(n));
  int status = 0;
  long peak = -1;
  if (std::sscanf(report.c_str(), "%d %ld", &status, &peak) != 2) return false;
  result->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result->peak_rss_kib = peak;
  return true;
}

}  // namespace

MeasuredCommand RunCliMeasured(const std::vector<std::string>& args, uint64_t max_data_bytes) {
  MeasuredCommand result;
  // The CLI runs under tests/peak_probe.cc, which reports its wait status
  // and peak on fd 3: the peak of a process this one forked would include
  // this process's resident size, however large other tests made it.
  CliArgv cli(args);
  std::vector<std::string> probe_args = {BOLTPACK_PEAK_PROBE_PATH, "3"};
  probe_args.insert(probe_args.end(), cli.strings.begin(), cli.strings.end());
  std::vector<char*> argv;
  for (auto& a : probe_args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int out[2], report[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return result;
  if (::pipe2(report, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return result;
  }
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0) return result;
  if (pid == 0) {
    int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::dup2(report[1], 3);
    if (max_data_bytes > 0) {
      struct rlimit limit = {max_data_bytes, max_data_bytes};
      ::setrlimit(RLIMIT_DATA, &limit);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(report[1]);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof(buf))) > 0) result.output.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  const bool reported = ReadProbeReport(report[0], &result);
  ::close(report[0]);
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !reported) return MeasuredCommand{-1, result.output};
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

size_t PresentPages(const void* data, size_t size) {
  const uintptr_t page = 4096;
  const uintptr_t first = reinterpret_cast<uintptr_t>(data) / page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + size + page - 1) / page;
  std::vector<uint64_t> entries(end - first);
  int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const size_t want = entries.size() * sizeof(uint64_t);
  const ssize_t got = ::pread(fd, entries.data(), want, static_cast<off_t>(first * sizeof(uint64_t)));
  ::close(fd);
  size_t present = 0;
  if (got != static_cast<ssize_t>(want)) return 0;
  for (uint64_t e : entries) present += (e >> 63) & 1;
  return present;
}

}  // namespace boltpack::testing
