// Codec "int4-g128": symmetric 4-bit integers, one fp16 scale per 128
// consecutive values of a row (group 128, as GPTQ/AWQ "sym" checkpoints).
// Stream "values": 64 bytes per group, value 2i in the low nibble of byte i
// and 2i+1 in the high nibble, each stored as q + 8 (offset binary; the
// encoder writes q in [-7, 7], i.e. nibbles 1..15; a decoder reads nibble 0
// as -8). Stream "scales": one little-endian fp16 d per group.
// value = (nibble - 8) * d. Encoding: d = fp16(amax / 7), q =
// clamp(roundf(x / d), -7, 7) computed as x * (1/d) with d the stored fp16.
#ifndef BOLTPACK_CODECS_INT4_INT4_CODEC_H_
#define BOLTPACK_CODECS_INT4_INT4_CODEC_H_

#include <memory>

#include "absl/status/status.h"
#include "codecs/block_common/block_codec.h"

namespace boltpack {

inline constexpr int kInt4GroupElems = 128;

std::unique_ptr<BlockCodec> MakeInt4G128Codec();
absl::Status RegisterInt4Codecs();

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_INT4_INT4_CODEC_H_
