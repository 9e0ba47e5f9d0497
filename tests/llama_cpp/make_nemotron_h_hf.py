#!/usr/bin/env python3
"""Writes the random-weight Nemotron-H test model of make_nemotron_h.py as a
Hugging Face checkpoint folder (NemotronHForCausalLM), for bolt-pack's HF
import (issue 20 item 2, issue 21 item 1): config.json, model.safetensors and
the TinyStories tokenizer files.

    make_nemotron_h_hf.py TOKENIZER.gguf HF_TOKENIZER_DIR OUT_DIR [--variant moe|latent|dense]
                          [--seed N] [--reference OUT.gguf]
    make_nemotron_h_hf.py --compare A.gguf B.gguf

--compare exits non-zero unless the two GGUF files hold the same tensors
(names, types, shapes and bytes; not their order: a conversion writes them
in the checkpoint's sorted HF names, as llama.cpp's converter does) and the same general.architecture
and `{arch}.*` keys the reference writes (context_length and
expert_gating_func aside: see NOT_WRITTEN).

The weights are make_nemotron_h.py's for the same seed and variant, written
back in HF's layout (the inverse of what llama.cpp's converter does to them:
A_log = log(-A), D and A as vectors, the grouped norm flattened, conv1d with
its middle axis of 1, one tensor per expert). --reference also writes the
GGUF make_nemotron_h.py writes for them, with A = -exp(A_log) computed in
double and rounded once to F32 as bolt-pack does (log then exp is not the
identity in F32): `bolt-pack convert OUT_DIR -o X.gguf` must give its tensors
bit for bit.
"""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_nemotron_h as nh  # noqa: E402

PATTERN = {"mamba": "M", "attn": "*"}


def config(variant, n_vocab):
    c = {"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h",
         "hybrid_override_pattern": "".join(PATTERN.get(k, "-" if variant == "dense" else "E") for k in nh.KINDS),
         "num_hidden_layers": len(nh.KINDS), "hidden_size": nh.N_EMBD, "vocab_size": n_vocab,
         "max_position_embeddings": 512, "num_attention_heads": nh.N_HEAD, "num_key_value_heads": nh.N_HEAD_KV,
         "head_dim": nh.N_EMBD // nh.N_HEAD, "mamba_num_heads": nh.N_HEAD_SSM,
         "mamba_head_dim": nh.D_INNER // nh.N_HEAD_SSM, "ssm_state_size": nh.D_STATE, "n_groups": nh.N_GROUP,
         "conv_kernel": nh.D_CONV, "use_conv_bias": True, "layer_norm_epsilon": 1e-5, "rms_norm_eps": nh.RMS_EPS,
         "tie_word_embeddings": False, "torch_dtype": "float16"}
    if variant == "dense":
        c["intermediate_size"] = nh.FF_DENSE
    else:
        c.update({"n_routed_experts": nh.N_EXPERT, "num_experts_per_tok": nh.N_USED,
                  "moe_intermediate_size": nh.FF_EXP, "moe_shared_expert_intermediate_size": nh.FF_SHEXP,
                  "n_shared_experts": 1, "norm_topk_prob": True, "routed_scaling_factor": 1.0,
                  "n_group": 1, "topk_group": 1})
    if variant == "latent":
        c["moe_latent_size"] = nh.LATENT
    return c


# GGUF local name -> HF name under backbone.layers.N. (matrices keep their bytes)
LOCAL = {"attn_norm.weight": "norm.weight", "ssm_in.weight": "mixer.in_proj.weight",
         "ssm_conv1d.bias": "mixer.conv1d.bias", "ssm_dt.bias": "mixer.dt_bias",
         "ssm_out.weight": "mixer.out_proj.weight", "attn_q.weight": "mixer.q_proj.weight",
         "attn_k.weight": "mixer.k_proj.weight", "attn_v.weight": "mixer.v_proj.weight",
         "attn_output.weight": "mixer.o_proj.weight", "ffn_up.weight": "mixer.up_proj.weight",
         "ffn_down.weight": "mixer.down_proj.weight", "ffn_gate_inp.weight": "mixer.gate.weight",
         "exp_probs_b.bias": "mixer.gate.e_score_correction_bias",
         "ffn_up_shexp.weight": "mixer.shared_experts.up_proj.weight",
         "ffn_down_shexp.weight": "mixer.shared_experts.down_proj.weight",
         "ffn_latent_down.weight": "mixer.fc1_latent_proj.weight",
         "ffn_latent_up.weight": "mixer.fc2_latent_proj.weight"}
GLOBAL = {"token_embd.weight": "backbone.embeddings.weight", "output_norm.weight": "backbone.norm_f.weight",
          "output.weight": "lm_head.weight"}


def to_hf(tensors):
    """(HF name, array) for make_nemotron_h's GGUF tensors; and the GGUF
    tensors with ssm_a as bolt-pack computes it from the A_log written."""
    hf, ref = [], []
    for name, a in tensors:
        if name in GLOBAL:
            hf.append((GLOBAL[name], a))
            ref.append((name, a))
            continue
        _, layer, local = name.split(".", 2)
        p = f"backbone.layers.{layer}."
        if local == "ssm_a":
            a_log = np.log(-a.reshape(-1).astype(np.float64)).astype(np.float32)
            hf.append((p + "mixer.A_log", a_log))
            a = (-np.exp(a_log.astype(np.float64))).astype(np.float32).reshape(a.shape)
        elif local == "ssm_d":
            hf.append((p + "mixer.D", a.reshape(-1)))
        elif local == "ssm_norm.weight":
            hf.append((p + "mixer.norm.weight", a.reshape(-1)))
        elif local == "ssm_conv1d.weight":
            hf.append((p + "mixer.conv1d.weight", a.reshape(a.shape[0], 1, a.shape[1])))
        elif local in ("ffn_up_exps.weight", "ffn_down_exps.weight"):
            w = "up_proj" if local.startswith("ffn_up") else "down_proj"
            for x in range(a.shape[0]):
                hf.append((f"{p}mixer.experts.{x}.{w}.weight", a[x]))
        else:
            hf.append((p + LOCAL[local], a))
        ref.append((name, a))
    return hf, ref


