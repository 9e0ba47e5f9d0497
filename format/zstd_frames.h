// The one rule for what a zstd unit (a chunk, or a stream without chunks)
// may declare, which the reader applies before it allocates a unit's raw
// length for a decode and a copy applies before it writes the record into a
// file: a "bomb" declaring far more than its frames hold is never allocated
// and never copied, and a copy never carries a size that decompression would
// contradict.
#ifndef BOLTPACK_FORMAT_ZSTD_FRAMES_H_
#define BOLTPACK_FORMAT_ZSTD_FRAMES_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace boltpack::format {

// `stored` must be zstd frames that can hold `raw_length` bytes: at most
// what their headers bound (ZSTD_decompressBound: each frame's content
// size, else its blocks' maximum), and exactly the sum of their content
// sizes when every frame declares one. DATA_LOSS naming `where` (the stream
// and unit) otherwise.
absl::Status CheckZstdFrames(absl::Span<const uint8_t> stored, uint64_t raw_length, std::string_view where);

}  // namespace boltpack::format

#endif  // BOLTPACK_FORMAT_ZSTD_FRAMES_H_
