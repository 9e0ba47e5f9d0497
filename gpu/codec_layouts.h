// What bp_cuda_check needs to know of each codec with kernels: its id, the
// elements of a block and the bytes a block puts in each stream
// (spec/codecs.md, spec/codecs-iq2_xxs.md). Host only.
#ifndef BOLTPACK_GPU_CODEC_LAYOUTS_H_
#define BOLTPACK_GPU_CODEC_LAYOUTS_H_

#include <cstdint>
#include <string_view>

#include "boltpack/cuda.h"

namespace boltpack::gpu {

struct CodecLayout {
  int codec;  // BP_CUDA_CODEC_*
  std::string_view id;
  uint32_t block_elems;
  uint32_t stream_count;
  uint32_t block_bytes[3];
  // bf16-huffman, bf16-unary: stream 0 is a byte per element, stream 1 any
  // size, and the tensor needs its index (entropy_index.h); no block grid.
  bool entropy = false;
};

inline constexpr CodecLayout kCodecLayouts[] = {
    {BP_CUDA_CODEC_BF16, "bf16", 1, 1, {2, 0}},
    {BP_CUDA_CODEC_Q8_0, "q8_0", 32, 1, {34, 0}},
    {BP_CUDA_CODEC_MXFP4, "mxfp4", 32, 1, {17, 0}},
    {BP_CUDA_CODEC_NVFP4_GGML, "nvfp4-ggml", 64, 1, {36, 0}},
    {BP_CUDA_CODEC_NVFP4, "nvfp4", 16, 2, {8, 1}},
    {BP_CUDA_CODEC_INT4_G128, "int4-g128", 128, 2, {64, 2}},
    {BP_CUDA_CODEC_IQ2_XXS, "iq2_xxs", 256, 1, {66, 0}},
    {BP_CUDA_CODEC_BF16_MX, "bf16-mx", 32, 3, {1, 12, 32}},
    {BP_CUDA_CODEC_BF16_HUFFMAN, "bf16-huffman", 1, 2, {1, 0}, true},
    {BP_CUDA_CODEC_BF16_UNARY, "bf16-unary", 1, 2, {1, 0}, true},
};

inline const CodecLayout* FindLayout(int codec) {
  for (const CodecLayout& l : kCodecLayouts) {
    if (l.codec == codec) return &l;
  }
  return nullptr;
}

inline const CodecLayout* FindLayout(std::string_view id) {
  for (const CodecLayout& l : kCodecLayouts) {
    if (l.id == id) return &l;
  }
  return nullptr;
}

}  // namespace boltpack::gpu

#endif  // BOLTPACK_GPU_CODEC_LAYOUTS_H_
