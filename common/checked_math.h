// Overflow-checked unsigned arithmetic for sizes and offsets read from files.
#ifndef BOLTPACK_COMMON_CHECKED_MATH_H_
#define BOLTPACK_COMMON_CHECKED_MATH_H_

#include <cstdint>
#include <optional>

#include "absl/types/span.h"

namespace boltpack {

inline std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<uint64_t> CheckedMul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Product of dims; nullopt on overflow. The empty product (0-d) is 1.
inline std::optional<uint64_t> CheckedProduct(absl::Span<const uint64_t> dims) {
  uint64_t n = 1;
  for (uint64_t d : dims) {
    auto next = CheckedMul(n, d);
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

// Rounds `value` up to a multiple of `alignment` (a power of two).
// Bytes of `elements` values of `element_size` bytes each, when the count
// of a shape and its product with the size both fit 64 bits.
inline std::optional<uint64_t> CheckedByteSize(absl::Span<const uint64_t> shape, uint64_t element_size) {
  const std::optional<uint64_t> elements = CheckedProduct(shape);
  return elements ? CheckedMul(*elements, element_size) : std::nullopt;
}

inline std::optional<uint64_t> AlignUp(uint64_t value, uint64_t alignment) {
  auto padded = CheckedAdd(value, alignment - 1);
  if (!padded) return std::nullopt;
  return *padded & ~(alignment - 1);
}

inline bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace boltpack

#endif  // BOLTPACK_COMMON_CHECKED_MATH_H_
