#!/usr/bin/env python3
"""Every core busy (issue 19 item 1): convert, .bolt -> safetensors, verify and
the library's whole-model Decode, on 1 thread and on all, side by side in one
run, with each command's peak RSS.

    bench/core_scaling.py [--bolt-pack build/bolt-pack] [--decode-bench build/bench/model_decode_bench]
                          [--dir /tmp/core_scaling] [--tensors 16] [--rows 8192] [--cols 16384] [--threads N]

Makes a bf16 safetensors model of TENSORS tensors ROWSxCOLS (N(0, 0.02)
weights; 16 x 8192 x 16384 is 4.3 GB), and a quarter-size one for iq2_xxs
(its encoder is 100x slower than q8_0's), runs every case once with the page
cache warm and --no-fsync, and prints GB/s of input (convert) or of output
(decode), the speedup, and peak RSS (from wait4).
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import time


def make_model(path, tensors, rows, cols):
    """In a child process: numpy's memory must not count in the peak RSS of
    the commands run after (a child's maxrss starts at its parent's)."""
    if os.path.exists(path) and os.path.getsize(path) > tensors * rows * cols * 2:
        return
    subprocess.run([sys.executable, __file__, "--make", path, str(tensors), str(rows), str(cols)], check=True)


def make_model_here(path, tensors, rows, cols):
    import numpy as np
    hdr, off, size = {}, 0, rows * cols * 2
    for i in range(tensors):
        hdr[f"model.layers.{i}.mlp.weight"] = {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [off, off + size]}
        off += size
    h = json.dumps(hdr).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    rng = np.random.default_rng(1)
    base = (rng.standard_normal(rows * cols, dtype=np.float32) * np.float32(0.02)).view(np.uint32)
    base = (base >> 16).astype(np.uint16)  # bf16, truncated
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for i in range(tensors):  # each tensor its own arrangement of the same values
            np.roll(base, i * 1000003).tofile(f)
    os.replace(path + ".tmp", path)


def run(cmd, env):
    """(seconds, peak RSS MiB) of one command; exits on failure."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    sec = time.perf_counter() - t0
    if status != 0:
        sys.exit(f"failed ({status}): {' '.join(cmd)}\n{out.decode(errors='replace')}")
    return sec, ru.ru_maxrss / 1024, out.decode(errors="replace")


