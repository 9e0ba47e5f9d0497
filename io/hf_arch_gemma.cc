// gemma2 and gemma3 (text-only Gemma3ForCausalLM): gguf-py's MODEL_TENSORS
// for MODEL_ARCH.GEMMA2 / GEMMA3 and tensor_mapping.py's names. Both wrap
// attention and MLP in norms before and after ("sandwich" norms: HF's
// post_attention_layernorm is llama.cpp's post_attention_norm, not the
// ffn_norm it is for llama; pre_feedforward_layernorm is ffn_norm), run
// NEOX-style rotary (no Q/K reordering) and store every norm as 1 + weight
// (convert_hf_to_gguf.py adds 1 to each "*norm.weight"). Gemma2's
// converter drops lm_head (tied to the embedding); gemma3 adds per-head
// Q/K norms and keeps an lm_head if a checkpoint has one.
#include "io/hf_arch_tables.h"

namespace boltpack::io {
namespace {

#define BP_GEMMA_NORM(from, to) \
  { .hf = from, .gguf = to, .plus_one = true }

#define BP_GEMMA_COMMON_TENSORS                                                               \
  {"model.embed_tokens", "token_embd"}, BP_GEMMA_NORM("model.norm", "output_norm"),           \
      BP_GEMMA_NORM("model.layers.{bid}.input_layernorm", "blk.{bid}.attn_norm"),             \
      {"model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"},                            \
      {"model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k"},                            \
      {"model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"},                            \
      {"model.layers.{bid}.self_attn.o_proj", "blk.{bid}.attn_output"},                       \
      BP_GEMMA_NORM("model.layers.{bid}.post_attention_layernorm", "blk.{bid}.post_attention_norm"), \
      BP_GEMMA_NORM("model.layers.{bid}.pre_feedforward_layernorm", "blk.{bid}.ffn_norm"),    \
      BP_GEMMA_NORM("model.layers.{bid}.post_feedforward_layernorm", "blk.{bid}.post_ffw_norm"), \
      {"model.layers.{bid}.mlp.gate_proj", "blk.{bid}.ffn_gate"},                             \
      {"model.layers.{bid}.mlp.up_proj", "blk.{bid}.ffn_up"},                                 \
      {"model.layers.{bid}.mlp.down_proj", "blk.{bid}.ffn_down"}

constexpr HfTensorRule kGemma2Tensors[] = {
    BP_GEMMA_COMMON_TENSORS,
    {"lm_head", ""},  // the converter skips it: llama.cpp reads token_embd for the output
};

constexpr HfTensorRule kGemma3Tensors[] = {
    BP_GEMMA_COMMON_TENSORS,
    {"lm_head", "output"},
    BP_GEMMA_NORM("model.layers.{bid}.self_attn.q_norm", "blk.{bid}.attn_q_norm"),
    BP_GEMMA_NORM("model.layers.{bid}.self_attn.k_norm", "blk.{bid}.attn_k_norm"),
};

#undef BP_GEMMA_COMMON_TENSORS
#undef BP_GEMMA_NORM

constexpr HfArch kGemma[] = {
    {.hf_class = "Gemma2ForCausalLM", .gguf = "gemma2", .tensors = kGemma2Tensors, .hparams = Gemma2Hparams,
     .no_space_prefix = true},
    {.hf_class = "Gemma3ForCausalLM", .gguf = "gemma3", .tensors = kGemma3Tensors, .hparams = Gemma3Hparams,
     .no_space_prefix = true},
};

}  // namespace

absl::Span<const HfArch> GemmaArchs() { return kGemma; }

}  // namespace boltpack::io
