// nemotron_h and nemotron_h_moe (HF NemotronHForCausalLM): Mamba-2, attention
// (no RoPE), ReLU^2 MLP and MoE layers in the order of config.json's
// hybrid_override_pattern. Names from gguf-py's tensor_mapping.py for
// MODEL_ARCH.NEMOTRON_H(_MOE); the reshapes and A = -exp(A_log) from
// convert_hf_to_gguf.py's NemotronHModel.modify_tensors (Mamba2Model's for
// the dense family).
#include "io/hf_arch_tables.h"

namespace boltpack::io {
namespace {

constexpr HfTensorRule kNemotronHTensors[] = {
    {"backbone.embeddings", "token_embd"},
    {"backbone.norm_f", "output_norm"},
    {"lm_head", "output"},
    {"backbone.layers.{bid}.norm", "blk.{bid}.attn_norm"},
    // Mamba-2 mixer.
    {"backbone.layers.{bid}.mixer.in_proj", "blk.{bid}.ssm_in"},
    {"backbone.layers.{bid}.mixer.conv1d", "blk.{bid}.ssm_conv1d", HfPermute::kNone, HfReshape::kSqueeze},
    {"backbone.layers.{bid}.mixer.dt_bias", "blk.{bid}.ssm_dt.bias"},
    {"backbone.layers.{bid}.mixer.A_log", "blk.{bid}.ssm_a", HfPermute::kNone, HfReshape::kColumn, true},
    {"backbone.layers.{bid}.mixer.D", "blk.{bid}.ssm_d", HfPermute::kNone, HfReshape::kColumn},
    {"backbone.layers.{bid}.mixer.norm", "blk.{bid}.ssm_norm", HfPermute::kNone, HfReshape::kGroups},
    {"backbone.layers.{bid}.mixer.out_proj", "blk.{bid}.ssm_out"},
    // Attention: no rotary embedding, so no Q/K reordering.
    {"backbone.layers.{bid}.mixer.q_proj", "blk.{bid}.attn_q"},
    {"backbone.layers.{bid}.mixer.k_proj", "blk.{bid}.attn_k"},
    {"backbone.layers.{bid}.mixer.v_proj", "blk.{bid}.attn_v"},
    {"backbone.layers.{bid}.mixer.o_proj", "blk.{bid}.attn_output"},
    // Dense ReLU^2 MLP (nemotron_h): up and down, no gate.
    {"backbone.layers.{bid}.mixer.up_proj", "blk.{bid}.ffn_up"},
    {"backbone.layers.{bid}.mixer.down_proj", "blk.{bid}.ffn_down"},
    // MoE (nemotron_h_moe): a sigmoid router with a correction bias, ReLU^2
    // experts (no gate), one shared expert, optional latent projections.
    {"backbone.layers.{bid}.mixer.gate", "blk.{bid}.ffn_gate_inp"},
    {"backbone.layers.{bid}.mixer.gate.e_score_correction_bias", "blk.{bid}.exp_probs_b.bias"},
    {"backbone.layers.{bid}.mixer.experts.{xid}.up_proj", "blk.{bid}.ffn_up_exps"},
    {"backbone.layers.{bid}.mixer.experts.{xid}.down_proj", "blk.{bid}.ffn_down_exps"},
    {"backbone.layers.{bid}.mixer.shared_experts.up_proj", "blk.{bid}.ffn_up_shexp"},
    {"backbone.layers.{bid}.mixer.shared_experts.down_proj", "blk.{bid}.ffn_down_shexp"},
    {"backbone.layers.{bid}.mixer.fc1_latent_proj", "blk.{bid}.ffn_latent_down"},
    {"backbone.layers.{bid}.mixer.fc2_latent_proj", "blk.{bid}.ffn_latent_up"},
};

// llama.cpp's converter picks nemotron_h_moe when config.json names
// num_experts_per_tok (NemotronHModel.__init__).
constexpr HfArch kNemotron[] = {
    {"NemotronHForCausalLM", "nemotron_h_moe", kNemotronHTensors, false, NemotronHHparams, "num_experts_per_tok", ""},
    {"NemotronHForCausalLM", "nemotron_h", kNemotronHTensors, false, NemotronHHparams, "", "num_experts_per_tok"},
};

}  // namespace

absl::Span<const HfArch> NemotronArchs() { return kNemotron; }

}  // namespace boltpack::io
