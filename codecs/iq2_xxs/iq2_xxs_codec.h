// Codec "iq2_xxs": ggml's IQ2_XXS blocks (GGUF type 16), 2.0625 bits per
// weight, stored byte for byte as ggml's block_iq2_xxs so engines use them in
// place. Normative description: spec/codecs-iq2_xxs.md.
//
//   source dtypes  F32, F16, BF16, F64; at least one dimension, the innermost
//                  (row length) a multiple of 256.
//   stream         one, role "blocks": the tensor's blocks in row-major order,
//                  66 bytes per 256 weights, not entropy coded.
//   parameters     none.
//   decodes to     f32, bf16, f16 (through f32, with the raw codecs'
//                  rounding) and native (the block bytes).
//   importance     TensorSource::importance: one weight per column, or for a
//                  3-D tensor [E, R, C] one row of C weights per expert
//                  (E*C values). Without it the encoder weights each value by
//                  sqrt(block mean of x^2 + x^2).
//
// Chunks are whole outer rows (axis 0) of about 1 MiB, as for the raw codecs;
// DecodeRows/RowRangeBytes work on outer rows.
#ifndef BOLTPACK_CODECS_IQ2_XXS_IQ2_XXS_CODEC_H_
#define BOLTPACK_CODECS_IQ2_XXS_IQ2_XXS_CODEC_H_

#include <memory>

#include "absl/status/status.h"
#include "boltpack/codec.h"

namespace boltpack {

std::unique_ptr<Codec> MakeIq2XxsCodec();

// Registers "iq2_xxs" (called by RegisterBuiltinCodecs).
absl::Status RegisterIq2XxsCodec();

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_IQ2_XXS_IQ2_XXS_CODEC_H_
