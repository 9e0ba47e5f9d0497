// Element codecs: every element stored whole, in row-major order, in one
// stream with role "data".
//
//   "f32", "f16", "bf16"  the elements in that float format. The tensor's
//                         dtype (the source) may be F32, F16, BF16 or F64;
//                         conversions follow ggml exactly (float_convert.h).
//   "raw"                 the source bytes of any dtype, unchanged. Decodes
//                         to kNative, and to f32/f16/bf16 when the dtype is
//                         F32, F16 or BF16.
//
// None takes parameters. Tensors over kRawChunkTargetBytes are split into
// chunks of whole outer rows of about that size, so the writer compresses
// them independently and a row-range read touches only the chunks it needs.
// Chunk i's first_row/row_count describe exactly its raw bytes:
// raw_offset = first_row * row_bytes, raw_length = row_count * row_bytes.
//
// RowRangeBytes returns a half-open raw byte range {begin, end} (not an
// offset and a length) of the "data" stream.
#ifndef BOLTPACK_CODECS_RAW_RAW_CODECS_H_
#define BOLTPACK_CODECS_RAW_RAW_CODECS_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "boltpack/codec.h"
#include "boltpack/types.h"

namespace boltpack {

inline constexpr uint64_t kRawChunkTargetBytes = uint64_t{1} << 20;

// `stored` is kF32, kF16 or kBF16; nullptr otherwise.
std::unique_ptr<Codec> MakeFloatElementCodec(DType stored);
std::unique_ptr<Codec> MakeRawCodec();

// Registers "f32", "f16", "bf16" and "raw" (called by RegisterBuiltinCodecs).
absl::Status RegisterRawCodecs();

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_RAW_RAW_CODECS_H_
