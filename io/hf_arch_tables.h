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
absl::Span<const HfArch> GemmaArchs();  // gemma2, gemma3 (io/hf_arch_gemma.cc)
// gemma2's and gemma3's `{arch}.*` keys (io/hf_hparams_gemma.cc).
absl::Status Gemma2Hparams(const HfArch& arch, const JsonValue& config, const std::string& path, Metadata* kv);
absl::Status Gemma3Hparams(const HfArch& arch, const JsonValue& config, const std::string& path, Metadata* kv);

// The keys of `table` from config.json, in its order (io/hf_hparams.cc):
// each from its first present field, else its fallback, else left out.
absl::Status AddHfHparams(const HfArch& arch, const JsonValue& config, const std::string& path,
                          absl::Span<const HfHparam> table, Metadata* kv);
// rope_scaling's keys (linear, yarn; llama3 for llama), or an error for a
// type not converted (io/hf_hparams.cc).
absl::Status AddRopeScaling(const HfArch& arch, const JsonValue& config, const std::string& path, Metadata* kv);

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_HF_ARCH_TABLES_H_
