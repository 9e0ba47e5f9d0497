#!/usr/bin/env python3
"""Writes a small random-weight Nemotron-H GGUF that llama.cpp loads and runs
(issue 21 item 1): the hybrid Mamba-2 + MoE + attention layout of Nemotron
3.5 Bolt at toy size, with the keys and tensors llama.cpp's converter writes
(gguf-py's constants and tensor map; llama.cpp's nemotron_h loader).

    make_nemotron_h.py TOKENIZER.gguf OUT.gguf [--variant moe|latent|dense] [--seed N] [--break B]
                       [--elastic OUT.json [--budgets all|mix]] [--switch-off BUDGET]

Layers: Mamba-2, MoE (or MLP), Mamba-2, attention, Mamba-2, MoE (or MLP).
n_embd 256; Mamba-2 d_inner 512 in 8 heads of 64, 2 groups, state 64, conv 4;
8 routed experts of width 256 (top 2) plus a shared expert of 512; attention
8 heads of 32 (2 KV heads), no RoPE; `latent` routes the experts through a
128-wide latent projection; `dense` is nemotron_h with ReLU^2 MLPs of 512.
The tokenizer keys (tokenizer.*) are copied from TOKENIZER.gguf (the shipped
TinyStories-656K, a 2048-token llama vocabulary). Weights are deterministic
(numpy's default_rng(seed)); matrices are F16, vectors F32, as llama.cpp's
converter stores them. The output is random: it runs, it does not write
English.

--elastic writes the model's elastic authoring file (spec/elastic.md §4):
routed experts, expert width, shared-expert width, query heads inside
their GQA groups and Mamba-2 heads inside their B/C and norm groups (the
grouped ssm_norm [n_group][d_inner / n_group] bound flat, format 1.4), with
importance scores, and budgets that cut each of them and drop a Mamba-2 and
a MoE layer. --switch-off BUDGET writes instead the
parent with the units BUDGET cuts switched off, the reference a slice of
that budget must match token for token in llama.cpp: a cut expert's router
bias at -1e30 (never selected), a cut channel's or head's rows and columns
zeroed (ReLU^2(0) = 0; a zero query head's output meets zeroed attn_output
columns), a dropped layer's output projections zeroed (its residual passes
through), a cut Mamba-2 head's z (gate) rows of ssm_in zeroed (its y is
y * silu(0) = 0 before the grouped RMS norm) and the kept ssm_norm weights
of each group scaled by sqrt(N_kept / N) (N channels per group, N_kept kept):
the group's mean of squares over N channels, of which only N_kept are
non-zero, is N_kept / N of the child's over N_kept, so the parent's
normalized values are sqrt(N / N_kept) times the child's, which the weights
undo. Up to the epsilon: rms_norm adds eps to the mean of squares, so the
reference normalizes by sqrt(ms + eps * N / N_kept) where the child has
sqrt(ms + eps). The toy mixer's gated y has a mean square of about 2e-5,
against which llama.cpp's usual 1e-5 would move the norm by tens of
percent, so the model's RMS epsilon is 1e-10 (RMS_EPS): the difference is
then about 1e-6 of the norm; not bit-exact, checked token for token.

--break makes one of the files llama.cpp refuses (issue 21, items 1-2), for
checking that `verify --target llama.cpp` refuses it too:
  no-ln-eps       no attention.layer_norm_epsilon (the loader requires it
                  beside the RMS epsilon)
  head0           attention.head_count per layer with layer 0 at 0 (llama.cpp
                  derives the head width from layer 0: GGML_ASSERT)
  probs-name      the router bias named ffn_exp_probs_b.bias (gguf-py's name
                  is exp_probs_b)
  expert-count    expert_count per layer (it must stay one number)
  ssm-inner-array ssm.inner_size per layer (llama.cpp reads it, like
                  ssm.time_step_rank, as one number: a budget whose Mamba
                  layers keep different head counts has no llama.cpp form)
"""
import argparse
import json
import struct

import numpy as np

N_EMBD, D_INNER, N_HEAD_SSM, N_GROUP, D_STATE, D_CONV = 256, 512, 8, 2, 64, 4
N_EXPERT, N_USED, FF_EXP, FF_SHEXP, LATENT = 8, 2, 256, 512, 128
N_HEAD, N_HEAD_KV, FF_DENSE = 8, 2, 512
KINDS = ("mamba", "ffn", "mamba", "attn", "mamba", "ffn")
RMS_EPS = 1e-10

