// general.file_type and general.quantization_version of a GGUF output, as
// llama-quantize writes them (spec/gguf-mapping.md §3): the llama_ftype of
// the ggml type holding most weights of the matrices, and
// GGML_QNT_VERSION (2) when any tensor is block-quantized. Shared by
// `convert` and `slice`, whose outputs may both hold another mix than the
// GGUF their keys came from.
#ifndef BOLTPACK_TOOLS_GGUF_FILE_TYPE_H_
#define BOLTPACK_TOOLS_GGUF_FILE_TYPE_H_

#include <optional>
#include <vector>

#include "boltpack/types.h"
#include "io/gguf.h"

namespace boltpack::tools {

struct GgufMix {
  // The llama_ftype; -1 where llama.h has no name for the type; nullopt
  // without tensors of 2 or more dimensions (1-D tensors stay float, as
  // llama-quantize keeps them, so they do not count).
  std::optional<int> ftype;
  bool quantized = false;  // any tensor of a block-quantized type
};

// The mix of the tensors a GGUF output declares.
GgufMix MixOf(const std::vector<io::GgufTensorDecl>& decls);

// llama.cpp's enum llama_ftype for a ggml type id; -1 where there is none.
int LlamaFileType(int ggml_type);

// Whether copied keys `kv` misname `mix`: their general.file_type is
// another ftype than the mix's known one. Where the key agrees, is absent,
// or the mix has no ftype name (a llama-quantize Q4_K_M keeps its 15), the
// keys stay: a round trip keeps every byte.
bool FileTypeMisnamed(const Metadata& kv, const GgufMix& mix);

// Sets general.file_type (dropped for a type llama.h has no name for, so
// llama.cpp guesses instead of printing a wrong one) and, for a quantized
// mix, general.quantization_version 2.
void SetGgufFileType(const GgufMix& mix, Metadata* kv);

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_GGUF_FILE_TYPE_H_
