// The fuzz input read a byte at a time, zeros past its end: the harnesses
// derive shapes, modes and parameters from their first bytes and hand the
// rest to the decoder (what is left: `p`, `n`).
#ifndef BOLTPACK_FUZZ_FUZZ_INPUT_H_
#define BOLTPACK_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>

namespace boltpack::fuzz {

struct Input {
  const uint8_t* p;
  size_t n;
  uint8_t Byte() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
};

}  // namespace boltpack::fuzz

#endif  // BOLTPACK_FUZZ_FUZZ_INPUT_H_
