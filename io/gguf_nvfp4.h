// The GGUF side of two-level nvfp4 tensors (spec/gguf-mapping.md §3): a
// ggml NVFP4 tensor plus, unless its tensor scale is exactly 1, an F32
// tensor holding that scale, named as llama.cpp's convert_hf_to_gguf names
// it. The export's planning (which tensors, Q8_0 where llama.cpp reads no
// scale) is the converter's, in tools/gguf_nvfp4.h.
#ifndef BOLTPACK_IO_GGUF_NVFP4_H_
#define BOLTPACK_IO_GGUF_NVFP4_H_

#include <optional>
#include <string>
#include <string_view>

#include "boltpack/types.h"

namespace boltpack::io {

// "blk.0.attn_q.weight" -> "blk.0.attn_q.scale"; "x" -> "x.scale".
std::string Nvfp4ScaleTensorName(std::string_view name);

// The record's "tensor_scale" parameter when it is a number.
std::optional<double> Nvfp4NumericTensorScale(const CodecParams& params);

// Whether the GGUF of an nvfp4 record holds a scale tensor beside it: false
// only when its tensor_scale is exactly 1.
bool Nvfp4RecordHasScaleTensor(const CodecParams& params);

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_GGUF_NVFP4_H_
