// IQ2_XXS block kernels: ggml's block_iq2_xxs decoded bit for bit, and a fast
// weighted quantizer that writes standard blocks (spec/codecs-iq2_xxs.md).
//
// Block (66 bytes, 256 weights): fp16 d (little-endian), then 32 uint16 qs
// (little-endian). Sub-block ib (32 weights) is qs[4ib..4ib+3] read as two
// uint32: aux0 = four 8-bit grid indices, aux1 = four 7-bit sign indices
// (bits 7l..7l+6) and the 4-bit scale s (bits 28..31).
//   y[32ib + 8l + j] = db * grid[aux0 byte l][j] * (sign bit j ? -1 : 1),
//   db = d * (0.5f + s) * 0.25f   (float arithmetic, in that order).
//
// Every kernel has a portable version and an AVX2 one chosen at run time
// (CPUID); both give identical bits (decode and encode alike).
#ifndef BOLTPACK_CODECS_IQ2_XXS_IQ2_XXS_KERNELS_H_
#define BOLTPACK_CODECS_IQ2_XXS_IQ2_XXS_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace boltpack::iq2_xxs {

inline constexpr size_t kBlockElems = 256;
inline constexpr size_t kBlockBytes = 66;

// True when the CPU (and OS) support AVX2 and FMA (x86 only).
bool Avx2Supported();

enum class Isa { kAuto, kPortable, kAvx2 };

// Decodes `nblocks` whole blocks at `src` to nblocks*256 floats at `dst`.
// Any bytes are accepted (NaN/Inf/subnormal d decode as ggml does).
// kAvx2 may only be passed when Avx2Supported().
void DecodeBlocksF32(const uint8_t* src, size_t nblocks, float* dst, Isa isa = Isa::kAuto);

// Encoder options.
struct QuantizeOptions {
  Isa isa = Isa::kAuto;
};

// Quantizes n values (n a multiple of 256) into n/256 blocks at dst.
// `importance`: n weights >= 0 (one per value), or nullptr for the built-in
// weighting. Values must be finite. Deterministic: the same bytes whatever
// the ISA.
void QuantizeRow(const float* x, const float* importance, size_t n, uint8_t* dst,
                 const QuantizeOptions& options = {});

}  // namespace boltpack::iq2_xxs

#endif  // BOLTPACK_CODECS_IQ2_XXS_IQ2_XXS_KERNELS_H_