def write_ceiling(src, dst, nbytes):
    """In a child process (its maxrss would become the commands' after it),
    the GB/s at which this machine's page cache takes a file's bytes from
    memory (one thread, 64 MiB writes): the bound on any convert that writes
    its output, since a file's buffered writes are serialized by its inode
    lock; on the device machine 4, 8 and 16 threads wrote no faster."""
    out = subprocess.run([sys.executable, __file__, "--ceiling", src, dst, str(nbytes)], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return float(out.split()[-1])


def write_ceiling_here(src, dst, nbytes):
    import mmap
    best = 0.0
    with open(src, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        view = memoryview(m)[:nbytes]
        for _ in range(3):
            t0 = time.perf_counter()
            with open(dst, "wb") as o:
                for at in range(0, nbytes, 64 << 20):
                    o.write(view[at:at + (64 << 20)])
            best = max(best, nbytes / (time.perf_counter() - t0) / 1e9)
            os.remove(dst)
        view.release()
    return best


def warm(path):
    with open(path, "rb") as f:
        while f.read(64 << 20):
            pass


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--make":
        make_model_here(sys.argv[2], *map(int, sys.argv[3:]))
        return 0
    if len(sys.argv) == 5 and sys.argv[1] == "--ceiling":
        print(write_ceiling_here(sys.argv[2], sys.argv[3], int(sys.argv[4])))
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--bolt-pack", default="build/bolt-pack")
    ap.add_argument("--decode-bench", default="build/bench/model_decode_bench")
    ap.add_argument("--dir", default="/tmp/core_scaling")
    ap.add_argument("--tensors", type=int, default=16)
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--cols", type=int, default=16384)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--cases", default="write-ceiling,q8_0,nvfp4,bf16-huffman,iq2_xxs,to-safetensors,verify,decode")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    env = dict(os.environ)
    big = os.path.join(a.dir, "model.safetensors")
    small = os.path.join(a.dir, "small.safetensors")
    t0 = time.perf_counter()
    make_model(big, a.tensors, a.rows, a.cols)
    make_model(small, max(1, a.tensors // 4), a.rows // 2, a.cols // 2)
    print(f"models made in {time.perf_counter() - t0:.1f} s; {os.cpu_count()} CPUs", flush=True)
    cases = a.cases.split(",")
    rows = []
    huff = os.path.join(a.dir, "huff.bolt")

    def case(name, make_cmd, nbytes, what, keep=None):
        res = []
        for th in (1, a.threads):
            out = make_cmd(th)
            sec, rss, text = run(out[0], env)
            if out[1] and out[1] != keep:
                os.remove(out[1])
            gbs = nbytes / sec / 1e9
            if out[2] is not None:  # the command's own timing (decode bench)
                gbs = out[2](text)
                sec = nbytes / gbs / 1e9
            res.append((sec, gbs, rss))
        rows.append((name, what, res))
        (s1, g1, r1), (sn, gn, rn) = res
        print(f"{name:<28} {what:<10} 1 thread {g1:7.2f} GB/s {r1:6.0f} MiB | {a.threads} threads {gn:7.2f} GB/s "
              f"{rn:6.0f} MiB | {gn / g1:5.1f}x", flush=True)

    def convert(src, codec, out):
        return lambda th: ([a.bolt_pack, "convert", src, "-o", out, "--codec", f"*={codec}", "--threads", str(th),
                            "--no-fsync"], out, None)

    warm(big)
    big_bytes = os.path.getsize(big)
    if "write-ceiling" in cases:
        gbs = write_ceiling(big, os.path.join(a.dir, "ceiling.bin"), big_bytes)
        print(f"{'page-cache write ceiling':<28} {'written':<10} 1 thread {gbs:7.2f} GB/s (best of 3; what a convert's "
              f"output can reach)", flush=True)
    for codec in ("q8_0", "nvfp4", "bf16-huffman"):
        if codec in cases:
            case(f"convert bf16 -> {codec}", convert(big, codec, os.path.join(a.dir, f"{codec}.bolt")), big_bytes,
                 "input")
    if "iq2_xxs" in cases:
        warm(small)
        w = os.path.getsize(small) // 2
        case("convert bf16 -> iq2_xxs", convert(small, "iq2_xxs", os.path.join(a.dir, "iq2.bolt")), w * 2, "input")
        r = rows[-1][2]
        print(f"  iq2_xxs: {w / r[0][0] / 1e6:.1f} M weights/s on 1 thread, {w / r[1][0] / 1e6:.1f} on {a.threads}")
    if any(c in cases for c in ("to-safetensors", "verify", "decode")):
        if not os.path.exists(huff):
            run([a.bolt_pack, "convert", big, "-o", huff, "--codec", "*=bf16-huffman", "--no-fsync"], env)
        warm(huff)
    out_bytes = a.tensors * a.rows * a.cols * 2
    if "to-safetensors" in cases:
        back = os.path.join(a.dir, "back.safetensors")
        case("bf16-huffman -> safetensors", lambda th: ([a.bolt_pack, "convert", huff, "-o", back, "--threads",
                                                         str(th), "--no-fsync"], back, None), out_bytes, "output")
    if "verify" in cases:
        case("verify bf16-huffman", lambda th: ([a.bolt_pack, "verify", huff, "--threads", str(th)], None, None),
             out_bytes, "decoded")
    if "decode" in cases and os.path.exists(a.decode_bench):
        parse = lambda text: float(text.strip().split()[-2])
        case("library Decode, whole model", lambda th: ([a.decode_bench, huff, str(th)], None, parse), out_bytes,
             "output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
