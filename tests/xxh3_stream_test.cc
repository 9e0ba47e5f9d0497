// Xxh3Stream allocates its state at the first bytes: its digests must be
// the one-shot Xxh3's whether it saw no bytes, some, or was reset.
#include <cstdint>
#include <vector>

#include "common/xxh3.h"
#include "gtest/gtest.h"

namespace boltpack {
namespace {

TEST(Xxh3Stream, NoBytesDigestsAsTheOneShotHashOfNone) {
  Xxh3Stream h;
  EXPECT_EQ(h.Digest(), Xxh3({}));
  h.Update({});
  h.Reset();
  EXPECT_EQ(h.Digest(), Xxh3({}));
  EXPECT_EQ(Xxh3({}), 0x2D06800538D394C2ull);  // XXH3_64bits of nothing, seed 0
}

TEST(Xxh3Stream, PartsDigestAsTheWholeAndResetStartsOver) {
  std::vector<uint8_t> bytes(1000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  const absl::Span<const uint8_t> all(bytes);
  Xxh3Stream h;
  h.Update(all.subspan(0, 333));
  h.Update(all.subspan(333));
  EXPECT_EQ(h.Digest(), Xxh3(all));
  h.Reset();
  EXPECT_EQ(h.Digest(), Xxh3({}));
  h.Update(all.subspan(0, 10));
  EXPECT_EQ(h.Digest(), Xxh3(all.subspan(0, 10)));
}

}  // namespace
}  // namespace boltpack
