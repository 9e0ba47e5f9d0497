// Prefix codes over the 256 bf16 exponent values, shared by bf16-huffman and
// bf16-unary (spec/codecs-bf16-exp.md §3, §4):
//
//   - canonical Huffman, code lengths 1..12 (kMaxHuffmanBits);
//   - frequency-ranked unary (Cassandra-1): rank r is r zero bits then a one;
//     an exponent without a rank is K zero bits then its 8 bits (K = ranks).
//
// Both encode through one (left-aligned code, length) table with a 64-bit
// bit writer and decode through one 12-bit multi-symbol lookup table (up to 5
// symbols per lookup, 4 lookups per 64-bit refill), with a slow path for
// codes longer than the table (unary ranks >= 12 and escapes). The table is
// built in O(2^13) steps (one pass per window width), so small tensors do not
// pay for it. Exponent bits of a chunk are split into 1 or 4 lanes decoded
// interleaved.
#ifndef BOLTPACK_CODECS_BF16_EXP_EXPONENT_CODE_H_
#define BOLTPACK_CODECS_BF16_EXP_EXPONENT_CODE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace boltpack::bf16_exp {

inline constexpr int kMaxHuffmanBits = 12;
inline constexpr int kLutBits = 12;
// Window of the compact multi-symbol table (Tables::kCompact).
inline constexpr int kCompactLutBits = 9;
// Symbols one multi-symbol table entry can hold.
inline constexpr int kLutMaxSymbols = 5;
// Set in every multi-symbol table entry but the slow path's (0).
inline constexpr int kLutValidBit = 47;
inline constexpr int kMaxUnaryRanks = 20;
// A chunk of at least this many elements has 4 lanes and a 12-byte header.
inline constexpr uint64_t kLaneSplitElements = 16384;
inline constexpr int kLanes = 4;
inline constexpr size_t kLaneHeaderBytes = 12;

class ExponentCode {
 public:
  enum class Kind { kHuffman, kUnary };
  // Decoder tables to build: kFull adds the multi-symbol table over 12-bit
  // windows (fastest per value; about 2^13 steps to build, so for chunks of
  // tens of thousands of values); kCompact the same over 9-bit windows (an
  // eighth of the build, fewer symbols per lookup: for tensors of a few
  // thousand values, where building the full table would cost more than
  // decoding); kSingle decodes one code word per lookup and is cheapest to
  // build (tiny tensors, record validation). All decode the same bits.
  enum class Tables { kSingle, kCompact, kFull };

  // From code lengths (0 = exponent absent). Valid: a complete code (Kraft
  // sum exactly 1) with lengths <= 12, a single exponent of length 1, or no
  // exponent at all.
  static absl::StatusOr<ExponentCode> Huffman(absl::Span<const uint8_t> lengths);
  static absl::StatusOr<ExponentCode> Huffman(absl::Span<const uint8_t> lengths, Tables tables);
  // The checks of Huffman() and the canonical code words alone, without
  // decoder tables (for a codec with tables of its own).
  static absl::StatusOr<std::array<uint32_t, 256>> HuffmanCodeWords(absl::Span<const uint8_t> lengths);
  // From the exponents in rank order (at most kMaxUnaryRanks, distinct).
  static absl::StatusOr<ExponentCode> Unary(absl::Span<const uint8_t> ranks);
  static absl::StatusOr<ExponentCode> Unary(absl::Span<const uint8_t> ranks, Tables tables);

  Kind kind() const { return kind_; }
  int max_code_bits() const { return max_bits_; }
  uint32_t code(int sym) const { return code_[sym]; }
  // 0: this exponent cannot be coded (Huffman: it has no code).
  int length(int sym) const { return len_[sym]; }
  // Memory held by this code and its decoder tables.
  size_t TableBytes() const {
    return sizeof(*this) + lut_.capacity() * sizeof(uint64_t) + lut1_.capacity() * sizeof(uint16_t);
  }

  // Encodes `syms` into `out` (sized by MaxLaneBytes); returns bytes written.
  size_t EncodeLane(const uint8_t* syms, size_t n, uint8_t* out) const;
  size_t MaxLaneBytes(size_t n) const { return (n * static_cast<size_t>(max_bits_) + 7) / 8 + 8; }

  // Decodes exactly `count` exponents from a lane of `size` bytes. Fails
  // (never reading or writing out of bounds) on an invalid code word, on
  // bits missing, on a whole unused byte at the end, or on non-zero padding.
  absl::Status DecodeLanes(const uint8_t* const* data, const size_t* size, uint8_t* const* out,
                           const size_t* count, int lanes) const;

