#!/usr/bin/env python3
"""Flips one byte at N evenly spaced offsets of a .bolt file and converts each
damaged copy to .safetensors with a bolt-pack binary, as a user would:

    bench/corruption_sweep.py BOLT_PACK FILE.bolt [N] [-- EXTRA CONVERT ARGS]

Each outcome is counted:
  error     exit 1 with a message and no output file (what the damage must give)
  same      exit 0 and the output equals the undamaged file's (the byte was never
            read by a decode: padding, or a stream of a view not decoded)
  SILENT    exit 0 with different values: corruption passed off as a model
  crash     killed by a signal, or any other exit code
  leftover  an output (or temporary) file left after a failure

Measurement only (not a test): the table of issue 15 before and after.
"""
import os
import subprocess
import sys
import tempfile


def run(bolt_pack, src, out, extra):
    for f in os.listdir(os.path.dirname(out)):
        if f != os.path.basename(src):
            os.remove(os.path.join(os.path.dirname(out), f))
    p = subprocess.run([bolt_pack, "convert", src, "-o", out] + extra, capture_output=True)
    return p.returncode, p.stderr.decode(errors="replace")


def main():
    args = sys.argv[1:]
    extra = []
    if "--" in args:
        extra = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    bolt_pack, model = args[0], args[1]
    n = int(args[2]) if len(args) > 2 else 200
    data = open(model, "rb").read()
    counts = {"error": 0, "same": 0, "SILENT": 0, "crash": 0, "leftover": 0}
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "in.bolt")
        out = os.path.join(d, "out.safetensors")
        open(src, "wb").write(data)
        rc, err = run(bolt_pack, src, out, extra)
        if rc != 0:
            sys.exit(f"the undamaged file does not convert: {err}")
        reference = open(out, "rb").read()
        for i in range(n):
            at = (len(data) * i) // n
            damaged = bytearray(data)
            damaged[at] ^= 0x55
            open(src, "wb").write(damaged)
            rc, err = run(bolt_pack, src, out, extra)
            left = [f for f in os.listdir(d) if f != "in.bolt"]
            if rc == 0:
                counts["same" if open(out, "rb").read() == reference else "SILENT"] += 1
            elif rc == 1 and err.strip():
                counts["error"] += 1
                if left:
                    counts["leftover"] += 1
            else:
                counts["crash"] += 1
    print(f"{os.path.basename(model)} ({len(data)} bytes, {n} offsets, convert {' '.join(extra)}): "
          + ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
