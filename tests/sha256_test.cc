// common/sha256: the FIPS 180-4 / NIST CSRC example digests, and the same
// digest however the bytes are split across Update calls (the padding of a
// message that ends at every offset of a block).
#include "common/sha256.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace boltpack {
namespace {

std::string Hex(const std::string& s) {
  return Sha256Hex(absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

TEST(Sha256, NistExamples) {
  EXPECT_EQ(Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                "mnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(Hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, LengthsAroundThePaddingBoundary) {
  // Python's hashlib.sha256(bytes(range(n))) for n = 55, 56, 63, 64, 65.
  const std::pair<size_t, const char*> want[] = {
      {55, "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"},
      {56, "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"},
      {63, "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"},
      {64, "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"},
      {65, "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"},
  };
  for (const auto& [n, hex] : want) {
    std::vector<uint8_t> b(n);
    for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(i);
    EXPECT_EQ(Sha256Hex(b), hex) << n;
  }
}

TEST(Sha256, SplitUpdatesGiveTheOneShotDigest) {
  std::vector<uint8_t> b(300);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 7 + 3);
  const std::string whole = Sha256Hex(b);
  for (size_t cut = 0; cut <= b.size(); ++cut) {
    Sha256 h;
    h.Update(absl::MakeConstSpan(b).subspan(0, cut));
    h.Update(absl::MakeConstSpan(b).subspan(cut));
    EXPECT_EQ(DigestHex(h.Final()), whole) << cut;
  }
  Sha256 bytewise;
  for (uint8_t x : b) bytewise.Update({&x, 1});
  EXPECT_EQ(DigestHex(bytewise.Final()), whole);
}

}  // namespace
}  // namespace boltpack
