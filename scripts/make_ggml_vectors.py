#!/usr/bin/env python3
"""Writes spec/vectors/ggml/: ggml's own codec vectors as .bolt files for the
conformance kit (spec/conformance.md §7).

    scripts/make_ggml_vectors.py [--bolt-pack build/bolt-pack] [--check]

testdata/conformance/ggml holds, per ggml type, 1024 blocks quantized by ggml
(d99724f) and the floats ggml's own to_float decodes them to. This script
puts each set of blocks, unchanged, into a one-tensor GGUF file (written here,
GGUF v3) and lets `bolt-pack convert` store it as .bolt (the blocks are
passed through as stored, which the expectation's `native` digest checks);
the expectation's `f32` digest is that of ggml's decoded floats, so what a
reader must produce comes from ggml, not from bolt-pack. Names, shapes,
dtypes and codecs are the .bolt file's own (bolt-pack's listing of it).
f16 and bf16 targets have no expectation here (ggml gives floats only).
--check compares instead of writing (exit 1 on any difference).
"""

import argparse
import hashlib
import json
import os
import shlex
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vector_files  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "testdata", "conformance", "ggml")

# (file prefix, GGUF type id, elements per block, bytes per block)
TYPES = (("q8_0", 8, 32, 34), ("mxfp4", 39, 32, 17), ("nvfp4", 40, 64, 36), ("iq2_xxs", 16, 256, 66),
         ("f16", 1, 1, 2), ("bf16", 30, 1, 2))


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def write_gguf(path, name, ggml_type, shape, data):
    """One tensor, no metadata; GGUF lists dimensions innermost first."""
    info = gguf_string(name) + struct.pack("<I", len(shape))
    info += b"".join(struct.pack("<Q", d) for d in reversed(shape)) + struct.pack("<IQ", ggml_type, 0)
    head = b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + info
    head += b"\0" * (-len(head) % 32)  # general.alignment's default
    with open(path, "wb") as f:
        f.write(head + data)


def digest(b):
    return {"bytes": len(b), "sha256": hashlib.sha256(b).hexdigest()}


def make(bolt_pack, prefix, ggml_type, block_elems, block_bytes, tmp):
    with open(os.path.join(SRC, prefix + ".decode_input.bin"), "rb") as f:
        blocks = f.read()
    with open(os.path.join(SRC, prefix + ".decode_output.f32"), "rb") as f:
        floats = f.read()
    n_blocks = len(blocks) // block_bytes
    if n_blocks * block_bytes != len(blocks) or len(floats) != 4 * n_blocks * block_elems:
        sys.exit("%s: sizes do not match the type" % prefix)
    shape = [8, n_blocks * block_elems // 8]
    gguf, bolt = os.path.join(tmp, prefix + ".gguf"), os.path.join(tmp, prefix + ".bolt")
    write_gguf(gguf, "ggml_" + prefix, ggml_type, shape, blocks)
    p = subprocess.run(bolt_pack + ["convert", gguf, "-o", bolt, "--no-fsync"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s: bolt-pack convert failed: %s" % (prefix, p.stderr))
    listing = subprocess.run(bolt_pack + ["conformance-impl", "list", bolt], check=True, stdout=subprocess.PIPE)
    tensors = [json.loads(line) for line in listing.stdout.decode().splitlines()]
    if len(tensors) != 1 or tensors[0]["shape"] != shape:
        sys.exit("%s: bolt-pack lists %s" % (prefix, tensors))
    t = tensors[0]
    t.update(streams=[], decode={"native": digest(blocks), "f32": digest(floats)})
    expected = {"source": "ggml d99724f, testdata/conformance/ggml/%s.*" % prefix, "shards": 1, "tensors": [t]}
    with open(bolt, "rb") as f:
        return f.read(), (json.dumps(expected, indent=2) + "\n").encode()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bolt-pack", default=os.path.join(ROOT, "build", "bolt-pack"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    out = os.path.join(ROOT, "spec", "vectors", "ggml")
    files = {}
    with tempfile.TemporaryDirectory() as tmp:
        for prefix, ggml_type, block_elems, block_bytes in TYPES:
            bolt, expected = make(shlex.split(args.bolt_pack), prefix, ggml_type, block_elems, block_bytes, tmp)
            files[prefix + ".bolt"], files[prefix + ".expected.json"] = bolt, expected
    # A .bolt file carries a fresh file id: --check compares its expectation only.
    differ = vector_files.sync(out, "spec/vectors/ggml", files, args.check, lambda name: name.endswith(".json"))
    print("%d types %s" % (len(TYPES), "checked, %d differ" % differ if args.check else "written"))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
