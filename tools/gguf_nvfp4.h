// The converter's plan for two-level nvfp4 tensors in a GGUF output
// (spec/gguf-mapping.md §3; the naming and scale rules are io/gguf_nvfp4.h): each
// becomes a ggml NVFP4 tensor (type 40, the "nvfp4-ggml" layout) plus, unless
// its tensor scale is exactly 1, an F32 tensor holding that scale, named as
// llama.cpp's convert_hf_to_gguf names it: the tensor's name with its
// ".weight" suffix replaced by ".scale" (or ".scale" appended), of ne {1},
// or {n_expert} (the scale repeated) beside a *_exps weight.
//
// llama.cpp reads such a scale only beside some weights (LlamaScaleNe in
// tools/llama_check.h): never beside token_embd. A tensor it reads no scale
// for, and whose tensor scale is not known to be 1, is exported as Q8_0 of
// its values instead: llama.cpp would refuse the extra tensor ("wrong number
// of tensors"), and without it would read values off by the tensor scale.
// Q8_0 is what llama-quantize keeps token embeddings in beside 4-bit float
// weights (MXFP4_MOE: every tensor but the experts' goes to Q8_0); its error
// is about 20 times smaller than NVFP4's, at 8.5 bits per weight.
#ifndef BOLTPACK_TOOLS_GGUF_NVFP4_H_
#define BOLTPACK_TOOLS_GGUF_NVFP4_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "codecs/nvfp4/nvfp4_codec.h"
#include "tools/codec_rules.h"
#include "tools/inputs.h"

namespace boltpack::tools {

// True when the codec `codec_id` exports to GGUF as two-level nvfp4 (its
// Ggml() says kTwoLevelNvfp4).
bool IsTwoLevelNvfp4Codec(std::string_view codec_id, DType dtype, const CodecParams& params);
// True when `t` goes to GGUF as two-level nvfp4: re-encoded by a rule whose
// codec is such, or (no rule) a .bolt tensor stored by such a codec.
bool IsTwoLevelNvfp4(const InputTensor& t, const CodecRule* rule);

// Whether the export writes the scale tensor: false when the tensor scale is
// known to be exactly 1 before encoding (a stored tensor's parameter, or a
// rule's requested tensor_scale). A scale computed during the export (a rule
// without tensor_scale) is always written, even if it comes out as 1.
absl::StatusOr<bool> Nvfp4HasScaleTensor(const InputTensor& t, const CodecRule* rule);

// The GGUF ne of the scale tensor the export writes beside `t`: empty when
// it writes none (not two-level nvfp4, or a tensor scale known to be 1).
absl::StatusOr<std::vector<uint64_t>> Nvfp4GgufScaleNe(const InputTensor& t, const CodecRule* rule);

// Whether a two-level nvfp4 tensor named `name` (GGUF ne `ne`) stays NVFP4
// in a GGUF for llama.cpp: llama.cpp reads a scale beside it, or it needs
// none (`has_scale_tensor` false). Otherwise the export writes it as Q8_0.
bool Nvfp4StaysNvfp4InGguf(std::string_view name, const std::vector<uint64_t>& ne, bool has_scale_tensor);

// The plan of a GGUF output: each two-level nvfp4 tensor that does not stay
// NVFP4 gets a q8_0 rule instead (a stored tensor is decoded first). One
// line per such tensor is added to `notes`.
void AdaptNvfp4PlanForGguf(const Inputs& in, CodecPlan* plan,
                           std::vector<std::string>* notes);

// The tensor's ggml NVFP4 blocks and tensor scale: a stored tensor's streams
// repacked losslessly (Nvfp4ToGgml; zstd-compressed streams are refused), or
// the source encoded by the rule and repacked.
absl::StatusOr<GgmlNvfp4Tensor> Nvfp4GgufBlocks(const InputTensor& t, const CodecRule* rule, int threads);

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_GGUF_NVFP4_H_
