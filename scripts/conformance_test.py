#!/usr/bin/env python3
"""scripts/conformance_test.py: checks that scripts/conformance.py can fail.

An oracle IMPL (this file run with --fake MODE) answers the protocol from the
vectors' own expectations. Unchanged (MODE "oracle") it must pass every
vector of spec/vectors; each way of being wrong (a wrong hash, a wrong shape,
a tensor left out, an invalid file accepted, a wrong error class, a crash, a
hang, output that is not JSON) must make the runner report failures and exit
1, and undeclared capabilities must make it skip, not fail. scripts/test.sh
runs it before the runner checks bolt-pack. Python's standard library only.
"""

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RUNNER = os.path.join(HERE, "conformance.py")
sys.path.insert(0, HERE)
import conformance  # noqa: E402


# ---------------------------------------------------------------------------
# The fake IMPL.

def out(obj):
    print(json.dumps(obj))


def fake_capabilities(mode, vectors):
    codecs = set()
    for path in glob.glob(os.path.join(vectors, "*", "*.expected.json")):
        with open(path) as f:
            codecs.update(t["codec"] for t in json.load(f)["tensors"])
    caps = {"name": "oracle", "version": "0", "codecs": sorted(codecs),
            "features": ["zstd", "shards", "views", "elastic", "line_prefixes", "verify"],
            "targets": list(conformance.TARGETS), "budgets": True}
    if mode == "f32_only":
        caps.update(codecs=["f32"], features=[], targets=["f32"], budgets=False)
    out(caps)
    return 0


def fake_invalid(mode, command, want):
    stage = {"list": "open", "verify": "verify", "decode": "decode"}[command]
    if mode == "accept_invalid" or want["stage"] != stage:
        return 0
    cls = want["class"]
    if mode == "wrong_class":
        cls = "INVALID_ARGUMENT" if cls != "INVALID_ARGUMENT" else "DATA_LOSS"
    out({"error": cls, "message": want["message"]})
    return 1


def decoded_line(name, shape, dtype, target, d):
    if "error" in d:
        return {"error": d["error"]["class"], "message": d["error"]["message"], "tensor": name}
    n, digest = d if isinstance(d, tuple) else (conformance.expected_digest(d) or (d["bytes"], "0" * 64))
    return {"name": name, "shape": shape, "dtype": dtype, "target": target, "bytes": n, "sha256": digest}


def fake_decode(mode, e, opts):
    target = opts.get("--target", "native")
    if "--budget" in opts:
        budget = [b for b in e["budget_runs"] if b["budget"] == opts["--budget"]][0]
        want = conformance.budget_want(e, budget, target)
    else:
        want = conformance.want_of(e["tensors"], opts.get("--view", "decode"), target)
    if mode == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "hang":
        time.sleep(60)
    lines = [decoded_line(n, s, dt, target, d) for n, s, dt, d in want]
    ok = [o for o in lines if "sha256" in o]
    if mode == "wrong_hash" and ok:
        ok[0]["sha256"] = ("1" if ok[0]["sha256"][0] != "1" else "2") + ok[0]["sha256"][1:]
    if mode == "wrong_shape" and ok:
        ok[0]["shape"] = ok[0]["shape"] + [1]
    if mode == "drop_tensor" and lines:
        lines = lines[1:]
    for o in lines:
        out(o)
    return 1 if any("error" in o for o in lines) else 0


def fake_main(argv):
    mode, vectors, command, rest = argv[0], argv[1], argv[2], argv[3:]
    if command == "capabilities":
        return fake_capabilities(mode, vectors)
    path, opts = rest[0], dict(zip(rest[1::2], rest[2::2]))
    if mode == "garbage":
        print("decoded fine!")
        return 0
    stem = path[:-len(".bolt")]
    if os.path.exists(stem + ".expected_error.txt"):
        return fake_invalid(mode, command, conformance.read_expected_error(stem + ".expected_error.txt"))
    with open(stem + ".expected.json") as f:
        e = json.load(f)
    if command == "list":
        for t in e["tensors"]:
            out({"name": t["name"], "shape": t["shape"], "dtype": t["dtype"], "codec": t["codec"]})
        return 0
    if command == "verify":
        return 0
    return fake_decode(mode, e, opts)


# ---------------------------------------------------------------------------
# The checks.

def run_runner(mode, vectors, timeout=20):
    impl = [sys.executable, os.path.abspath(__file__), "--fake", mode, vectors]
    p = subprocess.run([sys.executable, RUNNER, "--vectors", vectors, "--timeout", str(timeout)] + impl,
                       capture_output=True, text=True)
    last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    return p.returncode, last, p.stdout + p.stderr


def counts(last):
    # "N passed, N failed, N skipped"
    parts = [int(w) for w in last.replace(",", "").split()[0::2]]
    return dict(zip(("passed", "failed", "skipped"), parts))


def small_kit(tmp):
    """A few vectors of every kind: valid (decode, views, budgets, errors), invalid at each stage, a crash."""
    src = os.path.join(ROOT, "spec", "vectors")
    picks = {"valid": ["f32", "views_draft", "elastic_product", "unknown_codec", "zstd_large"],
             "invalid": ["bad_magic", "chunk_checksum", "zstd_not_a_frame"],
             "crashes": ["limit-nine-dims"], "ggml": ["q8_0"]}
    for folder, names in picks.items():
        os.makedirs(os.path.join(tmp, folder))
        for name in names:
            for f in glob.glob(os.path.join(src, folder, name + ".*")):
                shutil.copy(f, os.path.join(tmp, folder))
    return tmp


def main():
    failures = []

    def expect(cond, what, output):
        if not cond:
            failures.append(what + "\n" + output[-2000:])

    vectors = os.path.join(ROOT, "spec", "vectors")
    rc, last, output = run_runner("oracle", vectors)
    c = counts(last)
    expect(rc == 0 and c["failed"] == 0 and c["passed"] > 250, "the oracle fails the real kit: " + last, output)
    with tempfile.TemporaryDirectory() as tmp:
        kit = small_kit(tmp)
        rc, last, output = run_runner("oracle", kit)
        base = counts(last)
        expect(rc == 0 and base["failed"] == 0, "the oracle fails the small kit: " + last, output)
        for mode in ("wrong_hash", "wrong_shape", "drop_tensor", "accept_invalid", "wrong_class", "crash",
                     "garbage"):
            rc, last, output = run_runner(mode, kit)
            expect(rc == 1 and counts(last)["failed"] > 0, "%s not caught: %s" % (mode, last), output)
        # A hang is a failure once the per-call timeout passes.
        rc, last, output = run_runner("hang", kit, timeout=0.5)
        expect(rc == 1 and "timed out" in output, "a hang is not caught: " + last, output)
        # Undeclared codecs, features and targets are skipped, never failed.
        rc, last, output = run_runner("f32_only", kit)
        c = counts(last)
        expect(rc == 0 and c["skipped"] > base["skipped"] and c["failed"] == 0,
               "an IMPL of fewer capabilities is not skipped cleanly: " + last, output)
    for f in failures:
        print("FAIL " + f)
    print("conformance_test: %d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--fake":
        sys.exit(fake_main(sys.argv[2:]))
    sys.exit(main())
