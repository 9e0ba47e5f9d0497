// Locating raw stream bytes in a DecodeInput. For a row-range read the
// reader hands a codec only part of each stream: `streams[k]` starts at raw
// offset `raw_base[k]` (0 when raw_base is empty). Codecs ask for the bytes
// [begin, end) of stream k here, so the bounds check lives in one place.
#ifndef BOLTPACK_CODECS_RAW_RANGE_H_
#define BOLTPACK_CODECS_RAW_RANGE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/tensor_info.h"

namespace boltpack {

// The part of `streams[k]` that holds raw bytes [begin, end) of stream k, or
// kInvalidArgument naming tensor and stream when the input does not hold them.
absl::StatusOr<absl::Span<const uint8_t>> RawBytesInInput(const TensorInfo& info,
                                                          const std::vector<absl::Span<const uint8_t>>& streams,
                                                          const std::vector<uint64_t>& raw_base, size_t k,
                                                          uint64_t begin, uint64_t end);

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_RAW_RANGE_H_
