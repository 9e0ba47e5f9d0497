// The architecture tables io/hf_arch.cc looks in, one file each.
#ifndef BOLTPACK_IO_HF_ARCH_TABLES_H_
#define BOLTPACK_IO_HF_ARCH_TABLES_H_

#include "absl/types/span.h"
#include "io/hf_arch.h"

namespace boltpack::io {

absl::Span<const HfArch> LlamaArchs();  // llama, mistral (io/hf_arch_llama.cc)
absl::Span<const HfArch> QwenArchs();   // qwen2, qwen3 (io/hf_arch_qwen.cc)
absl::Span<const HfArch> NemotronArchs();
// nemotron_h's `{arch}.*` keys (io/hf_hparams_nemotron.cc).
absl::Status NemotronHHparams(const HfArch& arch, const JsonValue& config, const std::string& path, Metadata* kv);  // nemotron_h, nemotron_h_moe (io/hf_arch_nemotron.cc)

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_HF_ARCH_TABLES_H_
