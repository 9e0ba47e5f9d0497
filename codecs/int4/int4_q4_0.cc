#include "codecs/int4/int4_q4_0.h"

#include <cstring>

#include "codecs/int4/int4_codec.h"
#include "common/str_cat.h"

namespace boltpack {
namespace {

constexpr int kGroupValueBytes = kInt4GroupElems / 2;  // 64
constexpr int kBlocksPerGroup = kInt4GroupElems / 32;  // 4
constexpr uint64_t kGroupQ4_0Bytes = kBlocksPerGroup * kQ4_0BlockBytes;  // 72

// Nibble k (value k) of an int4-g128 group.
uint8_t Int4Nibble(const uint8_t* group, int k) { return (group[k / 2] >> (4 * (k % 2))) & 0x0F; }

}  // namespace

absl::StatusOr<std::vector<uint8_t>> Int4G128ToQ4_0(absl::Span<const uint8_t> values,
                                                     absl::Span<const uint8_t> scales) {
  const uint64_t groups = scales.size() / 2;
  if (scales.size() % 2 != 0 || values.size() != groups * kGroupValueBytes) {
    return absl::InvalidArgumentError(StrCat("int4-g128 streams of ", values.size(), " and ", scales.size(),
                                             " bytes do not hold whole groups"));
  }
  std::vector<uint8_t> out(groups * kGroupQ4_0Bytes);
  for (uint64_t g = 0; g < groups; ++g) {
    const uint8_t* v = values.data() + g * kGroupValueBytes;
    for (int b = 0; b < kBlocksPerGroup; ++b) {
      uint8_t* block = out.data() + g * kGroupQ4_0Bytes + b * kQ4_0BlockBytes;
      std::memcpy(block, scales.data() + 2 * g, 2);
      for (int j = 0; j < 16; ++j) {
        block[2 + j] = static_cast<uint8_t>(Int4Nibble(v, 32 * b + j) | (Int4Nibble(v, 32 * b + j + 16) << 4));
      }
    }
  }
  return out;
}

absl::StatusOr<std::optional<Int4G128Streams>> Q4_0ToInt4G128(absl::Span<const uint8_t> blocks,
                                                              uint64_t* first_mismatch) {
  if (blocks.size() % kGroupQ4_0Bytes != 0) {
    return absl::InvalidArgumentError(StrCat("Q4_0 data of ", blocks.size(), " bytes is not a whole number of ",
                                             kInt4GroupElems, "-value groups"));
  }
  const uint64_t groups = blocks.size() / kGroupQ4_0Bytes;
  Int4G128Streams s;
  s.values.assign(groups * kGroupValueBytes, 0);
  s.scales.resize(groups * 2);
  for (uint64_t g = 0; g < groups; ++g) {
    const uint8_t* group = blocks.data() + g * kGroupQ4_0Bytes;
    for (int b = 1; b < kBlocksPerGroup; ++b) {
      if (std::memcmp(group, group + b * kQ4_0BlockBytes, 2) != 0) {
        if (first_mismatch != nullptr) *first_mismatch = g;
        return std::optional<Int4G128Streams>();
      }
    }
    std::memcpy(s.scales.data() + 2 * g, group, 2);
    uint8_t* v = s.values.data() + g * kGroupValueBytes;
    for (int b = 0; b < kBlocksPerGroup; ++b) {
      const uint8_t* qs = group + b * kQ4_0BlockBytes + 2;
      for (int j = 0; j < 32; ++j) {
        const uint8_t nibble = j < 16 ? qs[j] & 0x0F : qs[j - 16] >> 4;
        const int k = 32 * b + j;
        v[k / 2] |= static_cast<uint8_t>(nibble << (4 * (k % 2)));
      }
    }
  }
  return std::optional<Int4G128Streams>(std::move(s));
}

}  // namespace boltpack
