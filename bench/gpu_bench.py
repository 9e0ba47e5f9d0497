#!/usr/bin/env python3
"""GPU decode and batch-1 GEMV of stored tensors (libboltpack_cuda) side by
side with cuBLAS bf16 GEMV (torch `W @ x`) and a device-to-device copy, in
one process on one GPU (issue 18's goals).

For each shape (N(0, 0.02) weights, bf16) the CLI encodes one .bolt per
codec; each tensor is uploaded with bp_cuda_upload and timed with CUDA
events over many launches (L2 is 50 MB on an H200: the larger shapes do not
fit, the 4096x4096 ones partly do, as in a real model's step).

usage: gpu_bench.py BOLT_PACK_CLI LIBBOLTPACK_CUDA.so WORK_DIR [--shapes 4096x4096,...] [--codecs q8_0,...]
"""
import argparse
import ctypes
import json
import os
import struct
import subprocess
import time

import torch

SHAPES = "4096x4096,14336x4096,4096x14336,28672x8192"
CODECS = "bf16,q8_0,mxfp4,nvfp4,int4-g128,iq2_xxs,bf16-huffman,bf16-unary,bf16-mx"
BP_OUT_F32, BP_OUT_BF16 = 0, 1


class Tensor(ctypes.Structure):
    _fields_ = [("codec", ctypes.c_int), ("rows", ctypes.c_uint64), ("cols", ctypes.c_uint64),
                ("stream_count", ctypes.c_uint32), ("streams", ctypes.c_void_p * 4),
                ("stream_bytes", ctypes.c_uint64 * 4), ("tensor_scale", ctypes.c_float),
                ("index", ctypes.c_void_p), ("index_bytes", ctypes.c_uint64), ("segments", ctypes.c_uint64),
                ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_uint64)]


def load(lib_path):
    lib = ctypes.CDLL(lib_path)
    lib.bp_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.bp_close.argtypes = [ctypes.c_void_p]
    lib.bp_last_error_message.restype = ctypes.c_char_p
    lib.bp_cuda_last_error.restype = ctypes.c_char_p
    lib.bp_cuda_upload.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(Tensor)]
    lib.bp_cuda_free.argtypes = [ctypes.POINTER(Tensor)]
    lib.bp_cuda_decode.argtypes = [ctypes.POINTER(Tensor), ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64,
                                   ctypes.c_void_p]
    lib.bp_cuda_gemv.argtypes = [ctypes.POINTER(Tensor), ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                 ctypes.c_void_p, ctypes.c_void_p]
    return lib


def write_bf16_safetensors(path, name, w):
    raw = w.contiguous().view(torch.int16).cpu().numpy().tobytes()
    header = json.dumps({name: {"dtype": "BF16", "shape": list(w.shape), "data_offsets": [0, len(raw)]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + raw)


def time_us(fn, iters):
    """Mean µs per call over `iters` calls after a warm-up, by CUDA events."""
    for _ in range(3):
        fn()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) * 1000 / iters


def check(lib, status, what):
    if status != 0:
        raise RuntimeError(f"{what}: status {status}: {lib.bp_cuda_last_error().decode()}")


def bench_codec(lib, path, w_ref, x, iters):
    reader = ctypes.c_void_p()
    if lib.bp_open(path.encode(), ctypes.byref(reader)) != 0:
        raise RuntimeError(lib.bp_last_error_message().decode())
    t = Tensor()
    check(lib, lib.bp_cuda_upload(reader, 0, ctypes.byref(t)), "upload " + path)
    stored = sum(t.stream_bytes[i] for i in range(t.stream_count))
    rows, cols = t.rows, t.cols
    out = torch.empty(rows * cols, dtype=torch.bfloat16, device="cuda")
    y = torch.empty(rows, dtype=torch.float32, device="cuda")
    s = torch.cuda.current_stream().cuda_stream
    dec = lambda: lib.bp_cuda_decode(ctypes.byref(t), BP_OUT_BF16, out.data_ptr(), out.numel() * 2, s)
    gemv = lambda: lib.bp_cuda_gemv(ctypes.byref(t), x.data_ptr(), 1, BP_OUT_F32, y.data_ptr(), s)
    check(lib, dec(), "decode")
    check(lib, gemv(), "gemv")
    torch.cuda.synchronize()
    # GEMV against torch over the decoded W (f32 reference).
    ref = out.view(rows, cols).float() @ x.float()
    err = ((y - ref).abs().max() / ref.abs().max()).item()
    exact = torch.equal(out.view(rows, cols).view(torch.int16), w_ref.view(torch.int16))
    dec_us = time_us(dec, iters)
    gemv_us = time_us(gemv, iters)
    index = t.index_bytes
    lib.bp_cuda_free(ctypes.byref(t))
    lib.bp_close(reader)
    return stored, index, dec_us, gemv_us, err, exact


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("lib")
    ap.add_argument("work")
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--codecs", default=CODECS)
    ap.add_argument("--iters", type=int, default=200)
    a = ap.parse_args()
    lib = load(a.lib)
    os.makedirs(a.work, exist_ok=True)
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}; times are means over {a.iters} launches")
    print("| shape | codec | bits/w | index bits/w | decode µs | decode TB/s bf16 out | GEMV b=1 µs | vs cuBLAS | "
          "max rel err | decode == W |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for shape in a.shapes.split(","):
        rows, cols = map(int, shape.split("x"))
        gen = torch.Generator(device="cuda").manual_seed(rows * 31 + cols)
        w = (torch.randn(rows, cols, device="cuda", generator=gen) * 0.02).to(torch.bfloat16)
        x = torch.randn(cols, device="cuda", generator=gen).to(torch.bfloat16)
        cublas_us = time_us(lambda: w @ x, a.iters)
        copy_dst = torch.empty_like(w)
        copy_us = time_us(lambda: copy_dst.copy_(w), a.iters)
        print(f"| {shape} | cuBLAS bf16 (torch W @ x) | 16 | copy {copy_us:.1f} ({2 * w.numel() * 2 / copy_us / 1e6:.2f} "
              f"TB/s r+w) | - | - | {cublas_us:.1f} | 1.00x | - | - |", flush=True)
        src = os.path.join(a.work, f"w{shape}.safetensors")
        write_bf16_safetensors(src, "w", w)
        for codec in a.codecs.split(","):
            path = os.path.join(a.work, f"w{shape}.{codec}.bolt")
            t0 = time.time()
            subprocess.run([a.cli, "convert", src, "-o", path, "--codec", "*=" + codec, "--no-fsync"], check=True,
                           stdout=subprocess.DEVNULL)
            stored, index, dec_us, gemv_us, err, exact = bench_codec(lib, path, w, x, a.iters)
            n = rows * cols
            print(f"| {shape} | {codec} | {stored * 8 / n:.3f} | {index * 8 / n:.3f} | {dec_us:.1f} | "
                  f"{n * 2 / dec_us / 1e6:.2f} | {gemv_us:.1f} | {cublas_us / gemv_us:.2f}x | {err:.2e} | "
                  f"{'yes' if exact else 'no'} |", flush=True)
            os.remove(path)
        os.remove(src)
        del w, copy_dst
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
