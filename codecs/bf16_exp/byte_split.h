// The bf16 <-> (sign+mantissa byte, exponent byte) split of
// spec/codecs-bf16-exp.md: sm = s << 7 | m, e = the 8 exponent bits.
// AVX2 when the CPU has it (common/cpu_features.h), else SSE2 on x86-64, else
// portable C++; every path gives the same bytes.
#ifndef BOLTPACK_CODECS_BF16_EXP_BYTE_SPLIT_H_
#define BOLTPACK_CODECS_BF16_EXP_BYTE_SPLIT_H_

#include <cstddef>
#include <cstdint>

namespace boltpack::bf16_exp {

// n bf16 values (little-endian bytes at `src`) -> n sm bytes and n exponents.
void SplitBf16(const uint8_t* src, size_t n, uint8_t* sm, uint8_t* ex);
// The inverse: n bf16 values (little-endian) to `dst`.
void JoinBf16(const uint8_t* sm, const uint8_t* ex, size_t n, uint8_t* dst);
// Adds the exponent counts of `ex` to hist.
void CountExponents(const uint8_t* ex, size_t n, uint64_t* hist /* [256] */);

// The portable versions (tests compare them with the dispatched ones).
void SplitBf16Scalar(const uint8_t* src, size_t n, uint8_t* sm, uint8_t* ex);
void JoinBf16Scalar(const uint8_t* sm, const uint8_t* ex, size_t n, uint8_t* dst);

}  // namespace boltpack::bf16_exp

#endif  // BOLTPACK_CODECS_BF16_EXP_BYTE_SPLIT_H_
