// "bf16-spec": the Cassandra draft/verify split of a bf16 tensor
// (spec/codecs-bf16-spec.md). Per row (innermost dimension) the top
// `keep` fraction of values by Wanda score |W_ij| * sqrt(importance_j)
// (by |W| without importance) is kept: their sign, Huffman-coded exponent
// and top `mbits` mantissa bits plus the keep bitmap form the
// "speculation" stream, which every view reads; the pruned values and the
// kept values' low mantissa bits form the "verification" stream, which only
// the "full" view reads. View "draft" decodes zeros where pruned and kept
// values with their mantissa cut to `mbits` (midpoint-filled); view "full"
// every original bit.
#ifndef BOLTPACK_CODECS_BF16_SPEC_BF16_SPEC_CODEC_H_
#define BOLTPACK_CODECS_BF16_SPEC_BF16_SPEC_CODEC_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "boltpack/codec.h"

namespace boltpack {

inline constexpr uint64_t kBf16SpecChunkElements = uint64_t{1} << 18;

std::unique_ptr<Codec> MakeBf16SpecCodec();

// Registers "bf16-spec".
absl::Status RegisterBf16SpecCodec();

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_BF16_SPEC_BF16_SPEC_CODEC_H_
