// qwen2, qwen3 and qwen3moe: llama's names without the Q/K reordering (llama.cpp runs
// them with NEOX-style rotary, which pairs i with i + head_dim/2 as HF
// does); qwen2's Q/K/V biases map by the same names; qwen3 adds per-head
// RMS norms of Q and K.
#include "io/hf_arch_tables.h"

namespace boltpack::io {
namespace {

#define BP_QWEN_COMMON_TENSORS                                                \
  {"model.embed_tokens", "token_embd"}, {"model.norm", "output_norm"},        \
      {"lm_head", "output"},                                                  \
      {"model.layers.{bid}.input_layernorm", "blk.{bid}.attn_norm"},          \
      {"model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"},            \
      {"model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k"},            \
      {"model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"},            \
      {"model.layers.{bid}.self_attn.o_proj", "blk.{bid}.attn_output"},       \
      {"model.layers.{bid}.post_attention_layernorm", "blk.{bid}.ffn_norm"},  \
      {"model.layers.{bid}.mlp.gate_proj", "blk.{bid}.ffn_gate"},             \
      {"model.layers.{bid}.mlp.up_proj", "blk.{bid}.ffn_up"},                 \
      {"model.layers.{bid}.mlp.down_proj", "blk.{bid}.ffn_down"}

constexpr HfTensorRule kQwen2Tensors[] = {BP_QWEN_COMMON_TENSORS};

constexpr HfTensorRule kQwen3Tensors[] = {
    BP_QWEN_COMMON_TENSORS,
    {"model.layers.{bid}.self_attn.q_norm", "blk.{bid}.attn_q_norm"},
    {"model.layers.{bid}.self_attn.k_norm", "blk.{bid}.attn_k_norm"},
};

// qwen3moe: qwen3's attention with a router and experts in place of the
// dense MLP.
constexpr HfTensorRule kQwen3MoeTensors[] = {
    {"model.embed_tokens", "token_embd"},
    {"model.norm", "output_norm"},
    {"lm_head", "output"},
    {"model.layers.{bid}.input_layernorm", "blk.{bid}.attn_norm"},
    {"model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"},
    {"model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k"},
    {"model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"},
    {"model.layers.{bid}.self_attn.o_proj", "blk.{bid}.attn_output"},
    {"model.layers.{bid}.self_attn.q_norm", "blk.{bid}.attn_q_norm"},
    {"model.layers.{bid}.self_attn.k_norm", "blk.{bid}.attn_k_norm"},
    {"model.layers.{bid}.post_attention_layernorm", "blk.{bid}.ffn_norm"},
    {"model.layers.{bid}.mlp.gate", "blk.{bid}.ffn_gate_inp"},
    {"model.layers.{bid}.mlp.experts.{xid}.gate_proj", "blk.{bid}.ffn_gate_exps"},
    {"model.layers.{bid}.mlp.experts.{xid}.up_proj", "blk.{bid}.ffn_up_exps"},
    {"model.layers.{bid}.mlp.experts.{xid}.down_proj", "blk.{bid}.ffn_down_exps"},
};

#undef BP_QWEN_COMMON_TENSORS

constexpr HfArch kQwen[] = {
    {"Qwen2ForCausalLM", "qwen2", kQwen2Tensors, false},
    {"Qwen3ForCausalLM", "qwen3", kQwen3Tensors, false},
    {"Qwen3MoeForCausalLM", "qwen3moe", kQwen3MoeTensors, false},
};

}  // namespace

absl::Span<const HfArch> QwenArchs() { return kQwen; }

}  // namespace boltpack::io
