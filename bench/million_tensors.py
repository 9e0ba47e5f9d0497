#!/usr/bin/env python3
"""Issue 15 item 2 on one core: the commands of a file of a million
zero-size tensors (GGUF, and the .bolt bolt-pack makes of it), each run
pinned to one CPU, best of 3, CPU time and peak RSS from wait4.

    bench/million_tensors.py BOLT_PACK [WORK_DIR]

(Needs no GNU time: it runs on the device machine beside a bolt-pack copied
there, with its libxxhash.so.0 in the binary's folder.)
"""
import os, struct, subprocess, sys, time
BP = os.path.abspath(sys.argv[1])
D = os.path.dirname(BP)
W = sys.argv[2] if len(sys.argv) > 2 else "/tmp/million-tensors"
os.makedirs(W, exist_ok=True)
env = dict(os.environ, LD_LIBRARY_PATH=D + os.pathsep + os.environ.get("LD_LIBRARY_PATH", ""))
def gstr(b): return struct.pack("<Q", len(b)) + b
def gguf(n):
    parts = [b"GGUF" + struct.pack("<IQQ", 3, n, 0)]
    for i in range(n):
        parts.append(gstr(b"t%d" % i) + struct.pack("<IQIQ", 1, 0, 0, 0))
    out = b"".join(parts)
    return out + b"\0" * (-len(out) % 32)
g = os.path.join(W, "1m.gguf")
if len(sys.argv) > 3 and sys.argv[3] == "--make":
    open(g, "wb").write(gguf(1000000))
    sys.exit(0)
if not os.path.exists(g):  # made by a child, so that this process stays small (a fork's peak RSS starts at ours)
    subprocess.run([sys.executable, os.path.abspath(__file__), BP, W, "--make"], check=True)
CPU = max(os.sched_getaffinity(0))
os.sched_setaffinity(0, {CPU})  # one core, inherited by each run
OUTS = ("o.bolt", "o.gguf", "o.safetensors")
def clean():
    for f in OUTS:
        p = os.path.join(W, f)
        if os.path.exists(p): os.remove(p)
def run(args, label):
    best = None
    for _ in range(3):
        clean()
        t0 = time.time()
        p = subprocess.Popen([BP] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=W)
        err = p.stderr.read()
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.time() - t0
        row = (ru.ru_utime + ru.ru_stime, wall, ru.ru_maxrss / 1024, os.waitstatus_to_exitcode(status),
               (err.decode(errors="replace").strip().splitlines() or [""])[-1][:90])
        if best is None or row[0] < best[0]: best = row
    clean()
    print(f"| {label} | {best[3]} | {best[0]:.2f} | {best[1]:.2f} | {best[2]:.0f} | {best[4]} |", flush=True)
print(f"pinned to CPU {CPU} of {os.cpu_count()}")
print("| case (1M zero-size tensors) | rc | CPU s (best of 3, 1 core) | wall s | peak RSS MiB | last line |")
print("|---|---|---|---|---|---|")
run(["inspect", "1m.gguf"], "GGUF inspect")
run(["verify", "1m.gguf"], "GGUF verify")
run(["convert", "1m.gguf", "-o", "o.safetensors", "--no-fsync"], "GGUF -> safetensors")
run(["convert", "1m.gguf", "-o", "o.gguf", "--no-fsync"], "GGUF -> GGUF")
run(["convert", "1m.gguf", "-o", "o.bolt", "--no-fsync"], "GGUF -> .bolt")
subprocess.run([BP, "convert", "1m.gguf", "-o", "1m.bolt", "--no-fsync"], env=env, cwd=W,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
run(["inspect", "1m.bolt"], ".bolt inspect")
run(["verify", "1m.bolt"], ".bolt verify")
run(["convert", "1m.bolt", "-o", "o.bolt", "--no-fsync"], ".bolt -> .bolt")
run(["convert", "1m.bolt", "-o", "o.gguf", "--no-fsync"], ".bolt -> GGUF")
run(["convert", "1m.bolt", "-o", "o.safetensors", "--no-fsync"], ".bolt -> safetensors")
