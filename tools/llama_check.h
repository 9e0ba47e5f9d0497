// `bolt-pack verify --target llama.cpp`: does a model's GGUF metadata and
// tensor set satisfy what llama.cpp's loader reads for its architecture
// (src/llama-model.cpp load_hparams/load_tensors, src/llama-vocab.cpp)?
//
// Works on typed metadata and tensor shapes, so it applies alike to a .gguf
// (or split set) and to a .bolt converted from GGUF (which keeps every GGUF
// key with its type). Errors are what makes llama.cpp refuse the file, abort,
// or read out of bounds; warnings are what it accepts silently but may get
// wrong (a missing rope.freq_base defaults to 10000).
#ifndef BOLTPACK_TOOLS_LLAMA_CHECK_H_
#define BOLTPACK_TOOLS_LLAMA_CHECK_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "boltpack/types.h"

namespace boltpack::tools {

struct LlamaCheckTensor {
  std::string name;
  std::vector<uint64_t> shape;  // bolt-pack order: outermost first (GGUF ne reversed)
  // Non-empty when the tensor has no GGUF type (a .bolt codec GGUF lacks).
  std::string type_problem;
  bool quantized = false;  // a block-quantized GGUF type
  int ggml_type = -1;      // the GGUF type id (-1: none)
};

struct LlamaProblem {
  enum class Severity { kError, kWarning };
  Severity severity = Severity::kError;
  std::string key;     // the metadata key concerned, or ""
  std::string tensor;  // the tensor concerned, or ""
  std::string message;
};

struct LlamaCheckResult {
  std::string architecture;  // general.architecture ("" when absent)
  bool known_architecture = false;
  std::vector<LlamaProblem> problems;
  size_t errors() const;
  size_t warnings() const;
};

// Checks `kv` (keys "gguf.*" and "split.*" are ignored) and `tensors`.
LlamaCheckResult CheckForLlamaCpp(const Metadata& kv, const std::vector<LlamaCheckTensor>& tensors);

// Keys of `kv` ("{arch}.expert_count", ...) that hold an array where
// llama.cpp reads one number, so it refuses the file: what `slice` warns
// about when a budget's per-layer counts differ and it writes a .gguf.
std::vector<std::string> LlamaScalarKeysGivenAsArrays(const Metadata& kv);

// The GGUF ne of the "<base>.scale" tensor llama.cpp reads beside the NVFP4
// weight "<base>.weight" (GGUF ne `weight_ne`): {1}, or {n_expert} beside a
// *_exps weight; nullopt where it reads none (token_embd.weight, norms, ...).
// Its ".input_scale" follows the same rule. The same for every architecture
// (a generic pass of the loader), except that a few architectures read
// scales of their own beside other weights.
std::optional<std::vector<uint64_t>> LlamaScaleNe(std::string_view weight_name,
                                                  const std::vector<uint64_t>& weight_ne);

// The architectures with their own rules (others get the generic checks).
std::vector<std::string> LlamaCheckKnownArchitectures();

}  // namespace boltpack::tools

#endif  // BOLTPACK_TOOLS_LLAMA_CHECK_H_