T_F32, T_F16 = 0, 1
V_U32, V_I32, V_F32, V_BOOL, V_STRING, V_ARRAY = 4, 5, 6, 7, 8, 9
FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def read_tokenizer_kvs(path):
    """The raw bytes of every tokenizer.* key/value of a GGUF v2/v3 file."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:4] != b"GGUF":
        raise SystemExit(f"{path}: not a GGUF file")
    pos = 8
    _, n_kv = struct.unpack_from("<QQ", b, pos)
    pos += 16

    def skip_string(p):
        (n,) = struct.unpack_from("<Q", b, p)
        return p + 8 + n

    def skip_value(t, p):
        if t == V_STRING:
            return skip_string(p)
        if t == V_ARRAY:
            et, n = struct.unpack_from("<IQ", b, p)
            p += 12
            if et in FIXED:
                return p + FIXED[et] * n
            for _ in range(n):
                p = skip_value(et, p)
            return p
        return p + FIXED[t]

    kvs = []
    for _ in range(n_kv):
        start = pos
        (n,) = struct.unpack_from("<Q", b, pos)
        key = b[pos + 8:pos + 8 + n].decode()
        pos = skip_string(pos)
        (t,) = struct.unpack_from("<I", b, pos)
        pos = skip_value(t, pos + 4)
        if key.startswith("tokenizer."):
            kvs.append((key, b[start:pos]))
    return kvs


def gguf_str(s):
    e = s.encode()
    return struct.pack("<Q", len(e)) + e


def kv(key, vtype, value):
    out = gguf_str(key) + struct.pack("<I", vtype)
    if vtype == V_STRING:
        return out + gguf_str(value)
    if vtype == V_ARRAY:
        return out + struct.pack("<IQ", V_I32, len(value)) + b"".join(struct.pack("<i", v) for v in value)
    return out + struct.pack({V_U32: "<I", V_I32: "<i", V_F32: "<f", V_BOOL: "<?"}[vtype], value)


BREAKS = ("no-ln-eps", "head0", "probs-name", "expert-count", "ssm-inner-array")


def model_keys(arch, variant, n_vocab, broken=None):
    a = arch + "."
    ff = [(FF_DENSE if variant == "dense" else FF_EXP) if k == "ffn" else 0 for k in KINDS]
    keys = [kv("general.architecture", V_STRING, arch),
            kv("general.name", V_STRING, f"bolt-pack test {arch} ({variant})"),
            kv("general.file_type", V_U32, 1),
            kv(a + "vocab_size", V_U32, n_vocab),
            kv(a + "context_length", V_U32, 512),
            kv(a + "embedding_length", V_U32, N_EMBD),
            kv(a + "block_count", V_U32, len(KINDS)),
            kv(a + "feed_forward_length", V_ARRAY, ff),
            kv(a + "attention.head_count", V_ARRAY, [0 if k == "mamba" else N_HEAD for k in KINDS])
            if broken == "head0" else kv(a + "attention.head_count", V_U32, N_HEAD),
            kv(a + "attention.head_count_kv", V_ARRAY, [N_HEAD_KV if k == "attn" else 0 for k in KINDS]),
            kv(a + "attention.key_length", V_U32, N_EMBD // N_HEAD),
            kv(a + "attention.value_length", V_U32, N_EMBD // N_HEAD),
            # A small RMS epsilon: the Mamba-2 head cut's reference (below)
            # normalizes by sqrt(ms + eps * N / N_kept) where the child has
            # sqrt(ms + eps), and the toy mixer's ms is about 2e-5.
            kv(a + "attention.layer_norm_rms_epsilon", V_F32, RMS_EPS),
            kv(a + "attention.layer_norm_epsilon", V_F32, 1e-5) if broken != "no-ln-eps" else b"",
            kv(a + "ssm.conv_kernel", V_U32, D_CONV),
            kv(a + "ssm.inner_size", V_ARRAY, [D_INNER if k == "mamba" else 0 for k in KINDS])
            if broken == "ssm-inner-array" else kv(a + "ssm.inner_size", V_U32, D_INNER),
            kv(a + "ssm.state_size", V_U32, D_STATE),
            kv(a + "ssm.time_step_rank", V_U32, N_HEAD_SSM),
            kv(a + "ssm.group_count", V_U32, N_GROUP)]
    if variant != "dense":
        keys += [kv(a + "expert_count", V_ARRAY, [N_EXPERT if k == "ffn" else 0 for k in KINDS])
                 if broken == "expert-count" else kv(a + "expert_count", V_U32, N_EXPERT),
                 kv(a + "expert_used_count", V_U32, N_USED),
                 kv(a + "expert_feed_forward_length", V_U32, FF_EXP),
                 kv(a + "expert_shared_feed_forward_length", V_U32, FF_SHEXP),
                 kv(a + "expert_weights_scale", V_F32, 1.0),
                 kv(a + "expert_weights_norm", V_BOOL, True),
                 kv(a + "expert_gating_func", V_U32, 2)]  # sigmoid
    if variant == "latent":
        keys.append(kv(a + "moe_latent_size", V_U32, LATENT))
    return [k for k in keys if k]


def model_tensors(variant, n_vocab, rng, broken=None):
    """(name, numpy array in row-major order of the reversed GGUF ne)."""
    def mat(ne, std=0.02):  # ne innermost first, as GGUF lists it
        return rng.normal(0.0, std, size=tuple(reversed(ne))).astype(np.float16)

    def vec(ne, value=None, std=0.02):
        shape = tuple(reversed(ne))
        a = np.full(shape, value, np.float32) if value is not None else rng.normal(0.0, std, shape)
        return a.astype(np.float32)

    conv_dim = D_INNER + 2 * N_GROUP * D_STATE
    ts = [("token_embd.weight", mat([N_EMBD, n_vocab], 0.5)), ("output_norm.weight", vec([N_EMBD], 1.0)),
          ("output.weight", mat([N_EMBD, n_vocab], 0.5))]
    moe_in = LATENT if variant == "latent" else N_EMBD
    for i, kind in enumerate(KINDS):
        b = f"blk.{i}."
        ts.append((b + "attn_norm.weight", vec([N_EMBD], 1.0)))
        if kind == "mamba":
            dt = np.exp(rng.uniform(np.log(1e-3), np.log(1e-1), N_HEAD_SSM))
            ts += [(b + "ssm_in.weight", mat([N_EMBD, 2 * D_INNER + 2 * N_GROUP * D_STATE + N_HEAD_SSM])),
                   (b + "ssm_conv1d.weight", vec([D_CONV, conv_dim], std=0.2)),
                   (b + "ssm_conv1d.bias", vec([conv_dim], 0.0)),
                   (b + "ssm_dt.bias", (dt + np.log(-np.expm1(-dt))).astype(np.float32)),
                   (b + "ssm_a", -np.arange(1, N_HEAD_SSM + 1, dtype=np.float32).reshape(N_HEAD_SSM, 1)),
                   (b + "ssm_d", vec([1, N_HEAD_SSM], 1.0)),
                   (b + "ssm_norm.weight", vec([D_INNER // N_GROUP, N_GROUP], 1.0)),
                   (b + "ssm_out.weight", mat([D_INNER, N_EMBD]))]
        elif kind == "attn":
            hd = N_EMBD // N_HEAD
            ts += [(b + "attn_q.weight", mat([N_EMBD, N_HEAD * hd])),
                   (b + "attn_k.weight", mat([N_EMBD, N_HEAD_KV * hd])),
                   (b + "attn_v.weight", mat([N_EMBD, N_HEAD_KV * hd])),
                   (b + "attn_output.weight", mat([N_HEAD * hd, N_EMBD]))]
        elif variant == "dense":
            ts += [(b + "ffn_up.weight", mat([N_EMBD, FF_DENSE])), (b + "ffn_down.weight", mat([FF_DENSE, N_EMBD]))]
        else:
            ts += [(b + "ffn_gate_inp.weight", vec([N_EMBD, N_EXPERT], std=0.5)),
                   (b + ("ffn_exp_probs_b.bias" if broken == "probs-name" else "exp_probs_b.bias"),
                    vec([N_EXPERT], 0.0))]
            if variant == "latent":
                ts += [(b + "ffn_latent_down.weight", mat([N_EMBD, LATENT])),
                       (b + "ffn_latent_up.weight", mat([LATENT, N_EMBD]))]
            ts += [(b + "ffn_up_exps.weight", mat([moe_in, FF_EXP, N_EXPERT])),
                   (b + "ffn_down_exps.weight", mat([FF_EXP, moe_in, N_EXPERT])),
                   (b + "ffn_up_shexp.weight", mat([N_EMBD, FF_SHEXP])),
                   (b + "ffn_down_shexp.weight", mat([FF_SHEXP, N_EMBD]))]
    return ts


ELASTIC_AXES = {
    "experts": {"scope": "layer"},
    "moe_ffn": {"scope": "layer", "granularity": 32},
    "sh_ffn": {"scope": "layer", "granularity": 32, "metadata_key": "expert_shared_feed_forward_length"},
    "q_heads": {"scope": "layer", "unit_elems": N_EMBD // N_HEAD, "groups": N_HEAD_KV,
                "metadata_key": "attention.head_count"},
    # Mamba-2 heads, grouped by the B/C (and norm) groups, times the
    # channels of a head (solved from the products: 64). slice sets
    # ssm.inner_size and ssm.time_step_rank from the kept tensors.
    "ssm_heads": {"scope": "layer", "groups": N_GROUP},
    "ssm_ch": {"scope": "layer"},
}
# (tensor, dims outermost first: numpy order, GGUF ne reversed)
ELASTIC_BINDINGS = (
    ("ffn_gate_inp.weight", ["experts", "-"]), ("exp_probs_b.bias", ["experts"]),
    ("ffn_up_exps.weight", ["experts", "moe_ffn", "-"]), ("ffn_down_exps.weight", ["experts", "-", "moe_ffn"]),
    ("ffn_up_shexp.weight", ["sh_ffn", "-"]), ("ffn_down_shexp.weight", ["-", "sh_ffn"]),
    ("attn_q.weight", ["q_heads", "-"]), ("attn_output.weight", ["-", "q_heads"]),
)
MOE_LAYERS = [i for i, k in enumerate(KINDS) if k == "ffn"]
MAMBA_LAYERS = [i for i, k in enumerate(KINDS) if k == "mamba"]
HC = "ssm_heads*ssm_ch"
BC = 2 * N_GROUP * D_STATE  # B and C, never cut
# ssm_in's rows: z, x, B C, dt; conv over x, B C; ssm_norm [n_group][d_inner
# / n_group] taken flat (each group row keeps the same heads).
MAMBA_BINDINGS = (
    {"tensor": "ssm_in.weight", "dims": [{"segments": [HC, HC, BC, "ssm_heads"]}, "-"]},
    {"tensor": "ssm_conv1d.weight", "dims": [{"segments": [HC, BC]}, "-"]},
    {"tensor": "ssm_conv1d.bias", "dims": [{"segments": [HC, BC]}]},
    {"tensor": "ssm_dt.bias", "dims": ["ssm_heads"]},
    {"tensor": "ssm_a", "dims": ["ssm_heads", "-"]},
    {"tensor": "ssm_d", "dims": ["ssm_heads", "-"]},
    {"tensor": "ssm_norm.weight", "dims": [HC], "flat": True},
    {"tensor": "ssm_out.weight", "dims": ["-", HC]},
)


def per_layer(value, layers):
    return [value if i in layers else None for i in range(len(KINDS))]


ATTN = [KINDS.index("attn")]
ELASTIC_BUDGETS = [
    {"name": "experts75", "per_layer": {"experts": per_layer(6, MOE_LAYERS)}},
    {"name": "experts50", "per_layer": {"experts": per_layer(4, MOE_LAYERS)}, "nested_in": "experts75"},
    {"name": "moe-ffn50", "per_layer": {"moe_ffn": per_layer(FF_EXP // 2, MOE_LAYERS)}},
    {"name": "shexp50", "per_layer": {"sh_ffn": per_layer(FF_SHEXP // 2, MOE_LAYERS)}},
    {"name": "heads50", "per_layer": {"q_heads": per_layer(N_HEAD // 2, ATTN)}},
    {"name": "mamba-heads75", "per_layer": {"ssm_heads": per_layer(6, MAMBA_LAYERS)}},
    {"name": "mamba-heads50", "per_layer": {"ssm_heads": per_layer(4, MAMBA_LAYERS)}, "nested_in": "mamba-heads75"},
    {"name": "drop-mamba", "layer_keep": [int(i != 4) for i in range(len(KINDS))]},
    {"name": "drop-moe", "layer_keep": [int(i != 5) for i in range(len(KINDS))]},
    {"name": "bolt50", "per_layer": {"experts": per_layer(4, MOE_LAYERS), "moe_ffn": per_layer(FF_EXP // 2, MOE_LAYERS),
                                     "q_heads": per_layer(N_HEAD // 2, ATTN)}},
    # For the Bolt recipe's iq2_xxs experts (blocks of 256 along the
    # innermost dimension) an expert can lose no width: --budgets mix
    # leaves out the moe_ffn cuts, which the manifest validation refuses.
    {"name": "bolt-mix50", "per_layer": {"experts": per_layer(4, MOE_LAYERS), "sh_ffn": per_layer(FF_SHEXP // 2, MOE_LAYERS),
                                         "q_heads": per_layer(N_HEAD // 2, ATTN)}},
]


def elastic_authoring(seed, budgets="all"):
    """The authoring JSON (a dict); importance scores are deterministic.
    budgets "mix": only those the Bolt recipe's codecs can cut."""
    rng = np.random.default_rng(seed + 1)
    # ssm_heads last: the other axes' scores stay what they were before it.
    units = {"experts": N_EXPERT, "moe_ffn": FF_EXP, "sh_ffn": FF_SHEXP, "q_heads": N_HEAD, "ssm_heads": N_HEAD_SSM}
    layers = {"q_heads": ATTN, "ssm_heads": MAMBA_LAYERS}
    importance = {ax: {str(L): [round(float(x), 4) for x in rng.uniform(0, 1, n)]
                       for L in layers.get(ax, MOE_LAYERS)} for ax, n in units.items()}
    bindings = [{"tensor": "blk.{L}." + t, "dims": d} for t, d in ELASTIC_BINDINGS]
    bindings += [dict(b, tensor="blk.{L}." + b["tensor"]) for b in MAMBA_BINDINGS]
    # The mix keeps the budgets its codecs can cut and no Mamba head cut
    # (its ssm tensors are the recipe's nvfp4).
    mix = [b for b in ELASTIC_BUDGETS if not {"moe_ffn", "ssm_heads"} & set(b.get("per_layer", {}))]
    return {"version": 1, "layers": {"count": len(KINDS), "name_pattern": "blk.{L}."}, "axes": ELASTIC_AXES,
            "bindings": bindings, "importance_method": "random scores (a test model)", "importance": importance,
            "budgets": ELASTIC_BUDGETS if budgets == "all" else mix}


