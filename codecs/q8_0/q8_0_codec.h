// Codec "q8_0": ggml's Q8_0 (GGUF type 8), byte for byte. Blocks of 32
// values along the innermost dimension, 34 bytes each in one stream
// "blocks": fp16 d (little-endian) then 32 int8 q; value = q * d.
// Encoding is ggml's quantize_row_q8_0_ref: d = amax/127 (fp32), q =
// roundf(x / d) computed as x * (1/d), half away from zero, d stored as fp16
// (round to nearest even). Normative text: spec/codecs.md.
#ifndef BOLTPACK_CODECS_Q8_0_Q8_0_CODEC_H_
#define BOLTPACK_CODECS_Q8_0_Q8_0_CODEC_H_

#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "codecs/block_common/block_codec.h"

namespace boltpack {

// Its id, for tools that fall back to Q8_0 (llama.cpp reads every weight in
// it): the one place outside the CLI and recipe parsers that names it.
inline constexpr std::string_view kQ8_0CodecId = "q8_0";
inline constexpr int kQ8_0BlockElems = 32;
inline constexpr int kQ8_0BlockBytes = 34;

std::unique_ptr<BlockCodec> MakeQ8_0Codec();
absl::Status RegisterQ8_0Codec();

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_Q8_0_Q8_0_CODEC_H_
