// GGUF export of two-level "nvfp4" tensors (spec/gguf-mapping.md §3): each
// becomes a ggml NVFP4 tensor (type 40, the "nvfp4-ggml" layout) plus, unless
// its tensor scale is exactly 1, an F32 tensor of shape [1] holding that
// scale, named as llama.cpp's convert_hf_to_gguf names it: the tensor's name
// with its ".weight" suffix replaced by ".scale" (or ".scale" appended).
#ifndef BOLTPACK_TOOLS_GGUF_NVFP4_H_
#define BOLTPACK_TOOLS_GGUF_NVFP4_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "codecs/nvfp4/nvfp4_codec.h"
#include "tools/codec_rules.h"
#include "tools/inputs.h"

namespace boltpack::tools {

// True when `t` goes to GGUF as two-level nvfp4: re-encoded by a rule whose
// codec is "nvfp4", or (no rule) a .bolt tensor stored as "nvfp4".
bool IsTwoLevelNvfp4(const InputTensor& t, const CodecRule* rule);

// "blk.0.attn_q.weight" -> "blk.0.attn_q.scale"; "x" -> "x.scale".
std::string Nvfp4ScaleTensorName(std::string_view name);

// Whether the export writes the scale tensor: false when the tensor scale is
// known to be exactly 1 before encoding (a stored tensor's parameter, or a
// rule's requested tensor_scale). A scale computed during the export (a rule
// without tensor_scale) is always written, even if it comes out as 1.
absl::StatusOr<bool> Nvfp4HasScaleTensor(const InputTensor& t, const CodecRule* rule);

// The tensor's ggml NVFP4 blocks and tensor scale: a stored tensor's streams
// repacked losslessly (Nvfp4ToGgml; zstd-compressed streams are refused), or
// the source encoded by the rule and repacked.
absl::StatusOr<GgmlNvfp4Tensor> Nvfp4GgufBlocks(const InputTensor& t, const CodecRule* rule, int threads);

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_GGUF_NVFP4_H_