def write_safetensors(path, tensors):
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name, a in tensors:
        raw = np.ascontiguousarray(a).tobytes()
        header[name] = {"dtype": "F16" if a.dtype == np.float16 else "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


# Reference keys the converter writes otherwise: context_length is 2^20 for
# a hybrid without RoPE; expert_gating_func is not written (llama.cpp's
# nemotron_h graph always routes with a sigmoid).
NOT_WRITTEN = ("context_length", "expert_gating_func")


def read_gguf(path):
    """({key: raw value bytes}, [(name, type, ne, bytes)]) of a GGUF v3 file."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:4] != b"GGUF":
        raise SystemExit(f"{path}: not a GGUF file")
    n_t, n_kv = struct.unpack_from("<QQ", b, 8)
    pos, kvs, alignment = 24, {}, 32

    def string(p):
        (n,) = struct.unpack_from("<Q", b, p)
        return b[p + 8:p + 8 + n].decode(), p + 8 + n

    def skip(t, p):
        if t == nh.V_STRING:
            return string(p)[1]
        if t == nh.V_ARRAY:
            et, n = struct.unpack_from("<IQ", b, p)
            p += 12
            if et in nh.FIXED:
                return p + nh.FIXED[et] * n
            for _ in range(n):
                p = skip(et, p)
            return p
        return p + nh.FIXED[t]

    for _ in range(n_kv):
        key, pos = string(pos)
        (t,) = struct.unpack_from("<I", b, pos)
        end = skip(t, pos + 4)
        kvs[key] = b[pos:end]
        if key == "general.alignment":
            (alignment,) = struct.unpack_from("<I", b, pos + 4)
        pos = end
    infos = []
    for _ in range(n_t):
        name, pos = string(pos)
        (nd,) = struct.unpack_from("<I", b, pos)
        ne = struct.unpack_from(f"<{nd}Q", b, pos + 4)
        t, off = struct.unpack_from("<IQ", b, pos + 4 + 8 * nd)
        pos += 4 + 8 * nd + 12
        infos.append((name, t, ne, off))
    data = pos + (-pos % alignment)
    sizes = {nh.T_F32: 4, nh.T_F16: 2}
    tensors = []
    for name, t, ne, off in infos:
        if t not in sizes:
            raise SystemExit(f"{path}: tensor {name} is of GGML type {t} (compare takes F32 and F16)")
        n = int(np.prod(ne)) * sizes[t]
        tensors.append((name, t, ne, b[data + off:data + off + n]))
    return kvs, tensors


def compare(a_path, b_path):
    ka, ta = read_gguf(a_path)
    kb, tb = read_gguf(b_path)
    bad = []
    da, db = {t[0]: t for t in ta}, {t[0]: t for t in tb}
    bad += [f"tensor {n}: missing" for n in db if n not in da] + [f"tensor {n}: extra" for n in da if n not in db]
    for n in (n for n in db if n in da):
        if da[n][1:3] != db[n][1:3]:
            bad.append(f"tensor {n}: type/ne {da[n][1:3]} vs {db[n][1:3]}")
        elif da[n][3] != db[n][3]:
            bad.append(f"tensor {n}: bytes differ")
    arch = kb["general.architecture"][12:].decode()
    for key, raw in kb.items():
        if key == "general.architecture" or (key.startswith(arch + ".") and key[len(arch) + 1:] not in NOT_WRITTEN):
            if ka.get(key) != raw:
                bad.append(f"key {key}: {'missing' if key not in ka else 'differs'}")
    for line in bad:
        print(f"FAIL: {a_path} vs {b_path}: {line}", file=sys.stderr)
    if bad:
        raise SystemExit(1)
    print(f"   {len(ta)} tensors bit for bit and the {arch}.* keys of {os.path.basename(b_path)}")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        return compare(sys.argv[2], sys.argv[3])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tokenizer")
    ap.add_argument("hf_tokenizer_dir")
    ap.add_argument("out")
    ap.add_argument("--variant", choices=("moe", "latent", "dense"), default="moe")
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--reference", metavar="OUT.gguf")
    a = ap.parse_args()
    tok = nh.read_tokenizer_kvs(a.tokenizer)
    n_vocab = next(struct.unpack_from("<Q", raw, 8 + len(k) + 4 + 4)[0] for k, raw in tok
                   if k == "tokenizer.ggml.tokens")
    tensors = nh.model_tensors(a.variant, n_vocab, np.random.default_rng(a.seed))
    hf, ref = to_hf(tensors)
    os.makedirs(a.out, exist_ok=True)
    write_safetensors(os.path.join(a.out, "model.safetensors"), hf)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config(a.variant, n_vocab), f, indent=1)
        f.write("\n")
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"):
        src = os.path.join(a.hf_tokenizer_dir, name)
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(a.out, name))
    if a.reference:
        arch = "nemotron_h" if a.variant == "dense" else "nemotron_h_moe"
        nh.write_gguf(a.reference, nh.model_keys(arch, a.variant, n_vocab) + [raw for _, raw in tok], ref)


if __name__ == "__main__":
    main()
