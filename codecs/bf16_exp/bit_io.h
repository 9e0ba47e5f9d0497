// Bit I/O for the bf16 exponent codecs: MSB-first bit packing (the first code
// bit is the most significant bit of the first byte), as spec/codecs-bf16-exp.md
// §2 defines it.
#ifndef BOLTPACK_CODECS_BF16_EXP_BIT_IO_H_
#define BOLTPACK_CODECS_BF16_EXP_BIT_IO_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace boltpack::bf16_exp {

inline uint64_t LoadBE64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

// Up to 8 bytes from [p, end) as a big-endian word, zero-filled past `end`.
inline uint64_t LoadBE64Bounded(const uint8_t* p, const uint8_t* end) {
  const ptrdiff_t avail = end - p;
  if (avail >= 8) return LoadBE64(p);
  uint64_t v = 0;
  // Compare counts, not pointers: `p + i` on an empty (null) span is UB.
  for (ptrdiff_t i = 0; i < 8; ++i) {
    v <<= 8;
    if (i < avail) v |= p[i];
  }
  return v;
}

// Writes codes MSB-first into a caller-sized buffer (the caller bounds the
// output: at most ceil(total code bits / 8) + 4 bytes are written). Codes are
// at most 32 bits.
class BitWriter {
 public:
  explicit BitWriter(uint8_t* out) : begin_(out), out_(out) {}

  void Put(uint32_t code, int len) {
    acc_ = (acc_ << len) | code;
    bits_ += len;
    if (bits_ >= 32) {
      bits_ -= 32;
      const uint32_t word = __builtin_bswap32(static_cast<uint32_t>(acc_ >> bits_));
      std::memcpy(out_, &word, 4);
      out_ += 4;
    }
  }

  // Pads the last byte with zero bits; returns the bytes written in all.
  size_t Finish() {
    while (bits_ >= 8) {
      bits_ -= 8;
      *out_++ = static_cast<uint8_t>(acc_ >> bits_);
    }
    if (bits_ > 0) *out_++ = static_cast<uint8_t>(acc_ << (8 - bits_));
    bits_ = 0;
    acc_ = 0;
    return static_cast<size_t>(out_ - begin_);
  }

 private:
  uint8_t* begin_;
  uint8_t* out_;
  uint64_t acc_ = 0;
  int bits_ = 0;
};

}  // namespace boltpack::bf16_exp

#endif  // BOLTPACK_CODECS_BF16_EXP_BIT_IO_H_
