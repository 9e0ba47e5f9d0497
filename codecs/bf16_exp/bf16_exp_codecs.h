// bf16 exponent codecs (spec/codecs-bf16-exp.md):
//
//   "bf16-huffman"  lossless: sign+mantissa bytes stored as they are, the
//                   exponents canonical-Huffman coded (lengths <= 12, one code
//                   per tensor, in the codec param `exp_code_lengths`).
//   "bf16-unary"    lossless: exponents coded by frequency rank in unary
//                   (Cassandra-1), rare exponents escaped (`exp_ranks`).
//   "bf16-mx"       (codecs/bf16_mx/) near-lossless, Cassandra-2 style: per 32 values one
//                   shared exponent, each value a 3-bit exponent offset and
//                   its sign+mantissa byte; the encoder writes the error it
//                   made as `rel_rms_error` and `lossy_fraction`.
//
// Sources are BF16; F32 is taken only with `from_f32=true` (converted with
// ggml's f32->bf16 rounding, so not lossless). All chunk by whole rows
// (about 2^18 elements per chunk), decode in parallel and by row range.
#ifndef BOLTPACK_CODECS_BF16_EXP_BF16_EXP_CODECS_H_
#define BOLTPACK_CODECS_BF16_EXP_BF16_EXP_CODECS_H_

#include <cstdint>
#include <memory>

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/codec.h"
#include "codecs/bf16_exp/exponent_code.h"

namespace boltpack {

inline constexpr uint64_t kBf16ExpChunkElements = uint64_t{1} << 18;

std::unique_ptr<Codec> MakeBf16HuffmanCodec();
std::unique_ptr<Codec> MakeBf16UnaryCodec();
std::unique_ptr<Codec> MakeBf16MxCodec();

// The sync points of a bf16-huffman or bf16-unary tensor's `exponents`
// stream (`exponents`: its raw bytes, whole), for decoders that start a
// thread at each (gpu/): bf16_exp::ChunkSyncPoints over the chunks in
// order (a symbol is an element: the lanes tile the elements in order),
// then {8 x bytes, elements}. Validates the record and decodes every lane
// on `threads` threads, failing as Decode does (DATA_LOSS) on bytes the
// decoder refuses.
absl::StatusOr<std::vector<bf16_exp::SyncPoint>> Bf16ExpSyncPoints(const TensorInfo& info,
                                                                   absl::Span<const uint8_t> exponents,
                                                                   uint32_t every, int threads);

// Registers "bf16-huffman", "bf16-unary" and "bf16-mx".
absl::Status RegisterBf16ExpCodecs();

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_BF16_EXP_BF16_EXP_CODECS_H_
