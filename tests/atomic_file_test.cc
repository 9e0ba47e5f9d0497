// AtomicFile (common/atomic_file.h): once a write is queued (QueueWrite), a
// thread of the file's own makes every write, and the bytes must come out
// in the order they were asked for, whether buffered (small Write), direct
// (large Write), queued, padded or overwritten.
#include "common/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace boltpack::io {
namespace {

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 9));
  return v;
}

TEST(AtomicFile, QueuedWritesKeepTheirPlaceAmongBufferedDirectAndPaddedOnes) {
  const std::string path = testing::MakeTempDir() + "/out.bin";
  auto file = AtomicFile::Create(path, {});
  ASSERT_TRUE(file.ok()) << file.status();
  AtomicFile& f = **file;
  std::vector<uint8_t> expected;
  auto add = [&](const std::vector<uint8_t>& b) { expected.insert(expected.end(), b.begin(), b.end()); };

  const auto header = Pattern(40, 1), small = Pattern(1000, 2), direct = Pattern(200 << 10, 3);
  auto queued = std::make_shared<std::vector<uint8_t>>(Pattern((3 << 20) + 17, 4));
  auto queued2 = std::make_shared<std::vector<uint8_t>>(Pattern(5 << 20, 5));
  std::weak_ptr<std::vector<uint8_t>> watched = queued2;

  ASSERT_TRUE(f.Write(header).ok());  // buffered, before any queue
  add(header);
  ASSERT_TRUE(f.QueueWrite(*queued, queued).status().ok());
  add(*queued);
  queued.reset();
  ASSERT_TRUE(f.Write(small).ok());  // buffered behind the queued bytes
  add(small);
  ASSERT_TRUE(f.PadTo(4096).ok());
  expected.resize((expected.size() + 4095) / 4096 * 4096, 0);
  EXPECT_EQ(f.position(), expected.size());
  ASSERT_TRUE(f.Write(direct).ok());  // large: written in order, then returns
  add(direct);
  ASSERT_TRUE(f.QueueWrite(*queued2, queued2).status().ok());
  add(*queued2);
  queued2.reset();
  ASSERT_TRUE(f.Write(small).ok());
  add(small);
  EXPECT_EQ(f.position(), expected.size());
  // Overwrite waits for what is queued, then rewrites the header.
  const auto new_header = Pattern(40, 9);
  ASSERT_TRUE(f.Overwrite(0, new_header).ok());
  std::copy(new_header.begin(), new_header.end(), expected.begin());
  EXPECT_TRUE(watched.expired()) << "the file still holds bytes it has written";
  ASSERT_TRUE(f.Commit().ok());
  EXPECT_EQ(testing::ReadFileBytes(path), expected);
}

TEST(AtomicFile, SpaceReservedAheadOfTheWritesIsGivenBackAtCommit) {
  const std::string path = testing::MakeTempDir() + "/out.bin";
  auto file = AtomicFile::Create(path, {});
  ASSERT_TRUE(file.ok()) << file.status();
  const auto bytes = Pattern(300 << 10, 3);
  ASSERT_TRUE((*file)->Write(bytes).ok());
  ASSERT_TRUE((*file)->Commit().ok());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), bytes.size());
  // Blocks allocated: the bytes, not the 64 MiB reserved ahead of them.
  EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, bytes.size() + (1 << 20));
  EXPECT_EQ(testing::ReadFileBytes(path), bytes);
}

