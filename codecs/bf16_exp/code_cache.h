// Decoders for the exponent-code parameters of records (bf16-huffman's
// exp_code_lengths, bf16-unary's exp_ranks, bf16-spec's kept/pruned
// lengths), built once per distinct parameter and shared.
//
// A record's code parameter is read by ValidateRecord, Decode and every
// DecodeRows call, and the reader calls DecodeRows once per row block (many
// per tensor, on several threads): rebuilding the tables each time cost up
// to half of a small decode. Entries are keyed by (kind, tables, the
// parameter's text) and compared on the whole text, so a hash collision
// cannot hand out another code's table; a parameter that does not parse is
// cached as its error. Codes are immutable once built and shared read-only
// across threads; the cache is bounded in entries and table bytes, least
// recently used first out.
#ifndef BOLTPACK_CODECS_BF16_EXP_CODE_CACHE_H_
#define BOLTPACK_CODECS_BF16_EXP_CODE_CACHE_H_

#include <cstddef>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "codecs/bf16_exp/exponent_code.h"

namespace boltpack::bf16_exp {

using SharedCode = std::shared_ptr<const ExponentCode>;

inline constexpr size_t kCodeCacheEntries = 64;
inline constexpr size_t kCodeCacheBytes = size_t{4} << 20;

// The code of `text` (Huffman: LengthsToHex's 256 digits; unary: RanksToHex),
// with `tables` built; the same error as parsing and building it directly.
absl::StatusOr<SharedCode> CachedCode(ExponentCode::Kind kind, std::string_view text, ExponentCode::Tables tables);

// For tests: codes built since the process started (cache misses).
size_t CodeCacheBuilds();

}  // namespace boltpack::bf16_exp

#endif  // BOLTPACK_CODECS_BF16_EXP_CODE_CACHE_H_
