// The device index of a bf16-huffman or bf16-unary tensor (boltpack/cuda.h:
// bp_cuda_tensor.index), shared by the host code that builds it
// (entropy_index.cc) and the kernels that read it (entropy_kernels.cu):
//
//   offset 0      EntropyIndexHeader (64 bytes)
//   offset 64     the decode table: 4096 uint32 over 12-bit windows, up to
//                 3 whole code words each (EntropyLutEntry)
//   offset 16448  per block of kEntropyThreads segments, EntropyBlockBase:
//                 the stream bit and the symbol its first segment starts at
//   then          per segment a uint32: its first bit relative to its
//                 block's (bits 8..31) and its symbol count - 1 (bits 0..7)
//
// Segment i decodes the symbols from its start to the next one's; a
// segment's first symbol is its block's plus the counts of the block's
// segments before it. The segments are bp_sync_points' (every
// kEntropyEvery symbols of a lane and at each lane's start), which the CPU
// decoder found by decoding every lane: the kernels trust them, and so
// decode only bytes the CPU accepted. About 0.13 bits per weight.
#ifndef BOLTPACK_GPU_ENTROPY_INDEX_H_
#define BOLTPACK_GPU_ENTROPY_INDEX_H_

#include <cstdint>

namespace boltpack::gpu {

// Symbols per segment: one thread decodes one segment, a block of
// kEntropyThreads threads stages its segments' exponents in shared memory
// (kEntropyThreads x (kEntropyEvery + 4) bytes).
inline constexpr uint32_t kEntropyEvery = 256;
inline constexpr uint32_t kEntropyThreads = 128;
inline constexpr uint32_t kEntropyLutBits = 12;

enum EntropyKind : uint32_t { kEntropyHuffman = 1, kEntropyUnary = 2 };

struct EntropyIndexHeader {
  uint32_t kind;         // EntropyKind
  uint32_t unary_ranks;  // K (unary)
  uint32_t every;        // kEntropyEvery
  uint32_t reserved;
  uint64_t segments;
  uint64_t symbols;      // = elements
  uint8_t rank_sym[32];  // unary: the exponent of each rank
};
static_assert(sizeof(EntropyIndexHeader) == 64, "the index layout above");

// A table entry: symbols in bits 0..23 (the first in the low byte), their
// count in bits 24..25 (0: the window's first code word is longer than the
// table's 12 bits, a unary rank >= 11 or escape, decoded one at a time),
// the bits they use in bits 26..31.
inline constexpr uint32_t kLutCountShift = 24;
inline constexpr uint32_t kLutBitsShift = 26;
inline constexpr uint32_t kLutMaxSymbols = 3;

struct EntropyBlockBase {
  uint64_t bit;
  uint64_t symbol;
};

inline constexpr uint64_t kEntropyLutOffset = 64;
inline constexpr uint64_t kEntropyBlockOffset = kEntropyLutOffset + 4 * (uint64_t{1} << kEntropyLutBits);
// Segment bits relative to their block's first: < 2^24 (a block spans at
// most 128 x 256 code words of at most 28 bits, plus lane headers).
inline constexpr uint64_t kEntropyMaxRelativeBit = uint64_t{1} << 24;

constexpr uint64_t EntropyBlocks(uint64_t segments) { return (segments + kEntropyThreads - 1) / kEntropyThreads; }
constexpr uint64_t EntropySegmentOffset(uint64_t segments) {
  return kEntropyBlockOffset + EntropyBlocks(segments) * sizeof(EntropyBlockBase);
}
constexpr uint64_t EntropyIndexBytes(uint64_t segments) { return EntropySegmentOffset(segments) + 4 * segments; }

// Bytes past a stream's end the kernels may read (never use): a thread's
// bit reader holds the four 32-bit words from its position, which a last
// table lookup may take a few bits past the end.
inline constexpr uint64_t kEntropyStreamSlack = 32;

}  // namespace boltpack::gpu

#endif  // BOLTPACK_GPU_ENTROPY_INDEX_H_
