// For a block codec whose decode kernels are one template over the output
// type (quant_simd.h's F32Out, Bf16Out, F16Out): BlockCodec's three decode
// entry points, written once. The codec supplies
//
//   template <class Out>
//   static void DecodeTo(const uint8_t* const* in, uint64_t nblocks,
//                        typename Out::T* y, const BlockParams& params, bool avx2);
//
// (in[k]: stream k's bytes of the first block), which picks its AVX2 or
// portable kernel.
#ifndef BOLTPACK_CODECS_BLOCK_COMMON_BLOCK_KERNELS_H_
#define BOLTPACK_CODECS_BLOCK_COMMON_BLOCK_KERNELS_H_

#include <cstdint>

#include "codecs/block_common/block_codec.h"
#include "codecs/block_common/quant_simd.h"

namespace boltpack {

template <class Derived>
class TemplatedBlockCodec : public BlockCodec {
 public:
  using BlockCodec::BlockCodec;

  void DecodeBlocksF32(const uint8_t* const* in, uint64_t nblocks, float* y, const BlockParams& params,
                       bool avx2) const final {
    Derived::template DecodeTo<quant::F32Out>(in, nblocks, y, params, avx2);
  }
  void DecodeBlocksBf16(const uint8_t* const* in, uint64_t nblocks, uint16_t* y, const BlockParams& params,
                        bool avx2) const final {
    Derived::template DecodeTo<quant::Bf16Out>(in, nblocks, y, params, avx2);
  }
  void DecodeBlocksF16(const uint8_t* const* in, uint64_t nblocks, uint16_t* y, const BlockParams& params,
                       bool avx2) const final {
    Derived::template DecodeTo<quant::F16Out>(in, nblocks, y, params, avx2);
  }
};

}  // namespace boltpack

#endif  // BOLTPACK_CODECS_BLOCK_COMMON_BLOCK_KERNELS_H_
