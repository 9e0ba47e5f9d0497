// llama (and mistral and mixtral, which llama.cpp converts as llama): the names of
// gguf-py's MODEL_TENSOR table for LLM_ARCH_LLAMA, and the Q/K row order
// of convert_hf_to_gguf.py's LlamaModel.permute.
#include "io/hf_arch_tables.h"

namespace boltpack::io {
namespace {

constexpr HfTensorRule kLlamaTensors[] = {
    {"model.embed_tokens", "token_embd"},
    {"model.norm", "output_norm"},
    {"lm_head", "output"},
    {"model.layers.{bid}.input_layernorm", "blk.{bid}.attn_norm"},
    {"model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q", HfPermute::kQueryHeads},
    {"model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k", HfPermute::kKeyHeads},
    {"model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"},
    {"model.layers.{bid}.self_attn.o_proj", "blk.{bid}.attn_output"},
    // Older checkpoints keep the rotary frequencies as a buffer; llama.cpp
    // computes them from rope.freq_base and skips the tensor.
    {"model.layers.{bid}.self_attn.rotary_emb.inv_freq", ""},
    {"model.layers.{bid}.post_attention_layernorm", "blk.{bid}.ffn_norm"},
    {"model.layers.{bid}.mlp.gate_proj", "blk.{bid}.ffn_gate"},
    {"model.layers.{bid}.mlp.up_proj", "blk.{bid}.ffn_up"},
    {"model.layers.{bid}.mlp.down_proj", "blk.{bid}.ffn_down"},
};

// Mixtral: llama's attention, a router and 8 experts per layer (w1 gate,
// w2 down, w3 up), which llama.cpp runs as llama with *_exps tensors.
constexpr HfTensorRule kMixtralTensors[] = {
    {"model.embed_tokens", "token_embd"},
    {"model.norm", "output_norm"},
    {"lm_head", "output"},
    {"model.layers.{bid}.input_layernorm", "blk.{bid}.attn_norm"},
    {"model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q", HfPermute::kQueryHeads},
    {"model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k", HfPermute::kKeyHeads},
    {"model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"},
    {"model.layers.{bid}.self_attn.o_proj", "blk.{bid}.attn_output"},
    {"model.layers.{bid}.post_attention_layernorm", "blk.{bid}.ffn_norm"},
    {"model.layers.{bid}.block_sparse_moe.gate", "blk.{bid}.ffn_gate_inp"},
    {"model.layers.{bid}.block_sparse_moe.experts.{xid}.w1", "blk.{bid}.ffn_gate_exps"},
    {"model.layers.{bid}.block_sparse_moe.experts.{xid}.w2", "blk.{bid}.ffn_down_exps"},
    {"model.layers.{bid}.block_sparse_moe.experts.{xid}.w3", "blk.{bid}.ffn_up_exps"},
};

constexpr HfArch kLlama[] = {
    {"LlamaForCausalLM", "llama", kLlamaTensors, true},
    {"MistralForCausalLM", "llama", kLlamaTensors, true},
    {"MixtralForCausalLM", "llama", kMixtralTensors, true},
};

}  // namespace

absl::Span<const HfArch> LlamaArchs() { return kLlama; }

}  // namespace boltpack::io