def kept_units(authoring, axis, layer, count):
    """spec/elastic.md §4: descending score, ties by lower index, within groups."""
    scores = authoring["importance"][axis][str(layer)]
    groups = ELASTIC_AXES[axis].get("groups", 1)
    size = len(scores) // groups
    kept = set()
    for g in range(groups):
        idx = sorted(range(g * size, (g + 1) * size), key=lambda u: (-scores[u], u))
        kept.update(idx[:count // groups])
    return kept


def switch_off_ssm_heads(arrays, authoring, counts):
    """Cut Mamba-2 heads: z rows zeroed (y = y * silu(0) = 0), the kept norm
    weights of each group scaled by sqrt(N_kept / N) (see the docstring)."""
    head_dim = D_INNER // N_HEAD_SSM
    per_group = N_HEAD_SSM // N_GROUP
    for layer, count in enumerate(counts):
        if count is None or count == N_HEAD_SSM:
            continue
        kept = kept_units(authoring, "ssm_heads", layer, count)
        ssm_in = arrays[f"blk.{layer}.ssm_in.weight"]  # [z x BC dt rows][n_embd]; z first
        norm = arrays[f"blk.{layer}.ssm_norm.weight"]  # [n_group][d_inner / n_group]
        for h in set(range(N_HEAD_SSM)) - kept:
            ssm_in[h * head_dim:(h + 1) * head_dim] = 0
        for g in range(N_GROUP):
            kept_g = [h for h in kept if h // per_group == g]
            scale = np.float32(np.sqrt(len(kept_g) / per_group))
            for h in kept_g:
                c = (h % per_group) * head_dim
                norm[g, c:c + head_dim] *= scale


def switch_off(tensors, authoring, budget_name):
    """The parent with the units budget_name cuts switched off (see --elastic)."""
    budget = next(b for b in authoring["budgets"] if b["name"] == budget_name)
    arrays = dict(tensors)
    for layer, keep in enumerate(budget.get("layer_keep", [1] * len(KINDS))):
        if keep:
            continue
        for out in ("ssm_out.weight", "attn_output.weight", "ffn_down_exps.weight", "ffn_down_shexp.weight",
                    "ffn_down.weight"):
            if f"blk.{layer}.{out}" in arrays:
                arrays[f"blk.{layer}.{out}"][...] = 0
    for axis, counts in budget.get("per_layer", {}).items():
        if axis == "ssm_heads":
            switch_off_ssm_heads(arrays, authoring, counts)
            continue
        unit = ELASTIC_AXES[axis].get("unit_elems", 1)
        for layer, count in enumerate(counts):
            if count is None:
                continue
            cut = sorted(set(range(len(authoring["importance"][axis][str(layer)])))
                         - kept_units(authoring, axis, layer, count))
            for tensor, dims in ELASTIC_BINDINGS:
                name = f"blk.{layer}.{tensor}"
                if axis not in dims or name not in arrays:
                    continue
                if tensor == "exp_probs_b.bias":
                    arrays[name][cut] = -1e30  # never selected
                    continue
                if tensor == "ffn_gate_inp.weight":
                    continue  # the router's scores of an unselectable expert do not matter
                a, d = arrays[name], dims.index(axis)
                for u in cut:
                    index = [slice(None)] * a.ndim
                    index[d] = slice(u * unit, (u + 1) * unit)
                    a[tuple(index)] = 0
    return list(arrays.items())


def write_gguf(path, keys, tensors, alignment=32):
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(keys)) + b"".join(keys)
    offset, datas = 0, []
    for name, a in tensors:
        a = np.ascontiguousarray(a)
        head += gguf_str(name) + struct.pack("<I", a.ndim)
        head += b"".join(struct.pack("<Q", d) for d in reversed(a.shape))
        head += struct.pack("<IQ", T_F16 if a.dtype == np.float16 else T_F32, offset)
        raw = a.tobytes()
        raw += b"\0" * (-len(raw) % alignment)
        datas.append(raw)
        offset += len(raw)
    head += b"\0" * (-len(head) % alignment)
    with open(path, "wb") as f:
        f.write(head)
        for d in datas:
            f.write(d)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tokenizer")
    ap.add_argument("out")
    ap.add_argument("--variant", choices=("moe", "latent", "dense"), default="moe")
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--break", dest="broken", choices=BREAKS)
    ap.add_argument("--elastic", metavar="OUT.json", help="also write the elastic authoring file")
    ap.add_argument("--budgets", choices=("all", "mix"), default="all",
                    help="the budgets --elastic writes: all, or those the Bolt recipe can cut")
    ap.add_argument("--switch-off", metavar="BUDGET", help="write the parent with BUDGET's cut units switched off")
    a = ap.parse_args()
    tok = read_tokenizer_kvs(a.tokenizer)
    n_vocab = None
    for key, raw in tok:
        if key == "tokenizer.ggml.tokens":
            n_vocab = struct.unpack_from("<Q", raw, 8 + len(key) + 4 + 4)[0]
    if n_vocab is None:
        raise SystemExit(f"{a.tokenizer}: no tokenizer.ggml.tokens")
    arch = "nemotron_h" if a.variant == "dense" else "nemotron_h_moe"
    keys = model_keys(arch, a.variant, n_vocab, a.broken) + [raw for _, raw in tok]
    tensors = model_tensors(a.variant, n_vocab, np.random.default_rng(a.seed), a.broken)
    authoring = elastic_authoring(a.seed, a.budgets)
    if a.elastic:
        with open(a.elastic, "w") as f:
            json.dump(authoring, f, indent=1)
            f.write("\n")
    if a.switch_off:
        if a.variant != "moe":
            raise SystemExit("--switch-off: the elastic test model is the moe variant")
        tensors = switch_off(tensors, authoring, a.switch_off)
    write_gguf(a.out, keys, tensors)


if __name__ == "__main__":
    main()
