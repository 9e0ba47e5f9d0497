#!/usr/bin/env python3
"""Writes a tiny random-weight Gemma 2 or Gemma 3 (text-only) Hugging Face
checkpoint folder for bolt-pack's HF import (issue 20 item 2): config.json
with small sizes, model.safetensors and the TinyStories tokenizer files
(a SentencePiece-style tokenizer.json with byte fallback, as Gemma's is).

    make_gemma_hf.py HF_TOKENIZER_DIR OUT_DIR --arch gemma2|gemma3 [--seed N]
                     [--reference OUT.gguf --tokenizer TOKENIZER.gguf]

Gemma 2's weights are BF16 (so that bolt-pack's norm + 1 is taken in F32
from BF16, as llama.cpp's converter takes it) and its folder has an lm_head
the converter drops; Gemma 3's are F32, with the per-head Q/K norms and
Gemma 3 4B's linear rope scaling. The norms hold small random offsets
around 0, as Gemma's checkpoints do (the model scales by 1 + weight).

--reference also writes, in F32, the GGUF llama.cpp's converter writes for
the folder (--outtype f32), computed here on its own from convert_hf_to_gguf.py's
Gemma2Model / Gemma3Model: the GGUF names, lm_head dropped (Gemma 2), every
"*norm.weight" + 1 in F32 (after BF16 -> F32, as prepare_tensors widens),
the `{arch}.*` keys, and TOKENIZER.gguf's tokenizer keys with
add_space_prefix false. `bolt-pack convert OUT_DIR -o X.gguf --codec '*=f32'`
must give its tensors bit for bit and its keys (make_nemotron_h_hf.py
--compare), and llama.cpp the same tokens from both.
"""
import argparse
import json
import os
import shutil
import struct

import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_nemotron_h as nh  # noqa: E402  (its GGUF writer and tokenizer reader)

N_LAYER = 2
N_EMBD = 64
N_HEAD = 4
N_HEAD_KV = 2
HEAD_DIM = 16
N_FF = 128


