// The architecture tables io/hf_arch.cc looks in, one file each.
#ifndef BOLTPACK_IO_HF_ARCH_TABLES_H_
#define BOLTPACK_IO_HF_ARCH_TABLES_H_

#include "absl/types/span.h"
#include "io/hf_arch.h"

namespace boltpack::io {

absl::Span<const HfArch> LlamaArchs();  // llama, mistral (io/hf_arch_llama.cc)
absl::Span<const HfArch> QwenArchs();   // qwen2, qwen3 (io/hf_arch_qwen.cc)

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_HF_ARCH_TABLES_H_
