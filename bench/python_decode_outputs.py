#!/usr/bin/env python3
"""Decode speed of each block codec to f32, bf16 and f16 output, one thread,
through the C API (bp_decode into a reused buffer, so page faults do not
count), side by side in one process:

    python3 bench/python_decode_outputs.py BOLT_PACK WORK_DIR [--rows 4096 --cols 4096]
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np

import boltpack
from boltpack import _boltpack

CODECS = ["q8_0", "int4-g128", "mxfp4", "nvfp4-ggml", "nvfp4"]
OUTPUTS = [("f32", 4), ("bf16", 2), ("f16", 2)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bolt_pack")
    ap.add_argument("work")
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    src = os.path.join(args.work, "w.safetensors")
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((args.rows, args.cols), dtype=np.float32) * 0.02)
    if _boltpack.has_writer:
        boltpack.save_file({"w": w}, src)
    else:  # a read-only build (the device machine): safetensors writes it
        from safetensors.numpy import save_file
        save_file({"w": w}, src)
    n = args.rows * args.cols
    print(f"{args.rows}x{args.cols} weights, one thread, best of {args.repeat}; G elements/s")
    print("| codec | " + " | ".join(o for o, _ in OUTPUTS) + " |")
    print("|---|" + "---|" * len(OUTPUTS))
    for codec in CODECS:
        path = os.path.join(args.work, f"w-{codec}.bolt")
        subprocess.run([args.bolt_pack, "convert", src, "-o", path, "--codec", f"*={codec}"], check=True,
                       capture_output=True)
        r = _boltpack._Reader(path)
        cells = []
        for out, width in OUTPUTS:
            dst = np.empty(n * width, dtype=np.uint8)
            r.decode_into("w", out, dst, 1)  # warm
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                r.decode_into("w", out, dst, 1)
                best = min(best, time.perf_counter() - t0)
            cells.append(f"{n / best / 1e9:.2f}")
        print(f"| {codec} | " + " | ".join(cells) + " |")
        r.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
