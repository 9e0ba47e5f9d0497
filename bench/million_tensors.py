#!/usr/bin/env python3
"""Issue 15 item 2 on one core: the commands of a file of a million
zero-size tensors (GGUF, and the .bolt bolt-pack makes of it), each run
pinned to one CPU, best of 3, CPU time and peak RSS from wait4.

    bench/million_tensors.py BOLT_PACK [WORK_DIR] [--ggml GGUF_OPEN]

With --ggml, the peer too: ggml's own GGUF reader (a program built by
bench/peers/build_ggml_gguf_open.sh) beside `bolt-pack inspect` on files
of 25K, 50K and 100K tensors, and on the 1M file with a time limit (its
duplicate-name check compares each name with every earlier one).

(Needs no GNU time: it runs on the device machine beside a bolt-pack copied
there, with its libxxhash.so.0 in the binary's folder.)
"""
import os, struct, subprocess, sys, time
GGML = None
if "--ggml" in sys.argv:
    k = sys.argv.index("--ggml")
    GGML = os.path.abspath(sys.argv[k + 1])
    del sys.argv[k:k + 2]
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
def gguf_path(n): return os.path.join(W, "1m.gguf" if n == 1000000 else f"{n}.gguf")
if len(sys.argv) > 4 and sys.argv[3] == "--make":
    n = int(sys.argv[4])
    open(gguf_path(n), "wb").write(gguf(n))
    sys.exit(0)
def make(n):  # by a child, so that this process stays small (a fork's peak RSS starts at ours)
    if not os.path.exists(gguf_path(n)):
        subprocess.run([sys.executable, os.path.abspath(__file__), BP, W, "--make", str(n)], check=True)
make(1000000)
CPU = max(os.sched_getaffinity(0))
os.sched_setaffinity(0, {CPU})  # one core, inherited by each run
OUTS = ("o.bolt", "o.gguf", "o.safetensors")
def clean():
    for f in OUTS:
        p = os.path.join(W, f)
        if os.path.exists(p): os.remove(p)
def run(args, label, program=None, tries=3, limit=None):
    best = None
    for _ in range(tries):
        clean()
        t0 = time.time()
        p = subprocess.Popen([program or BP] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=W)
        timer = None
        if limit is not None:
            import threading
            timer = threading.Timer(limit, p.kill)
            timer.start()
        err = p.stderr.read()
        _, status, ru = os.wait4(p.pid, 0)
        if timer is not None:
            timer.cancel()
            if time.time() - t0 >= limit: err = f"killed after {limit} s".encode()
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
if GGML:
    print("\nPeer, same machine and core: ggml's gguf_init_from_file (no_alloc) against bolt-pack inspect")
    print("| case | rc | CPU s (best of 3, 1 core) | wall s | peak RSS MiB | last line |")
    print("|---|---|---|---|---|---|")
    for n in (25000, 50000, 100000):
        make(n)
        run([os.path.basename(gguf_path(n))], f"ggml, {n // 1000}K tensors", program=GGML)
        run(["inspect", os.path.basename(gguf_path(n))], f"bolt-pack inspect, {n // 1000}K tensors")
    run(["1m.gguf"], "ggml, 1M tensors (one try, 120 s limit)", program=GGML, tries=1, limit=120)
