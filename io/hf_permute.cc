#include <cstring>

#include "common/checked_math.h"
#include "common/str_cat.h"
#include "io/hf_arch.h"

namespace boltpack::io {

absl::StatusOr<std::vector<uint8_t>> PermuteRotaryRows(absl::Span<const uint8_t> bytes, uint64_t rows,
                                                       uint64_t row_bytes, uint64_t heads) {
  // heads <= rows first: 2 * heads cannot wrap (a hostile config's 2^63).
  if (heads == 0 || heads > rows || rows % (2 * heads) != 0) {
    return absl::InvalidArgumentError(
        StrCat(rows, " rows do not split into ", heads, " heads of two rotary halves"));
  }
  const std::optional<uint64_t> total = CheckedMul(rows, row_bytes);
  if (!total || *total != bytes.size()) {
    return absl::InvalidArgumentError(StrCat(bytes.size(), " bytes are not ", rows, " rows of ", row_bytes));
  }
  const uint64_t per_head = rows / heads;
  const uint64_t half = per_head / 2;
  std::vector<uint8_t> out(bytes.size());
  // Output row (h, j, i) of the [heads, half, 2] view is input row
  // (h, i, j) of the [heads, 2, half] view: swapaxes(1, 2).
  for (uint64_t h = 0; h < heads; ++h) {
    for (uint64_t j = 0; j < half; ++j) {
      for (uint64_t i = 0; i < 2; ++i) {
        const uint64_t to = h * per_head + j * 2 + i;
        const uint64_t from = h * per_head + i * half + j;
        std::memcpy(out.data() + to * row_bytes, bytes.data() + from * row_bytes, row_bytes);
      }
    }
  }
  return out;
}

}  // namespace boltpack::io