  // Code length table: 256 lowercase hex digits (digit i = length of exponent i).
  static std::string LengthsToHex(absl::Span<const uint8_t> lengths);
  static absl::StatusOr<std::array<uint8_t, 256>> LengthsFromHex(std::string_view hex);
  // Rank table: two lowercase hex digits per exponent, in rank order.
  static std::string RanksToHex(absl::Span<const uint8_t> ranks);
  static absl::StatusOr<std::vector<uint8_t>> RanksFromHex(std::string_view hex);

 private:
  struct Lane;
  template <int N>
  absl::Status DecodeFast(Lane* lanes) const;
  absl::Status DecodeTail(Lane& lane) const;
  // Decodes one symbol from `w` (at least 57 valid bits); false if invalid.
  bool DecodeSlow(uint64_t w, uint8_t* sym, int* len) const;
  // `multi_bits`: window of the multi-symbol table, 0 for none.
  void BuildTables(int multi_bits);

  Kind kind_ = Kind::kHuffman;
  int max_bits_ = 0;
  int ranks_ = 0;  // unary K
  std::array<uint32_t, 256> code_{};
  std::array<uint8_t, 256> len_{};
  std::array<uint8_t, kMaxUnaryRanks> rank_sym_{};
  std::array<bool, 256> ranked_{};
  // Multi-symbol entries (empty with Tables::kSingle): up to 5 symbols in
  // bits 0..39 (first in the low byte), bit 47 (kLutValidBit) set, bits used
  // in 48..55, symbol count in 56..63; the entry 0: slow path.
  std::vector<uint64_t> lut_;
  int lut_bits_ = kLutBits;  // window of lut_
  // Single-symbol entries: symbol | length << 8 (0: slow path).
  std::vector<uint16_t> lut1_;
  // Encoder: code << (64 - length), left-aligned for the bit writer.
  std::array<uint64_t, 256> lcode_{};
};

// The decoder tables worth building for `values` code words: the
// multi-symbol tables pay for their build from about 1K (compact) and 64K
// (full) values on (bench/bf16_corpus_bench: LoRA adapters' 6K-value
// tensors, 64 MB tensors). Encoders need none of them: Tables::kSingle.
ExponentCode::Tables TablesForValues(uint64_t values);

// Optimal length-limited code lengths for `freq` (canonical Huffman, at
// most `max_bits`); a lone symbol gets length 1, absent symbols 0.
std::array<uint8_t, 256> HuffmanLengths(absl::Span<const uint64_t> freq, int max_bits);
// Unary rank table for `freq`: the K most frequent exponents (ties: smaller
// exponent first), K chosen to minimise the coded size.
std::vector<uint8_t> UnaryRanks(absl::Span<const uint64_t> freq);

// Element ranges of the lanes of a chunk of `m` elements.
int LaneCount(uint64_t m);
inline uint64_t LaneBegin(uint64_t m, int lanes, int k) { return m * static_cast<uint64_t>(k) / static_cast<uint64_t>(lanes); }

// Encodes a chunk's exponents (lanes, header) into `out` (appended).
void EncodeChunk(const ExponentCode& code, const uint8_t* syms, uint64_t m, std::vector<uint8_t>* out);
// Decodes a chunk of `m` exponents from its bytes.
absl::Status DecodeChunk(const ExponentCode& code, absl::Span<const uint8_t> bytes, uint64_t m,
                         uint8_t* out);

// A place where decoding a stream of chunks may start: the code word of
// symbol `symbol` (0-based over the stream's chunks and lanes, in order)
// starts at bit `bit` of the stream (most significant bit first: bit b is
// bit 7 - b % 8 of byte b / 8). GPU decoders (gpu/) start a thread at each.
struct SyncPoint {
  uint64_t bit = 0;
  uint64_t symbol = 0;
};

// Decodes a chunk as DecodeChunk does (failing as it does) into `scratch`
// (m bytes) and appends a sync point at each lane's first symbol and after
// every `every` symbols of a lane. The chunk's first byte is bit
// `bit_base` of its stream and its first symbol symbol `symbol_base`.
absl::Status ChunkSyncPoints(const ExponentCode& code, absl::Span<const uint8_t> bytes, uint64_t m,
                             uint64_t bit_base, uint64_t symbol_base, uint32_t every, uint8_t* scratch,
                             std::vector<SyncPoint>* out);

}  // namespace boltpack::bf16_exp

#endif  // BOLTPACK_CODECS_BF16_EXP_EXPONENT_CODE_H_
