#!/usr/bin/env python3
"""Side by side: open a bf16 model and get_tensor every tensor with
safetensors and with boltpack (the same file converted to .bolt: raw bf16
and bf16-huffman), in one process, warm page cache, best of --repeat; then
get_slice of 1% of the rows, with the file's pages dropped first and the
pages it brought in counted (mincore).

    python3 bench/python_get_tensor.py BOLT_PACK WORK_DIR [--gib 2] [--threads 1]

Needs numpy, torch and the boltpack module on sys.path; without the
safetensors package the model is written by hand and its rows are left out.
"""

import argparse
import ctypes
import mmap
import os
import subprocess
import sys
import time

import numpy as np
import torch

import boltpack


def have_safetensors():
    try:
        import safetensors  # noqa: F401
    except ImportError:
        return False
    return True


def write_safetensors(tensors, path):
    """safetensors' layout by hand (an 8-byte header length, the JSON header,
    the data): for machines without the package, e.g. the build VM."""
    import json
    import struct

    header, offset = {}, 0
    for name, t in tensors.items():
        n = t.numel() * 2
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for t in tensors.values():
            f.write(t.view(torch.int16).numpy().tobytes())


def make_model(path, gib, rows=4096, cols=4096):
    """Random bf16 weights shaped like an LLM's (normal, std 0.02)."""
    count = max(1, int(gib * 2**30 // (rows * cols * 2)))
    g = torch.Generator().manual_seed(0)
    tensors = {f"layers.{i}.w": (torch.randn(rows, cols, generator=g) * 0.02).to(torch.bfloat16)
               for i in range(count)}
    if have_safetensors():
        from safetensors.torch import save_file

        save_file(tensors, path)
    else:
        write_safetensors(tensors, path)
    return sum(t.numel() * 2 for t in tensors.values())


def drop_pages(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def resident_fraction(path):
    """Fraction of the file's pages in the page cache (mincore), or None."""
    libc = ctypes.CDLL(None, use_errno=True)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ)
        try:
            page = mmap.PAGESIZE
            n = (size + page - 1) // page
            vec = (ctypes.c_ubyte * n)()
            arr = np.frombuffer(m, dtype=np.uint8)  # for the mapping's address
            rc = libc.mincore(ctypes.c_void_p(arr.ctypes.data), ctypes.c_size_t(size), vec)
            del arr
            if rc != 0:
                return None
            return float((np.frombuffer(vec, dtype=np.uint8) & 1).sum()) / n
        finally:
            m.close()


def time_all(load, repeat):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        n = load()
        best = min(best, time.perf_counter() - t0)
    return best, n


def safetensors_all(path, device=None):
    def load():
        from safetensors import safe_open

        kept = {}  # every tensor stays alive, as a model's state dict does
        with safe_open(path, framework="pt") as f:
            for k in f.keys():
                t = f.get_tensor(k)
                kept[k] = t.to(device) if device else t
        if device:
            torch.cuda.synchronize()
        return sum(t.numel() for t in kept.values())

    return load


def boltpack_all(path, threads, framework="pt", device=None, check=True, open_device="cpu", keep=True):
    """keep=False drops each tensor before the next: its pooled buffer is
    reused, so the time is the decode's alone, without fresh pages."""

    def load():
        kept = {}  # every tensor stays alive, as a model's state dict does
        n = 0
        with boltpack.safe_open(path, framework=framework, device=open_device, threads=threads, check=check) as f:
            for k in f.keys():
                t = f.get_tensor(k)
                if keep:
                    kept[k] = t.to(device) if device else t
                else:
                    n += t.numel() if framework == "pt" else t.size
                    del t
        if device or open_device != "cpu":
            torch.cuda.synchronize()
        return n + sum(t.numel() if framework == "pt" else t.size for t in kept.values())

    return load


def first_touch(nbytes):
    """What fresh memory costs one core: the kernel zeroes every page as it
    is first written (the cost any loader that does not map the file pays)."""

    def load():
        a = np.empty(nbytes, dtype=np.uint8)
        a[::4096] = 1  # one write per 4 KiB page faults it in
        return nbytes // 2

    return load


def thp_settings():
    out = []
    for name in ("enabled", "defrag"):
        try:
            with open(f"/sys/kernel/mm/transparent_hugepage/{name}") as f:
                out.append(f"{name}: {f.read().strip()}")
        except OSError:
            out.append(f"{name}: n/a")
    return "; ".join(out)


def slice_rows(path, fraction, opener):
    drop_pages(path)
    before = resident_fraction(path)
    t0 = time.perf_counter()
    opener(path, fraction)
    dt = time.perf_counter() - t0
    after = resident_fraction(path)
    return dt, before, after


def st_slice(path, fraction):
    from safetensors import safe_open

    with safe_open(path, framework="pt") as f:
        for k in f.keys():
            s = f.get_slice(k)
            n = s.get_shape()[0]
            s[: max(1, int(n * fraction))]


def bp_slice(path, fraction):
    with boltpack.safe_open(path, framework="pt", threads=1) as f:
        for k in f.keys():
            s = f.get_slice(k)
            n = s.get_shape()[0]
            s[: max(1, int(n * fraction))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bolt_pack")
    ap.add_argument("work")
    ap.add_argument("--gib", type=float, default=2.0)
    ap.add_argument("--threads", type=int, default=1, help="boltpack decode threads (1: per core)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    st = os.path.join(args.work, "model.safetensors")
    nbytes = make_model(st, args.gib)
    raw = os.path.join(args.work, "model-raw.bolt")
    huff = os.path.join(args.work, "model-huffman.bolt")
    subprocess.run([args.bolt_pack, "convert", st, "-o", raw], check=True)
    subprocess.run([args.bolt_pack, "convert", st, "-o", huff, "--codec", "*=bf16-huffman"], check=True)
    sizes = {p: os.path.getsize(p) for p in (st, raw, huff)}
    print(f"model: {nbytes / 2**30:.2f} GiB of bf16; files: safetensors {sizes[st] / 2**30:.3f} GiB, "
          f"raw .bolt {sizes[raw] / 2**30:.3f} GiB, bf16-huffman .bolt {sizes[huff] / 2**30:.3f} GiB")
    print(f"transparent huge pages: {thp_settings()}")
    t = args.threads
    rows = [("safetensors safe_open(pt) + get_tensor (maps; reads and checks nothing)", st, safetensors_all(st)),
            ("boltpack raw, np, check=False: zero-copy views (map; read nothing)", raw,
             boltpack_all(raw, t, "np", check=False)),
            ("boltpack raw, np: checked zero-copy views", raw, boltpack_all(raw, t, "np")),
            ("boltpack raw, pt, check=False: copy-on-write tensors (map; read nothing)", raw,
             boltpack_all(raw, t, check=False)),
            ("boltpack raw, pt: checked copy-on-write tensors", raw, boltpack_all(raw, t)),
            ("first write to fresh memory of the model's size (page faults, zeroing)", st, first_touch(nbytes)),
            (f"boltpack bf16-huffman, pt (threads={t})", huff, boltpack_all(huff, t)),
            (f"boltpack bf16-huffman, pt (threads={t}), each tensor dropped: decode alone", huff,
             boltpack_all(huff, t, keep=False)),
            ("boltpack bf16-huffman, pt (threads=all)", huff, boltpack_all(huff, 0))]
    if torch.cuda.is_available():  # what an engine does next: every byte to the GPU
        rows += [("safetensors + .to(cuda)", st, safetensors_all(st, "cuda")),
                 ("boltpack raw + .to(cuda) (checked)", raw, boltpack_all(raw, 0, device="cuda")),
                 ("boltpack raw + .to(cuda) (check=False)", raw, boltpack_all(raw, 0, device="cuda", check=False)),
                 ("boltpack raw, safe_open(device=cuda) (checked)", raw, boltpack_all(raw, 0, open_device="cuda")),
                 ("boltpack bf16-huffman + .to(cuda) (threads=all)", huff, boltpack_all(huff, 0, device="cuda"))]
    if not have_safetensors():  # its rows need the package
        print("safetensors is not installed: its rows are left out")
        rows = [r for r in rows if not r[0].startswith("safetensors")]
    print("| reader | file | best of %d | GB/s of bf16 |" % args.repeat)
    print("|---|---|---|---|")
    for label, path, load in rows:
        load()  # warm the page cache
        best, n = time_all(load, args.repeat)
        print(f"| {label} | {os.path.basename(path)} | {best:.4f} s | {n * 2 / best / 1e9:.2f} |")
    print("\nget_slice of 1% of the rows of every tensor, pages dropped first:")
    print("| reader | file | time | file pages resident after |")
    print("|---|---|---|---|")
    slices = [("safetensors", st, st_slice)] if have_safetensors() else []
    for label, path, fn in slices + [("boltpack", raw, bp_slice), ("boltpack", huff, bp_slice)]:
        dt, before, after = slice_rows(path, 0.01, fn)
        res = "n/a" if after is None else f"{after:.1%} (before {before:.1%})"
        print(f"| {label} | {os.path.basename(path)} | {dt * 1e3:.1f} ms | {res} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