TEST(AtomicFile, DestroyedWithWritesQueuedLeavesNoFile) {
  const std::string dir = testing::MakeTempDir();
  const std::string path = dir + "/out.bin";
  {
    auto file = AtomicFile::Create(path, {});
    ASSERT_TRUE(file.ok()) << file.status();
    auto bytes = std::make_shared<std::vector<uint8_t>>(Pattern(8 << 20, 1));
    for (int i = 0; i < 4; ++i) ASSERT_TRUE((*file)->QueueWrite(*bytes, bytes).status().ok());
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "the temporary file was left behind";
}


std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

// Sets BOLTPACK_NAMED_TEMP for the scope: AtomicFile then takes the route of
// filesystems without O_TMPFILE.
struct NamedTemporaries {
  NamedTemporaries() { ::setenv("BOLTPACK_NAMED_TEMP", "1", 1); }
  ~NamedTemporaries() { ::unsetenv("BOLTPACK_NAMED_TEMP"); }
};

TEST(AtomicFile, HasNoNameUntilCommitted) {
  const std::string dir = testing::MakeTempDir();
  auto file = AtomicFile::Create(dir + "/out.bin", {});
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_FALSE((*file)->named_temporary());
  ASSERT_TRUE((*file)->Write(Pattern(3 << 20, 1)).ok());
  ASSERT_TRUE((*file)->Drain().ok());
  EXPECT_TRUE(Entries(dir).empty()) << Entries(dir)[0];
  ASSERT_TRUE((*file)->Commit().ok());
  EXPECT_EQ(Entries(dir), std::vector<std::string>{"out.bin"});
  EXPECT_EQ(testing::ReadFileBytes(dir + "/out.bin"), Pattern(3 << 20, 1));
}

TEST(AtomicFile, ReplacesAnExistingFileWithoutLeavingItsHiddenName) {
  for (bool named : {false, true}) {
    SCOPED_TRACE(named ? "named temporary" : "unnamed file");
    std::unique_ptr<NamedTemporaries> env = named ? std::make_unique<NamedTemporaries>() : nullptr;
    const std::string dir = testing::MakeTempDir();
    testing::WriteFileBytes(dir + "/out.bin", Pattern(100, 7));
    auto file = AtomicFile::Create(dir + "/out.bin", {});
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_EQ((*file)->named_temporary(), named);
    EXPECT_EQ(Entries(dir).size(), named ? 2u : 1u);
    ASSERT_TRUE((*file)->Write(Pattern(5000, 2)).ok());
    ASSERT_TRUE((*file)->Commit().ok());
    EXPECT_EQ(Entries(dir), std::vector<std::string>{"out.bin"});
    EXPECT_EQ(testing::ReadFileBytes(dir + "/out.bin"), Pattern(5000, 2));
  }
}

TEST(AtomicFile, TheModeIs0644LessTheUmask) {
  for (bool named : {false, true}) {
    SCOPED_TRACE(named ? "named temporary" : "unnamed file");
    std::unique_ptr<NamedTemporaries> env = named ? std::make_unique<NamedTemporaries>() : nullptr;
    const std::string dir = testing::MakeTempDir();
    const mode_t old = ::umask(0077);
    auto file = AtomicFile::Create(dir + "/out.bin", {});
    ::umask(old);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE((*file)->Commit().ok());
    struct stat st;
    ASSERT_EQ(::stat((dir + "/out.bin").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
  }
}

TEST(AtomicFile, TheNamedTemporaryIsRemovedWhenDestroyed) {
  NamedTemporaries env;
  const std::string dir = testing::MakeTempDir();
  {
    auto file = AtomicFile::Create(dir + "/out.bin", {});
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE((*file)->named_temporary());
    ASSERT_EQ(Entries(dir).size(), 1u);
    EXPECT_EQ(Entries(dir)[0].rfind(".out.bin.tmp-", 0), 0u) << Entries(dir)[0];
    ASSERT_TRUE((*file)->Write(Pattern(5000, 2)).ok());
  }
  EXPECT_TRUE(Entries(dir).empty()) << Entries(dir)[0];
}

TEST(AtomicFile, ALongNameStillGetsAHiddenTemporary) {
  NamedTemporaries env;
  const std::string dir = testing::MakeTempDir();
  const std::string name(250, 'n');
  auto file = AtomicFile::Create(dir + "/" + name, {});
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Commit().ok());
  EXPECT_EQ(Entries(dir), std::vector<std::string>{name});
}

// A process that does not ignore SIGXFSZ (a library user) and writes past
// its file-size limit dies of the signal, and the handler removed the named
// temporary first.
TEST(AtomicFile, SigxfszRemovesTheNamedTemporaryAndStillKills) {
  const std::string dir = testing::MakeTempDir();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_DFL);
    ::setenv("BOLTPACK_NAMED_TEMP", "1", 1);
    struct rlimit limit = {1 << 20, RLIM_INFINITY};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    auto file = AtomicFile::Create(dir + "/out.bin", {}, /*durable=*/false);
    if (!file.ok() || !(*file)->named_temporary()) ::_exit(3);
    (void)(*file)->Write(Pattern(4 << 20, 1));
    ::_exit(4);  // not reached: the write past the limit raised SIGXFSZ
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ) << "status " << status;
  EXPECT_TRUE(Entries(dir).empty()) << Entries(dir)[0];
}

TEST(AtomicFile, RefusesADestinationThatIsNotARegularFile) {
  const std::string dir = testing::MakeTempDir();
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  auto fifo = AtomicFile::Create(dir + "/fifo", {});
  ASSERT_FALSE(fifo.ok());
  EXPECT_EQ(fifo.status().message(), dir + "/fifo: not a regular file (a FIFO)");
  auto null = AtomicFile::Create("/dev/null", {});
  ASSERT_FALSE(null.ok());
  EXPECT_EQ(null.status().message(), "/dev/null: not a regular file (a character device)");
  EXPECT_FALSE(AtomicFile::Create(dir, {}).ok());
}

// CommitAll names no file before every one is written and fsynced, and a
// file that cannot be linked takes back those linked before it.
TEST(AtomicFile, CommitAllNamesAllOrNone) {
  const std::string dir = testing::MakeTempDir();
  std::vector<std::unique_ptr<AtomicFile>> files;
  for (const char* name : {"b.bin", "a.bin"}) {
    auto f = AtomicFile::Create(dir + "/" + name, {});
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_TRUE((*f)->Write(Pattern(1000, 3)).ok());
    files.push_back(std::move(*f));
  }
  ASSERT_TRUE(CommitAll({files[0].get(), files[1].get()}).ok());
  EXPECT_EQ(Entries(dir).size(), 2u);
  files.clear();

  const std::string sub = dir + "/sub";
  std::filesystem::create_directory(sub);
  auto first = AtomicFile::Create(dir + "/c.bin", {});
  auto second = AtomicFile::Create(sub + "/d.bin", {});
  ASSERT_TRUE(first.ok() && second.ok());
  // The second's folder is gone by the time it is linked.
  std::filesystem::remove(sub);
  absl::Status s = CommitAll({first->get(), second->get()});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(sub + "/d.bin: cannot link the finished file into place"), std::string::npos) << s;
  EXPECT_FALSE(std::filesystem::exists(dir + "/c.bin"));
}

}  // namespace
}  // namespace boltpack::io
