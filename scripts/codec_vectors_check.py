#!/usr/bin/env python3
"""Recomputes the expectations of spec/vectors/codecs from the spec alone.

    scripts/codec_vectors_check.py [--vectors DIR] [--ggml DIR]

make_codec_vectors takes its expected decodes from the library; this script
decodes the same stored streams with numpy, from spec/codecs.md and
spec/codecs-bf16-exp.md / codecs-bf16-spec.md, and checks every f32 (and
bf16-mx / bf16-spec draft bf16) expectation against it, so that a decoder
bug cannot hide in the vectors. Its dequantizers are first checked bit for
bit on ggml's own vectors (testdata/conformance/ggml: blocks quantized by
ggml and the floats ggml decodes them to). Streams are read at the offsets
the expectation states (the codec vectors are stored uncompressed).
Needs numpy. Exit status 1 on any mismatch.
"""

import argparse
import glob
import hashlib
import json
import os
import sys

import numpy as np

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, 0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float32)
E2M1[8] = 0.0  # code 8 decodes as +0 (codecs.md §0)
KVALUES_MXFP4 = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=np.float32)


def f16_to_f32(h):
    """binary16 bits -> f32 bits, NaN payload kept and quieted (container.md §10.5)."""
    h = h.astype(np.uint32)
    s, e, m = (h >> 15) << 31, (h >> 10) & 31, h & 0x3FF
    out = np.where(e == 31, s | 0x7F800000 | (m << 13) | np.where(m != 0, 0x00400000, 0), 0)
    normal = (e != 0) & (e != 31)
    out = np.where(normal, s | ((e + 112) << 23) | (m << 13), out)
    sub = (e == 0) & (m != 0)
    subval = (m.astype(np.float64) * 2.0 ** -24).astype(np.float32).view(np.uint32)
    out = np.where(sub, s | subval, out)
    out = np.where((e == 0) & (m == 0), s, out)
    return out.astype(np.uint32).view(np.float32)


def mul(a, b):
    """x86 SSE products: NaN * x keeps the NaN (quieted); inf * 0 is the default NaN 0xFFC00000."""
    with np.errstate(all="ignore"):
        return (a.astype(np.float32) * b.astype(np.float32)).astype(np.float32)


def q8_0(streams, n):
    b = np.frombuffer(streams[0], np.uint8).reshape(-1, 34)
    d = f16_to_f32(b[:, 0:2].copy().view(np.uint16)[:, 0])
    q = b[:, 2:].view(np.int8).astype(np.float32)
    return mul(q, d[:, None]).reshape(-1)


def int4(streams, n):
    v = np.frombuffer(streams[0], np.uint8).reshape(-1, 64)
    d = f16_to_f32(np.frombuffer(streams[1], np.uint16))
    q = np.stack([v & 15, v >> 4], axis=2).reshape(-1, 128).astype(np.int32) - 8
    return mul(q.astype(np.float32), d[:, None]).reshape(-1)


def mxfp4(streams, n):
    b = np.frombuffer(streams[0], np.uint8).reshape(-1, 17)
    e = b[:, 0].astype(np.uint32)
    d = np.where(e < 2, np.uint32(0x00200000) << e, (e - 1) << 23).astype(np.uint32).view(np.float32)
    qs = b[:, 1:]
    codes = np.concatenate([qs & 15, qs >> 4], axis=1)
    return mul(KVALUES_MXFP4[codes], d[:, None]).reshape(-1)


def ue4m3(x):
    x = x.astype(np.int64)
    e, m = (x >> 3) & 15, x & 7
    v = np.where(e == 0, m * 2.0 ** -9, (1 + m / 8.0) * 2.0 ** (e - 7))
    v = np.where((x == 0) | (x == 0x7F), 0.0, v)
    return (v * 0.5).astype(np.float32)


def nvfp4_ggml(streams, n):
    b = np.frombuffer(streams[0], np.uint8).reshape(-1, 36)
    d = ue4m3(b[:, 0:4])
    qs = b[:, 4:].reshape(-1, 4, 8)
    codes = np.concatenate([qs & 15, qs >> 4], axis=2)  # [blocks, 4 sub-blocks, 16]
    return mul(KVALUES_MXFP4[codes], d[:, :, None]).reshape(-1)


def e4m3fn(x):
    """float8_e4m3fn bits -> f32: 0x7F / 0xFF NaN (sign honoured), no infinities."""
    x = x.astype(np.int64)
    s, e, m = x >> 7, (x >> 3) & 15, x & 7
    v = np.where(e == 0, m * 2.0 ** -9, (1 + m / 8.0) * 2.0 ** (e - 7)).astype(np.float32)
    v = np.where(s == 1, -v, v).astype(np.float32)
    nan = (x & 0x7F) == 0x7F
    bits = np.where(nan, np.where(s == 1, 0xFFC00000, 0x7FC00000), v.view(np.uint32)).astype(np.uint32)
    return bits.view(np.float32)