def config(arch, n_vocab):
    c = {"architectures": ["Gemma2ForCausalLM" if arch == "gemma2" else "Gemma3ForCausalLM"],
         "model_type": arch if arch == "gemma2" else "gemma3_text",
         "num_hidden_layers": N_LAYER, "hidden_size": N_EMBD, "intermediate_size": N_FF,
         "num_attention_heads": N_HEAD, "num_key_value_heads": N_HEAD_KV, "head_dim": HEAD_DIM,
         "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "vocab_size": n_vocab,
         "sliding_window": 32, "query_pre_attn_scalar": HEAD_DIM, "hidden_activation": "gelu_pytorch_tanh",
         "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0, "tie_word_embeddings": True}
    if arch == "gemma2":
        c.update({"attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0, "torch_dtype": "bfloat16"})
    else:
        c.update({"rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "sliding_window_pattern": 6,
                  "rope_scaling": {"rope_type": "linear", "factor": 8.0}, "final_logit_softcapping": None,
                  "attn_logit_softcapping": None, "torch_dtype": "float32"})
    return c


def tensors(arch, n_vocab, rng):
    def mat(rows, cols, scale=0.02):
        return (rng.standard_normal((rows, cols)) * scale).astype(np.float32)

    def norm(n):
        return (rng.standard_normal(n) * 0.1).astype(np.float32)

    # A small embedding (Gemma scales it by sqrt(n_embd)): the layers, not
    # the input token, dominate the residual stream, so that greedy decoding
    # does not just repeat a token and the same-tokens check tells models apart.
    t = {"model.embed_tokens.weight": mat(n_vocab, N_EMBD, 0.05), "model.norm.weight": norm(N_EMBD)}
    for i in range(N_LAYER):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = norm(N_EMBD)
        t[p + "post_attention_layernorm.weight"] = norm(N_EMBD)
        t[p + "pre_feedforward_layernorm.weight"] = norm(N_EMBD)
        t[p + "post_feedforward_layernorm.weight"] = norm(N_EMBD)
        t[p + "self_attn.q_proj.weight"] = mat(N_HEAD * HEAD_DIM, N_EMBD)
        t[p + "self_attn.k_proj.weight"] = mat(N_HEAD_KV * HEAD_DIM, N_EMBD)
        t[p + "self_attn.v_proj.weight"] = mat(N_HEAD_KV * HEAD_DIM, N_EMBD)
        t[p + "self_attn.o_proj.weight"] = mat(N_EMBD, N_HEAD * HEAD_DIM)
        t[p + "mlp.gate_proj.weight"] = mat(N_FF, N_EMBD)
        t[p + "mlp.up_proj.weight"] = mat(N_FF, N_EMBD)
        t[p + "mlp.down_proj.weight"] = mat(N_EMBD, N_FF)
        if arch == "gemma3":
            t[p + "self_attn.q_norm.weight"] = norm(HEAD_DIM)
            t[p + "self_attn.k_norm.weight"] = norm(HEAD_DIM)
    if arch == "gemma2":
        t["lm_head.weight"] = t["model.embed_tokens.weight"].copy()  # tied: the converter drops it
    return t


# tensor_mapping.py's names for MODEL_ARCH.GEMMA2 / GEMMA3 (the layer's).
GGUF_NAMES = {"input_layernorm": "attn_norm", "post_attention_layernorm": "post_attention_norm",
              "pre_feedforward_layernorm": "ffn_norm", "post_feedforward_layernorm": "post_ffw_norm",
              "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
              "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
              "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}


def gguf_name(hf):
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    _, _, bid, rest = hf.split(".", 3)
    return f"blk.{bid}.{GGUF_NAMES[rest[:-len('.weight')]]}.weight"


def reference_tensors(arch, named, bf16):
    out = []
    for name in sorted(named):
        if arch == "gemma2" and name == "lm_head.weight":
            continue  # Gemma2Model.filter_tensors
        a = named[name].astype(np.float32)
        if bf16:
            a = np.frombuffer(bf16_bytes(a), dtype=np.uint16).astype(np.uint32) << 16
            a = a.view(np.float32).reshape(named[name].shape)
        if name.endswith("norm.weight"):
            a = a + np.float32(1)
        out.append((gguf_name(name), a.astype(np.float32)))
    return out


def reference_keys(arch, c):
    U, F = nh.V_U32, nh.V_F32
    if arch == "gemma2":
        keys = [("context_length", U, c["max_position_embeddings"]), ("embedding_length", U, c["hidden_size"]),
                ("block_count", U, c["num_hidden_layers"]), ("feed_forward_length", U, c["intermediate_size"]),
                ("attention.head_count", U, c["num_attention_heads"]),
                ("attention.head_count_kv", U, c["num_key_value_heads"]),
                ("attention.layer_norm_rms_epsilon", F, c["rms_norm_eps"]), ("attention.key_length", U, c["head_dim"]),
                ("attention.value_length", U, c["head_dim"]),
                ("attn_logit_softcapping", F, c["attn_logit_softcapping"]),
                ("final_logit_softcapping", F, c["final_logit_softcapping"]),
                ("attention.sliding_window", U, c["sliding_window"])]
    else:
        keys = [("block_count", U, c["num_hidden_layers"]), ("context_length", U, c["max_position_embeddings"]),
                ("embedding_length", U, c["hidden_size"]), ("feed_forward_length", U, c["intermediate_size"]),
                ("attention.head_count", U, c["num_attention_heads"]),
                ("attention.head_count_kv", U, c["num_key_value_heads"]), ("rope.freq_base", F, c["rope_theta"]),
                ("attention.layer_norm_rms_epsilon", F, c["rms_norm_eps"]), ("attention.key_length", U, c["head_dim"]),
                ("attention.value_length", U, c["head_dim"]), ("attention.sliding_window", U, c["sliding_window"]),
                ("rope.scaling.type", nh.V_STRING, c["rope_scaling"]["rope_type"]),
                ("rope.scaling.factor", F, c["rope_scaling"]["factor"])]
    return [nh.kv("general.architecture", nh.V_STRING, arch)] + [nh.kv(f"{arch}.{k}", t, v) for k, t, v in keys]


def bf16_bytes(a):
    """a rounded to BF16 (nearest even), little-endian."""
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return r.tobytes()


def write_safetensors(path, named, bf16):
    header, blobs, offset = {}, [], 0
    for name in sorted(named):
        a = named[name]
        data = bf16_bytes(a) if bf16 else a.astype("<f4").tobytes()
        header[name] = {"dtype": "BF16" if bf16 else "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for b in blobs:
            f.write(b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tokenizer_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--arch", choices=["gemma2", "gemma3"], required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--reference", metavar="OUT.gguf")
    ap.add_argument("--tokenizer", metavar="TOKENIZER.gguf", help="the tokenizer keys of --reference")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(args.tokenizer_dir, f), os.path.join(args.out_dir, f))
    with open(os.path.join(args.tokenizer_dir, "tokenizer.json"), encoding="utf-8") as f:
        n_vocab = len(json.load(f)["model"]["vocab"])
    rng = np.random.default_rng(args.seed)
    c = config(args.arch, n_vocab)
    with open(os.path.join(args.out_dir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(c, f, indent=2)
    named = tensors(args.arch, n_vocab, rng)
    bf16 = args.arch == "gemma2"
    write_safetensors(os.path.join(args.out_dir, "model.safetensors"), named, bf16)
    if args.reference:
        tok = [raw for _, raw in nh.read_tokenizer_kvs(args.tokenizer)]
        tok.append(nh.kv("tokenizer.ggml.add_space_prefix", nh.V_BOOL, False))
        nh.write_gguf(args.reference, reference_keys(args.arch, c) + tok, reference_tensors(args.arch, named, bf16))


if __name__ == "__main__":
    main()
