// Codec "mxfp4": ggml's MXFP4 (GGUF type 39), byte for byte. Blocks of 32
// values, 17 bytes each in one stream "blocks": an E8M0 exponent byte e, then
// 16 bytes of E2M1 codes; byte j holds value j (low nibble) and value j+16
// (high nibble). value = kE2M1Doubled[code] * 2^(e-128) (ggml's
// e8m0_to_fp32_half; e < 2 gives the subnormals 2^-128, 2^-127; e = 255 is
// 2^127, not NaN). Encoding is quantize_row_mxfp4_ref: e = floor(log2(amax))
// - 2 + 127 (0 for an all-zero block), codes by best_index_mxfp4.
#ifndef BOLTPACK_CODECS_MXFP4_MXFP4_CODEC_H_
#define BOLTPACK_CODECS_MXFP4_MXFP4_CODEC_H_

#include <memory>

#include "absl/status/status.h"
#include "codecs/block_common/block_codec.h"

namespace boltpack {

inline constexpr int kMxfp4BlockElems = 32;
inline constexpr int kMxfp4BlockBytes = 17;

// ggml_e8m0_to_fp32_half.
float E8m0ToF32Half(uint8_t e);
// quantize_row_mxfp4_ref's shared exponent of a block with largest
// magnitude amax (finite, >= 0): (uint8_t)(floorf(log2f(amax)) - 2 + 127),
// 0 for amax 0, clamped to 0 where ggml's cast is undefined. log2f is
// called only where it can differ from the float's exponent field.
uint8_t Mxfp4SharedExponent(float amax);

std::unique_ptr<BlockCodec> MakeMxfp4Codec();
absl::Status RegisterMxfp4Codec();

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_MXFP4_MXFP4_CODEC_H_
