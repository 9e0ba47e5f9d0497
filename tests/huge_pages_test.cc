// common/huge_pages: the advice changes how pages are faulted in, never
// what the vector holds.
#include "common/huge_pages.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace boltpack {
namespace {

TEST(HugePages, ResizeHugeZeroFillsAndKeepsWhatWasThere) {
  std::vector<uint8_t> v = {1, 2, 3};
  const size_t n = size_t{9} << 20;  // over the advice threshold, not a multiple of 2 MiB
  ResizeHuge(v, n);
  ASSERT_EQ(v.size(), n);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[2], 3);
  for (size_t i = 3; i < n; i += 4093) ASSERT_EQ(v[i], 0) << i;
  EXPECT_EQ(v[n - 1], 0);
  ResizeHuge(v, 5);  // shrinking is a plain resize
  EXPECT_EQ(v.size(), 5u);
}

TEST(HugePages, SmallAndWideElementsResizeAsAVectorWould) {
  std::vector<uint16_t> w;
  ResizeHuge(w, 10);
  EXPECT_EQ(w, std::vector<uint16_t>(10, 0));
  std::vector<uint16_t> big;
  ResizeHuge(big, size_t{3} << 20);  // 6 MiB of elements
  EXPECT_EQ(big.size(), size_t{3} << 20);
  EXPECT_EQ(big.back(), 0);
}

TEST(HugePages, AdviceOnAnyRangeIsHarmless) {
  AdviseHugePages(nullptr, size_t{64} << 20);
  std::vector<uint8_t> v(100);
  AdviseHugePages(v.data(), v.size());  // below the threshold: nothing
  std::vector<uint8_t> big(size_t{5} << 20, 7);
  AdviseHugePages(big.data() + 1, big.size() - 1);  // unaligned, already touched
  EXPECT_EQ(big[12345], 7);
}

}  // namespace
}  // namespace boltpack
