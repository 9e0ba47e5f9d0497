// PooledBuffer (common/buffer_pool.h): at least the bytes asked for, whole
// 2 MiB huge-page mappings from a MiB on, and buffers given back are
// handed out again with their pages.
#include "common/buffer_pool.h"

#include <cstdint>
#include <cstring>
#include <utility>

#include "common/sanitizers.h"
#include "gtest/gtest.h"

namespace boltpack {
namespace {

TEST(BufferPool, GivesAtLeastTheBytesAskedForLargeOnesHugePageAligned) {
  for (uint64_t size : {uint64_t{1}, uint64_t{4096}, uint64_t{1} << 20, (uint64_t{2} << 20) + 1, uint64_t{5} << 20}) {
    PooledBuffer b;
    uint8_t* p = b.Get(size);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0xA5, size);  // every byte asked for is writable
    EXPECT_EQ(p[size - 1], 0xA5);
    if (size >= (uint64_t{1} << 20) && !kUnderAddressSanitizer) {  // else from new[]
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (uintptr_t{2} << 20), 0u) << size;
    }
  }
}

TEST(BufferPool, ABufferGivenBackIsReusedAndMovesKeepOwnership) {
  // A size no other test uses: the pool is the process's.
  const uint64_t size = (uint64_t{37} << 20) + 12345;
  uint8_t* first = nullptr;
  {
    PooledBuffer b;
    first = b.Get(size);
    first[0] = 1;
  }
  PooledBuffer again;
  EXPECT_EQ(again.Get(size), first) << "an idle buffer of the size was not reused";
  PooledBuffer moved(std::move(again));
  EXPECT_EQ(moved.Get(1 << 20), first);  // still large enough: the same memory
  PooledBuffer assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.Get(size), first);
}

}  // namespace
}  // namespace boltpack
