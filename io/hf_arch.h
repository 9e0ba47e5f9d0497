// What a Hugging Face checkpoint of one architecture becomes in GGUF: the
// tensor names llama.cpp expects, the rows it wants reordered and the
// `{arch}.*` hyperparameters it reads, one table per architecture
// (io/hf_arch_*.cc). The facts are llama.cpp's (gguf-py/gguf/constants.py,
// tensor_mapping.py and convert_hf_to_gguf.py); the code is ours.
#ifndef BOLTPACK_IO_HF_ARCH_H_
#define BOLTPACK_IO_HF_ARCH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "boltpack/types.h"
#include "io/json.h"

namespace boltpack::io {

// llama.cpp's rotary embedding pairs element i with i + head_dim/2 of a
// head (HF's rotate_half) in some architectures and neighbours in others;
// its converter reorders the rows of Q and K so that llama's kernels (which
// pair neighbours) compute what the checkpoint meant.
enum class HfPermute : uint8_t {
  kNone,
  kQueryHeads,  // rows in num_attention_heads groups
  kKeyHeads,    // rows in num_key_value_heads groups
};

// The shape a tensor takes in GGUF when llama.cpp's converter reshapes it
// (Mamba-2, convert_hf_to_gguf.py's NemotronHModel / Mamba2Model): the
// bytes stay as they are, row-major.
enum class HfReshape : uint8_t {
  kNone,
  kSqueeze,  // drop every axis of 1: conv1d [C, 1, K] -> [C, K]
  kColumn,   // the elements as [n, 1]: A and D, one per head
  kGroups,   // [d] -> [n_groups, d / n_groups]: the grouped RMS norm
};

// One HF tensor name (without .weight/.bias; "{bid}" stands for the layer
// number, "{xid}" for an expert's) and the GGUF name it becomes. The
// tensors of every expert of a layer ("{xid}" in `hf`) become one GGUF
// tensor, stacked in expert order ([n_expert, rows, cols]), as llama.cpp's
// *_exps tensors are.
struct HfTensorRule {
  std::string_view hf;
  std::string_view gguf;
  HfPermute permute = HfPermute::kNone;
  HfReshape reshape = HfReshape::kNone;
  // Mamba-2's A_log: llama.cpp stores A = -exp(A_log), in F32.
  bool neg_exp = false;
  // Gemma's RMS norms scale by 1 + weight: llama.cpp stores weight + 1, in
  // F32 (io::NormPlusOneF32).
  bool plus_one = false;
};

enum class HfValue : uint8_t { kU32, kF32 };

// A `{arch}.<key>` hyperparameter read from config.json's first present
// field of `fields` (a comma-separated list).
struct HfHparam {
  std::string_view key;     // without the "{arch}." prefix
  std::string_view fields;  // config.json names, first present wins
  HfValue type = HfValue::kU32;
  // The value when every field is absent (transformers' config default,
  // which llama.cpp's converter sees through AutoConfig); < 0: none, the
  // key is left out.
  double fallback = -1;
};

struct HfArch;
// An architecture's own `{arch}.*` keys in place of the generic decoder
// table (nemotron_h's per-layer arrays, ssm.* sizes).
using HfHparamsFn = absl::Status (*)(const HfArch& arch, const JsonValue& config, const std::string& path,
                                     Metadata* kv);

struct HfArch {
  std::string_view hf_class;  // config.json "architectures"[0]
  std::string_view gguf;      // general.architecture
  absl::Span<const HfTensorRule> tensors;
  // llama writes vocab_size and rope.dimension_count (LlamaModel), the
  // Qwen family leaves them to llama.cpp.
  bool writes_vocab_and_rope_dims = false;
  HfHparamsFn hparams = nullptr;  // nullptr: the generic decoder keys
  // One HF class, two GGUF architectures (NemotronHForCausalLM is
  // nemotron_h_moe when config.json has this field, as llama.cpp's
  // converter decides): the table applies only when config.json has
  // `if_has` (when set) and lacks `unless_has` (when set).
  std::string_view if_has;
  std::string_view unless_has;
  // Gemma: a SentencePiece-style vocabulary ("llama" tokenizer) gets
  // tokenizer.ggml.add_space_prefix false, as the converter writes it.
  bool no_space_prefix = false;
};

// The table of config.json's architecture; NotFound naming it (and the
// ones known) otherwise. `path` is for messages.
absl::StatusOr<const HfArch*> FindHfArch(const JsonValue& config, const std::string& path);

// The GGUF name of HF tensor `name` ("model.layers.3.self_attn.q_proj.weight"
// -> "blk.3.attn_q.weight") and the rule that matched; nullopt when no rule
// of `arch` names it.
struct HfMapped {
  std::string name;
  const HfTensorRule* rule = nullptr;
  std::optional<uint32_t> expert;  // the expert number of a "{xid}" rule
};
std::optional<HfMapped> MapHfTensorName(const HfArch& arch, std::string_view name);

// The inverse: the HF name GGUF tensor `gguf_name` comes from
// ("blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight"); for
// a stacked *_exps tensor, the tensor of expert `expert` (which must then
// be given, and must not be otherwise). nullopt when no rule of `arch`
// writes that name (rope_freqs, a tensor of another architecture).
std::optional<std::string> HfNameOfGguf(const HfArch& arch, std::string_view gguf_name,
                                        std::optional<uint32_t> expert = std::nullopt);

// Reorders the rows of a Q or K projection (weight [rows, ...] or bias
// [rows]) as llama.cpp's LlamaModel.permute does: viewed as
// [heads, 2, rows/heads/2, rest], the two middle axes swap. `bytes` holds
// the tensor row-major, `row_bytes` per row. InvalidArgument when rows is
// not a multiple of 2 * heads.
absl::StatusOr<std::vector<uint8_t>> PermuteRotaryRows(absl::Span<const uint8_t> bytes, uint64_t rows,
                                                       uint64_t row_bytes, uint64_t heads);

// Gemma's norm weights as llama.cpp's converter stores them: weight + 1
// in F32 elements (from F32 or BF16 the sum is taken in F32; from F16 in
// F16, as torch adds to an F16 tensor, then widened). `where` is for
// messages.
absl::StatusOr<std::vector<uint8_t>> NormPlusOneF32(DType dtype, absl::Span<const uint8_t> bytes,
                                                    const std::string& where);

// general.architecture and the `{arch}.*` keys of config.json, in the
// order llama.cpp's converter writes them.
absl::StatusOr<Metadata> HfHyperparameters(const HfArch& arch, const JsonValue& config, const std::string& path);

// Llama 3 rope scaling (rope_scaling.rope_type "llama3") as the factors of
// the rope_freqs.weight tensor llama.cpp reads (head_dim / 2 of them);
// empty for any other config.
absl::StatusOr<std::vector<float>> Llama3RopeFactors(const JsonValue& config, const std::string& path);

// A config.json integer field (nullopt when absent or null; an error when
// not a non-negative integer).
absl::StatusOr<std::optional<uint64_t>> ConfigUint(const JsonValue& config, std::string_view field,
                                                    const std::string& path);

}  // namespace boltpack::io

#endif  // BOLTPACK_IO_HF_ARCH_H_
