// SHA-256 (FIPS 180-4), the digest the conformance protocol reports for a
// tensor's decoded bytes (spec/conformance.md §4). Not on any hot path: it
// exists so that another implementation's output can be compared with ours
// by a digest every language's standard library has (XXH3, the container's
// checksum, is not in Python's).
#ifndef BOLTPACK_COMMON_SHA256_H_
#define BOLTPACK_COMMON_SHA256_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/types/span.h"

namespace boltpack {

class Sha256 {
 public:
  Sha256() { Reset(); }
  void Reset();
  void Update(absl::Span<const uint8_t> bytes);
  // The digest of everything given since Reset; the object must be Reset
  // before it is used again.
  std::array<uint8_t, 32> Final();

 private:
  void Block(const uint8_t* p);

  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buffer_;
  uint64_t total_ = 0;  // bytes given so far
  size_t buffered_ = 0;
};

// Lower-case hex of SHA-256(bytes).
std::string Sha256Hex(absl::Span<const uint8_t> bytes);
std::string DigestHex(const std::array<uint8_t, 32>& digest);

}  // namespace boltpack

#endif  // BOLTPACK_COMMON_SHA256_H_
