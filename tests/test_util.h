// Shared helpers for tests: where data lives, temp dirs, running the CLI.
#ifndef BOLTPACK_TESTS_TEST_UTIL_H_
#define BOLTPACK_TESTS_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

namespace boltpack::testing {

// The repository root (shipped data: testdata/, spec/vectors/).
std::string SourceDir();
// ../shared, or "" when it is absent (tests that need it GTEST_SKIP).
std::string SharedDir();
// A fresh empty folder for this test, removed when the test process exits
// (BOLTPACK_KEEP_TEST_DIRS keeps it).
std::string MakeTempDir();
std::vector<uint8_t> ReadFileBytes(const std::string& path);
void WriteFileBytes(const std::string& path, const std::vector<uint8_t>& bytes);

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};
// The CLI's argv for execv: BOLTPACK_CLI_PATH, then `args`; `pointers`
// (NULL-terminated) point into `strings`, so it is neither copied nor moved.
struct CliArgv {
  explicit CliArgv(const std::vector<std::string>& args);
  CliArgv(const CliArgv&) = delete;
  CliArgv& operator=(const CliArgv&) = delete;
  std::vector<std::string> strings;
  std::vector<char*> pointers;
};
// Runs the bolt-pack CLI with `args` (shell-quoted here).
CommandResult RunCli(const std::vector<std::string>& args);
// The same with files limited to `max_file_bytes` (RLIMIT_FSIZE, SIGXFSZ
// left at its default: the CLI ignores it), so a write past it fails as on
// a full disk.
CommandResult RunCliWithFileSizeLimit(const std::vector<std::string>& args, uint64_t max_file_bytes);
// Runs the CLI with `args` (output discarded) and returns its peak resident
// memory in KiB (its own, from wait4); -1 if it could not run or exited
// non-zero.
int64_t CliPeakResidentKib(const std::vector<std::string>& args);

struct MeasuredCommand {
  int exit_code = -1;         // 128 + signal when killed
  std::string output;         // stdout and stderr together
  int64_t peak_rss_kib = -1;  // the CLI's own (wait4 in tests/peak_probe.cc), whatever this process's size
  double seconds = 0;         // wall clock
};
// Runs the CLI with `args` and measures it. `max_data_bytes` > 0 caps its
// heap (RLIMIT_DATA), so a regression that would allocate gigabytes fails
// fast instead of swapping the machine.
MeasuredCommand RunCliMeasured(const std::vector<std::string>& args, uint64_t max_data_bytes = 0);

// How many pages of [data, data + size) this process has mapped in
// (present in its page table: /proc/self/pagemap bit 63).
size_t PresentPages(const void* data, size_t size);

}  // namespace boltpack::testing

#endif  // BOLTPACK_TESTS_TEST_UTIL_H_
