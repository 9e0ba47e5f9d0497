// AtomicFile (io/atomic_file.h): once a write is queued (QueueWrite), a
// thread of the file's own makes every write, and the bytes must come out
// in the order they were asked for, whether buffered (small Write), direct
// (large Write), queued, padded or overwritten.
#include "io/atomic_file.h"

#include <sys/stat.h>

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

}  // namespace
}  // namespace boltpack::io
