// The two NVFP4 codecs and the conversion between them (spec/codecs.md).
//
// "nvfp4-ggml": ggml's NVFP4 (GGUF type 40), byte for byte. Blocks of 64
//   values, 36 bytes each in one stream "blocks": d[4] (unsigned E4M3, one
//   per 16 values; bit 7 ignored, 0x00 and 0x7F mean 0) then qs[32]; sub-block
//   s uses qs[8s .. 8s+7], byte j holding value j (low nibble) and j+8 (high).
//   value = kE2M1Doubled[code] * ue4m3(d[s]) / 2. No tensor scale. Encoding
//   is quantize_row_nvfp4_ref.
//
// "nvfp4": NVIDIA's two-level NVFP4 as ModelOpt writes it. Blocks of 16
//   consecutive values of a row; stream "values" (8 bytes per block: value 2i
//   in the low nibble of byte i, 2i+1 in the high nibble, E2M1 codes with bit 3
//   the sign) and stream "scales" (1 byte per block: float8_e4m3fn); one FLOAT32
//   parameter "tensor_scale" (ModelOpt's weight_scale_2 = amax / (6 * 448)).
//   value = E2M1[code] * (e4m3(scale) * tensor_scale).
#ifndef BOLTPACK_CODECS_NVFP4_NVFP4_CODEC_H_
#define BOLTPACK_CODECS_NVFP4_NVFP4_CODEC_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "boltpack/tensor_info.h"
#include "codecs/block_common/block_codec.h"

namespace boltpack {

inline constexpr int kNvfp4GgmlBlockElems = 64;
inline constexpr int kNvfp4GgmlBlockBytes = 36;
inline constexpr int kNvfp4BlockElems = 16;  // two-level: one scale per 16
inline constexpr char kNvfp4TensorScaleParam[] = "tensor_scale";

std::unique_ptr<BlockCodec> MakeNvfp4GgmlCodec();
std::unique_ptr<BlockCodec> MakeNvfp4Codec();
// Registers "nvfp4-ggml" and "nvfp4".
absl::Status RegisterNvfp4Codecs();

// A two-level NVFP4 tensor in GGUF's form: ggml NVFP4 blocks plus the F32
// tensor scale llama.cpp keeps as a separate `<name>.scale` tensor (real
// value = ggml value * tensor_scale; llama.cpp omits the tensor when it is 1).
struct GgmlNvfp4Tensor {
  std::vector<uint8_t> blocks;
  float tensor_scale = 1.0f;
};

// Converts the streams of a validated "nvfp4" record to ggml NVFP4 blocks.
// Needs the innermost dimension to be a multiple of 64 and every scale byte
// non-negative and not NaN (what the encoder writes). Lossless: with
// tensor_scale 1 the ggml blocks decode to the same floats bit for bit.
absl::StatusOr<GgmlNvfp4Tensor> Nvfp4ToGgml(const TensorInfo& info,
                                            absl::Span<const uint8_t> values,
                                            absl::Span<const uint8_t> scales);

// The inverse: ggml NVFP4 blocks of a tensor of `shape` (innermost dimension
// a multiple of 64) plus a tensor scale -> the "values" and "scales" streams
// and params of an "nvfp4" record. Scale bytes keep their bits (bit 7
// cleared; 0x7F, which ggml reads as 0, becomes 0x00).
struct Nvfp4Streams {
  std::vector<uint8_t> values;
  std::vector<uint8_t> scales;
  CodecParams params;
};
absl::StatusOr<Nvfp4Streams> GgmlToNvfp4(absl::Span<const uint64_t> shape,
                                         absl::Span<const uint8_t> blocks, float tensor_scale);

// ModelOpt's _cast_fp4: |x| to the nearest E2M1 magnitude, ties to the even
// code, > 5 saturating to 6; bit 3 set when x < 0.
uint8_t CastFp4ModelOpt(float x);

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_NVFP4_NVFP4_CODEC_H_
