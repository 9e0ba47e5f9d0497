// XXH3-64, the checksum of spec/container.md §1.4 (header [C-3.2.3], footer
// [C-4.2.3], manifest [C-4.2.10], streams and chunks [C-7.4.1]), computed
// with the widest vector unit this CPU has:
// on x86-64 libxxhash's runtime dispatch picks AVX2 or AVX-512 (about 3x
// the SSE2 baseline a portable build would get, 40 GB/s against 12.5 on a
// cached MiB here), which is what keeps checksumming off the critical path
// of `slice` and `verify`. The digests are the same on every path.
#ifndef BOLTPACK_COMMON_XXH3_H_
#define BOLTPACK_COMMON_XXH3_H_

#include <cstdint>
#include <memory>

#include "absl/types/span.h"

namespace boltpack {

uint64_t Xxh3(absl::Span<const uint8_t> bytes);

// The same digest over bytes given in parts.
class Xxh3Stream {
 public:
  Xxh3Stream();
  ~Xxh3Stream();
  Xxh3Stream(const Xxh3Stream&) = delete;
  Xxh3Stream& operator=(const Xxh3Stream&) = delete;
  void Reset();
  void Update(absl::Span<const uint8_t> bytes);
  void Update(const uint8_t* bytes, uint64_t size) { Update(absl::MakeConstSpan(bytes, size)); }
  uint64_t Digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;  // XXH3_state_t: 576 bytes, 64-byte aligned; null until bytes come
};

}  // namespace boltpack

#endif  // BOLTPACK_COMMON_XXH3_H_
