#!/usr/bin/env python3
"""The files boltpack_cuda_check reads on the device machine, made here (the
device has no encoder and no Debian packages):

  conformance.gguf  the ggml-produced conformance blocks of testdata/ as GGUF
                    tensors (bf16, q8_0, mxfp4, nvfp4, iq2_xxs), which the CPU
                    decoders reproduce bit for bit (tests/), so the GPU must too;
  special.gguf      every scale a block can hold: all 65536 bf16 patterns, all
                    65536 f16 scales of q8_0 and iq2_xxs blocks, all 256 E8M0 and
                    UE4M3 scales of mxfp4 and nvfp4 blocks (NaN, inf, subnormal,
                    -0 among them), with random quant bytes;
  CODEC.bolt        N(0, 0.02) weights and TinyStories' real ones tiled to
                    1024x1024, encoded by the CLI for each codec with kernels;
  layout.bolt       a bf16 tensor of 12 columns, which bp_cuda_upload must
                    refuse before it allocates device memory.

usage: make_inputs.py BOLT_PACK_CLI OUT_DIR
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONF = os.path.join(ROOT, "testdata", "conformance", "ggml")
TINY = os.path.join(ROOT, "testdata", "tinystories-656k", "TinyStories-656K.f16.gguf")

# ggml type ids and (elements, bytes) per block.
GGML = {"bf16": (30, 1, 2), "q8_0": (8, 32, 34), "mxfp4": (39, 32, 17), "nvfp4": (40, 64, 36),
        "iq2_xxs": (16, 256, 66)}
ALIGN = 32


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def write_gguf(path, tensors):
    """tensors: [(name, ggml codec key, rows, cols, bytes)]; GGUF v3, no metadata."""
    infos, data = b"", b""
    for name, codec, rows, cols, raw in tensors:
        type_id, elems, block_bytes = GGML[codec]
        assert cols % elems == 0 and len(raw) == rows * cols // elems * block_bytes, name
        data += b"\0" * (-len(data) % ALIGN)
        infos += gguf_string(name) + struct.pack("<IQQIQ", 2, cols, rows, type_id, len(data))
        data += raw
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 0) + infos
    with open(path, "wb") as f:
        f.write(head + b"\0" * (-len(head) % ALIGN) + data)


def conformance_tensors():
    out = []
    for codec in ("bf16", "q8_0", "mxfp4", "nvfp4", "iq2_xxs"):
        raw = open(os.path.join(CONF, codec + ".decode_input.bin"), "rb").read()
        _, elems, block_bytes = GGML[codec]
        count = len(raw) // block_bytes * elems
        cols = max(elems, 8) * 4
        out.append(("conformance." + codec, codec, count // cols, cols, raw))
    return out


def special_tensors(rng):
    def blocks(count, block_bytes, scale_at, scale_bytes, scales):
        b = rng.integers(0, 256, size=(count, block_bytes), dtype=np.uint8)
        b[:, scale_at:scale_at + scale_bytes] = scales.reshape(count, scale_bytes)
        return b.tobytes()

    every_f16 = np.arange(65536, dtype=np.uint16).view(np.uint8)
    every_byte = np.arange(256, dtype=np.uint8)
    return [
        ("special.bf16", "bf16", 256, 256, np.arange(65536, dtype=np.uint16).tobytes()),
        # q8_0: d (f16) then 32 int8.
        ("special.q8_0", "q8_0", 1024, 2048, blocks(65536, 34, 0, 2, every_f16)),
        # mxfp4: e (E8M0) then 16 bytes of nibbles; each exponent 16 times.
        ("special.mxfp4", "mxfp4", 128, 1024, blocks(4096, 17, 0, 1, np.repeat(every_byte, 16))),
        # nvfp4 (ggml): 4 UE4M3 scales then 32 bytes of nibbles; every byte 64 times.
        ("special.nvfp4", "nvfp4", 256, 1024, blocks(4096, 36, 0, 4, np.tile(every_byte, 64))),
        # iq2_xxs: d (f16) then 64 bytes of grid indices and signs.
        ("special.iq2_xxs", "iq2_xxs", 4096, 4096, blocks(65536, 66, 0, 2, every_f16)),
    ]


def write_safetensors(path, tensors):
    header, data = {}, b""
    for name, array in tensors.items():
        raw = array.astype(np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def tinystories_tile(cli, out):
    """TinyStories' ffn_up of block 0 (real weights), tiled to 1024x1024."""
    path = os.path.join(out, "tiny.safetensors")
    subprocess.run([cli, "convert", TINY, "-o", path, "--codec", "*=f32"], check=True, stdout=subprocess.DEVNULL)
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        meta = header["blk.0.ffn_up.weight"]
        a, b = meta["data_offsets"]
        f.seek(base + a)
        w = np.frombuffer(f.read(b - a), dtype=np.float32).reshape(meta["shape"])
    os.remove(path)
    reps = (-(-1024 // w.shape[0]), -(-1024 // w.shape[1]))
    return np.tile(w, reps)[:1024, :1024]


def codec_files(cli, out, rng):
    src = os.path.join(out, "weights.safetensors")
    write_safetensors(src, {"normal.weight": rng.normal(0, 0.02, size=(1024, 1024)),
                            "real.weight": tinystories_tile(cli, out),
                            "wide.weight": rng.normal(0, 0.02, size=(64, 4096))})
    for codec in ("bf16", "q8_0", "mxfp4", "nvfp4", "int4-g128", "iq2_xxs", "bf16-huffman:from_f32=true",
                  "bf16-unary:from_f32=true", "bf16-mx:from_f32=true"):
        name = codec.split(":")[0]
        subprocess.run([cli, "convert", src, "-o", os.path.join(out, name + ".bolt"), "--codec", "*=" + codec],
                       check=True, stdout=subprocess.DEVNULL)
    # A valid file the kernels cannot take: bf16 with 12 columns (not a
    # multiple of 8); bp_cuda_upload must refuse it before allocating.
    write_safetensors(src, {"narrow.weight": rng.normal(0, 0.02, size=(16, 12))})
    subprocess.run([cli, "convert", src, "-o", os.path.join(out, "layout.bolt"), "--codec", "*=bf16"],
                   check=True, stdout=subprocess.DEVNULL)
    # The entropy codecs take any shape: odd columns, one lane, a vector;
    # and every bf16 pattern (special.gguf's special.bf16: NaN payloads,
    # infinities, subnormals) through each of them.
    write_safetensors(src, {"odd.weight": rng.normal(0, 0.02, size=(37, 300)),
                            "vec.weight": rng.normal(0, 1, size=(1000,)),
                            "tall.weight": rng.normal(0, 0.02, size=(3000, 88))})
    for codec in ("bf16-huffman", "bf16-unary"):
        subprocess.run([cli, "convert", src, "-o", os.path.join(out, "odd-" + codec + ".bolt"), "--codec",
                        "*=" + codec + ":from_f32=true"], check=True, stdout=subprocess.DEVNULL)
    for codec in ("bf16-huffman", "bf16-unary", "bf16-mx"):
        subprocess.run([cli, "convert", os.path.join(out, "special.gguf"), "-o",
                        os.path.join(out, "special-" + codec + ".bolt"), "--codec", "special.bf16=" + codec],
                       check=True, stdout=subprocess.DEVNULL)
    os.remove(src)


def main():
    cli, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(18)
    write_gguf(os.path.join(out, "conformance.gguf"), conformance_tensors())
    write_gguf(os.path.join(out, "special.gguf"), special_tensors(rng))
    codec_files(cli, out, rng)
    print("\n".join(sorted(os.listdir(out))))


if __name__ == "__main__":
    main()
