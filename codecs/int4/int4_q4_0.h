// int4-g128 <-> ggml Q4_0, losslessly (spec/gguf-mapping.md §3.2). A group
// of 128 values with one fp16 scale is exactly four Q4_0 blocks of 32 with
// that scale: both store q + 8 in a nibble and decode (nibble - 8) x f32(d).
// Only the nibble order differs: int4-g128 puts value 2i and 2i+1 in byte
// i of a group, Q4_0 value j and j + 16 in byte j of a block. So every
// int4-g128 tensor exports to Q4_0, and a Q4_0 tensor whose rows are
// multiples of 128 and whose four blocks of each group share one scale
// imports back to the same int4-g128 bytes (nibble 0, -8, included: both
// decode it as -8 x d).
#ifndef BOLTPACK_CODECS_INT4_INT4_Q4_0_H_
#define BOLTPACK_CODECS_INT4_INT4_Q4_0_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace boltpack {

inline constexpr int kGgmlQ4_0Type = 2;  // GGML_TYPE_Q4_0
inline constexpr int kQ4_0BlockBytes = 18;  // fp16 d + 16 bytes of nibbles, 32 values

// The Q4_0 blocks of int4-g128's streams (`values`: 64 bytes per group,
// `scales`: 2 per group). InvalidArgument when the sizes disagree.
absl::StatusOr<std::vector<uint8_t>> Int4G128ToQ4_0(absl::Span<const uint8_t> values,
                                                     absl::Span<const uint8_t> scales);

struct Int4G128Streams {
  std::vector<uint8_t> values;
  std::vector<uint8_t> scales;
};

// int4-g128's streams of Q4_0 blocks; nullopt when the four blocks of a
// group do not share one scale (*first_mismatch: that group). The caller
// checks that rows are multiples of 128 values. InvalidArgument when the
// size is not a whole number of groups.
absl::StatusOr<std::optional<Int4G128Streams>> Q4_0ToInt4G128(absl::Span<const uint8_t> blocks,
                                                              uint64_t* first_mismatch = nullptr);

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_INT4_INT4_Q4_0_H_
