#!/usr/bin/env python3
"""Self-check of pyreader against spec/vectors, without the conformance runner.

valid/X.bolt: open, list (names, shapes, dtypes, codecs), verify, and decode
every tensor to every target X.expected.json lists (hex, or bytes + xxh3, or the
error class). invalid/X.bolt: run open, verify, decode (native, file order) and
compare the first failure's stage and class with X.expected_error.txt.
Decodes of a tensor whose codec this reader does not implement (bf16-spec,
x-future-codec) are compared only where the expectation is an error.
Prints N passed/N failed.
"""

import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bolt_codecs  # noqa: E402
import bolt_reader  # noqa: E402
from container import KNOWN_FEATURES, Reader  # noqa: E402
from errors import BoltError  # noqa: E402
from xxh3 import xxh3_64  # noqa: E402

VEC = os.path.join(HERE, "..", "spec", "vectors")


def needs_unsupported(m):
    """Why this reader cannot decode the file as the vector expects, or None."""
    return None


def check_valid(path, exp, verbose):
    fails = []
    try:
        r = Reader(path)
    except BoltError as e:
        return ["open failed: %s %s" % (e.cls, e.message)], None
    skip = needs_unsupported(r.m)
    ts = r.m["tensors"]
    if [t["name"] for t in ts] != [t["name"] for t in exp["tensors"]]:
        fails.append("tensor names differ")
    for t, et in zip(ts, exp["tensors"]):
        got = (t["shape"], bolt_reader.dtype_name(t), t["codec"]["id"])
        want = (et["shape"], et["dtype"], et["codec"])
        if got != want:
            fails.append("%s: list %s != %s" % (t["name"], got, want))
    try:
        r.verify()
    except BoltError as e:
        fails.append("verify failed: %s %s" % (e.cls, e.message))
    if skip:
        return fails, skip
    for t, et in zip(ts, exp["tensors"]):
        decodes = [("full", et.get("decode", {}))]
        decodes += list(et.get("decode_views", {}).items())
        for view, dec in decodes:
            for target, want in dec.items():
                what = "%s [%s/%s]" % (t["name"], view, target)
                if t["codec"]["id"] not in bolt_codecs.CODECS and "error" not in want:
                    continue
                try:
                    out = bolt_reader.decode_tensor(r, t, target, view)
                except BoltError as e:
                    if "error" not in want or want["error"]["class"] != e.cls:
                        fails.append("%s: %s %s, want %s" % (what, e.cls, e.message, want))
                    continue
                if "error" in want:
                    fails.append("%s: decoded, want %s" % (what, want["error"]["class"]))
                elif "hex" in want and out.hex() != want["hex"]:
                    fails.append("%s: hex %s != %s" % (what, out.hex(), want["hex"]))
                elif "xxh3" in want and ("%016x" % xxh3_64(out) != want["xxh3"] or len(out) != want["bytes"]):
                    fails.append("%s: %d bytes xxh3 %016x != %s" % (what, len(out), xxh3_64(out), want))
    return fails, None


def run_invalid(path):
    try:
        r = Reader(path)
    except BoltError as e:
        return "open", e
    try:
        r.verify()
    except BoltError as e:
        return "verify", e
    if needs_unsupported(r.m):
        return "skip", None
    for t in r.m["tensors"]:
        try:
            target = "f32" if t["codec"]["id"] in bolt_codecs.NO_NATIVE else "native"  # container.md B.2
            bolt_reader.decode_tensor(r, t, target, "full")
        except BoltError as e:
            return "decode", e
    return "ok", None


def main():
    verbose = "-v" in sys.argv
    passed, failed, skipped = 0, 0, []
    for exp_path in sorted(glob.glob(os.path.join(VEC, "valid", "*.expected.json"))):
        name = os.path.basename(exp_path)[:-len(".expected.json")]
        with open(exp_path) as f:
            exp = json.load(f)
        fails, skip = check_valid(exp_path[:-len(".expected.json")] + ".bolt", exp, verbose)
        if fails:
            failed += 1
            print("FAIL valid/%s: %s" % (name, "; ".join(fails[:5])))
        elif skip:
            skipped.append("valid/%s (%s)" % (name, skip))
        else:
            passed += 1
            if verbose:
                print("ok   valid/%s" % name)
    for exp_path in sorted(glob.glob(os.path.join(VEC, "invalid", "*.expected_error.txt"))):
        name = os.path.basename(exp_path)[:-len(".expected_error.txt")]
        with open(exp_path) as f:
            exp = dict(line.split(": ", 1) for line in f.read().splitlines() if ": " in line)
        stage, err = run_invalid(exp_path[:-len(".expected_error.txt")] + ".bolt")
        if stage == "skip":
            skipped.append("invalid/%s (zstd)" % name)
            continue
        cls = err.cls if err else None
        # A checksum fault of stage verify may also fail a decode (container.md B.2).
        if (stage, cls) == (exp["stage"], exp["class"]):
            passed += 1
            if verbose:
                print("ok   invalid/%s" % name)
        else:
            failed += 1
            print("FAIL invalid/%s: got %s %s (%s), want %s %s (%s)" % (
                name, stage, cls, err.message if err else "", exp["stage"], exp["class"], exp.get("rule")))
    for s in skipped:
        print("skip " + s)
    print("%d passed/%d failed (%d skipped)" % (passed, failed, len(skipped)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