def nvfp4(streams, n, tensor_scale):
    v = np.frombuffer(streams[0], np.uint8).reshape(-1, 8)
    codes = np.stack([v & 15, v >> 4], axis=2).reshape(-1, 16)
    scale = mul(e4m3fn(np.frombuffer(streams[1], np.uint8)), np.float32(tensor_scale))
    return mul(E2M1[codes], scale[:, None]).reshape(-1)


def f32_to_bf16(u):
    """f32 bits -> bf16 bits, round to nearest even, NaN quieted (container.md §10.5)."""
    u = u.astype(np.uint64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return np.where(nan, (u >> 16) | 0x40, r).astype(np.uint16)


def bf16_mx(streams, n):
    """codecs-bf16-exp.md §6 (X-6.1, X-6.2): native bf16 bits."""
    E = np.frombuffer(streams[0], np.uint8).astype(np.int64)
    off = np.frombuffer(streams[1], np.uint8).reshape(-1, 12)
    word = np.zeros(len(E), dtype=object)
    for k in range(12):
        word = word + (off[:, k].astype(object) << (8 * k))
    t = np.array([[(int(w) >> (3 * j)) & 7 for j in range(32)] for w in word], dtype=np.int64).reshape(-1)[:n]
    Eb = np.repeat(E, 32)[:n]
    sm = np.frombuffer(streams[2], np.uint8).astype(np.int64)
    s, m = sm >> 7, sm & 0x7F
    exact = (t <= 6) & (Eb - t >= 1)
    out = np.where(exact, (s << 15) | ((Eb - t) << 7) | m, 0)
    val = np.where(t <= 6, (128 + m) * np.exp2((Eb - t - 134).astype(np.float64)),
                   m * np.exp2((Eb - 140).astype(np.float64)))
    with np.errstate(all="ignore"):  # the exact lanes' values may overflow f32; np.where drops them
        rounded = f32_to_bf16(val.astype(np.float32).view(np.uint32)).astype(np.int64) | (s << 15)
    return np.where(exact, out, rounded).astype(np.uint16)


def iq2_grid(folder):
    """kIq2xxsGrid from ggml's table (codecs-iq2_xxs.md "Tables"): [256, 8] magnitudes."""
    path = os.path.join(folder, "tables", "iq2xxs_grid.txt")
    with open(path, encoding="ascii") as f:
        words = [int(l, 16) for l in f if l.startswith("0x")]
    return np.array([[(w >> (8 * j)) & 0xFF for j in range(8)] for w in words], dtype=np.float32)


def iq2_xxs(streams, n, grid):
    """codecs-iq2_xxs.md "Decode rule", per block of 256."""
    b = np.frombuffer(streams[0], np.uint8).reshape(-1, 66)
    d = f16_to_f32(b[:, 0:2].copy().view(np.uint16)[:, 0])
    q = b[:, 2:].reshape(-1, 8, 8)  # [blocks, sub-block, 8 bytes]
    aux1 = q[:, :, 4:8].copy().view("<u4")[:, :, 0].astype(np.uint32)
    scale = (aux1 >> 28).astype(np.float32)
    with np.errstate(all="ignore"):
        db = ((d[:, None] * (np.float32(0.5) + scale)).astype(np.float32) * np.float32(0.25)).astype(np.float32)
    signs = np.array([i | (bin(i).count("1") & 1) << 7 for i in range(128)], dtype=np.uint32)
    out = np.zeros((b.shape[0], 8, 4, 8), dtype=np.float32)
    for l in range(4):
        g = grid[q[:, :, l]]  # [blocks, 8, 8]
        sgn = signs[(aux1 >> (7 * l)) & 127]
        neg = (sgn[:, :, None] >> np.arange(8, dtype=np.uint32)) & 1
        out[:, :, l, :] = mul(db[:, :, None], np.where(neg == 1, -g, g))
    return out.reshape(-1)


def param(t, key):
    for p in t["codec_params"]:
        if p["key"] == key:
            return p["value"]
    return None


def read_streams(data, t):
    return [data[s["offset"]:s["offset"] + s["length"]] for s in t["streams"]]


def expected_bytes_digest(d):
    if "hex" in d:
        b = bytes.fromhex(d["hex"])
        return len(b), hashlib.sha256(b).hexdigest(), b
    return d["bytes"], d["sha256"], None


def spec_draft(full, spec_stream, t):
    """codecs-bf16-spec.md §5 draft view from the full decode and the bitmaps."""
    rows = t["shape"][0] if t["shape"] else 1
    n = len(full)
    cols = t["shape"][-1] if len(t["shape"]) >= 2 else 1
    k = param(t, "kept_per_row")
    mb = param(t, "mbits")
    chunks = t["streams"][0]["chunks"] or [{"stored_offset": 0, "first_row": 0, "row_count": rows}]
    kept = np.zeros(n, dtype=bool)
    row_elems = n // rows if rows else 0
    for c in chunks:
        m = c["row_count"] * row_elems
        base = c["first_row"] * row_elems
        if k == cols:
            kept[base:base + m] = True
            continue
        bm = np.frombuffer(spec_stream[c["stored_offset"]:c["stored_offset"] + (m + 7) // 8], np.uint8)
        kept[base:base + m] = np.unpackbits(bm, bitorder="little")[:m].astype(bool)
    f = full.astype(np.uint32)
    e = (f >> 7) & 0xFF
    low_mask = (1 << (7 - mb)) - 1
    fill = np.where((mb < 7) & (e >= 1) & (e <= 254), (1 << (6 - mb)) if mb < 7 else 0, 0)
    d = (f & ~np.uint32(low_mask)) | fill
    return np.where(kept, d, 0).astype(np.uint16)


def check_file(path, report, grid):
    with open(path[:-len(".bolt")] + ".expected.json", encoding="utf-8") as f:
        e = json.load(f)
    with open(path, "rb") as f:
        data = f.read()
    for t in e["tensors"]:
        n = int(np.prod(t["shape"])) if t["shape"] else 1
        streams = read_streams(data, t)
        codec, got, target = t["codec"], None, "f32"
        if codec == "q8_0":
            got = q8_0(streams, n)
        elif codec == "int4-g128":
            got = int4(streams, n)
        elif codec == "mxfp4":
            got = mxfp4(streams, n)
        elif codec == "nvfp4-ggml":
            got = nvfp4_ggml(streams, n)
        elif codec == "nvfp4":
            got = nvfp4(streams, n, param(t, "tensor_scale"))
        elif codec == "iq2_xxs" and grid is not None:
            got = iq2_xxs(streams, n, grid)
        elif codec == "bf16-mx":
            got, target = bf16_mx(streams, n), "native"
        elif codec == "bf16-spec":
            _, _, full = expected_bytes_digest(t["decode"]["native"])
            if full is None or "draft" not in t.get("decode_views", {}):
                continue
            got, target = spec_draft(np.frombuffer(full, np.uint16), streams[0], t), "native"
            d = t["decode_views"]["draft"][target]
            report(path, t["name"] + " (draft)", got.tobytes(), d)
            continue
        if got is None:
            continue
        report(path, t["name"], np.ascontiguousarray(got).tobytes(), t["decode"][target])


def check_ggml(folder, fail, grid):
    """Our dequantizers against ggml's decodes of ggml's blocks."""
    cases = {"q8_0": q8_0, "mxfp4": mxfp4, "nvfp4": nvfp4_ggml}
    if grid is not None:
        cases["iq2_xxs"] = lambda streams, n: iq2_xxs(streams, n, grid)
    checked = 0
    for name, fn in cases.items():
        blocks = os.path.join(folder, name + ".decode_input.bin")
        floats = os.path.join(folder, name + ".decode_output.f32")
        if not (os.path.exists(blocks) and os.path.exists(floats)):
            continue
        with open(blocks, "rb") as f:
            b = f.read()
        want = np.fromfile(floats, dtype=np.uint32)
        got = fn([b], len(want)).view(np.uint32)
        if not np.array_equal(got, want):
            fail("ggml %s: %d of %d floats differ" % (name, int(np.sum(got != want)), len(want)))
        checked += 1
    return checked


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vectors", default=os.path.join(root, "spec", "vectors", "codecs"))
    ap.add_argument("--ggml", default=os.path.join(root, "testdata", "conformance", "ggml"))
    args = ap.parse_args()
    failures, counts = [], {"checked": 0}

    def fail(msg):
        failures.append(msg)
        print("FAIL " + msg)

    def report(path, name, got, d):
        n, digest, _ = expected_bytes_digest(d)
        counts["checked"] += 1
        if len(got) != n or hashlib.sha256(got).hexdigest() != digest:
            fail("%s: %s: numpy decode differs from the expectation" % (os.path.basename(path), name))

    grid = iq2_grid(args.ggml) if os.path.exists(os.path.join(args.ggml, "tables", "iq2xxs_grid.txt")) else None
    ggml = check_ggml(args.ggml, fail, grid)
    for path in sorted(glob.glob(os.path.join(args.vectors, "*.bolt"))):
        check_file(path, report, grid)
    print("codec_vectors_check: %d ggml sets, %d tensor decodes recomputed, %d failed"
          % (ggml, counts["checked"], len(failures)))
    return 1 if failures or counts["checked"] == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
