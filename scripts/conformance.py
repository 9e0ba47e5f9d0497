#!/usr/bin/env python3
"""The bolt-pack conformance kit's runner (spec/conformance.md).

    scripts/conformance.py [options] IMPL [ARG...]
    scripts/conformance.py [options] --impl "CMD ARGS" [--impl "CMD2"]

runs every vector of the kit (spec/vectors/valid, spec/vectors/invalid,
spec/vectors/crashes, spec/vectors/ggml, spec/vectors/codecs) against the implementation under test through the
protocol of spec/conformance.md, prints every failure, a table per group
(passed, failed, skipped by declared capability) and ends with the line
`N passed, N failed, N skipped`. Exit status 1 on any failure, 2 on bad usage.
Python's standard library only.
"""

import argparse
import hashlib
import itertools
import json
import os
import shlex
import signal
import subprocess
import sys

TARGETS = ("native", "f32", "f16", "bf16")
GROUPS = ("list", "decode", "views", "budgets", "invalid", "crashes", "ggml", "codecs")

# The feature an invalid vector needs, by the first rule id it breaks
# (spec/conformance.md §6): longest prefix first.
RULE_FEATURES = (("C-6.10.1", "line_prefixes"), ("C-7.3", "zstd"), ("C-15", "views"),
                 ("C-8", "shards"), ("E-", "elastic"))


class Tally:
    def __init__(self):
        self.counts = {g: [0, 0, 0] for g in GROUPS}
        self.skip_reasons = {}
        self.failures = []

    def passed(self, group):
        self.counts[group][0] += 1

    def failed(self, group, case, why):
        self.counts[group][1] += 1
        self.failures.append("FAIL %s %s: %s" % (group, case, why))

    def skipped(self, group, case, why, verbose):
        self.counts[group][2] += 1
        key = "%s: %s" % (group, why)
        self.skip_reasons[key] = self.skip_reasons.get(key, 0) + 1
        if verbose:
            print("skip %s %s: %s" % (group, case, why))

    def totals(self):
        return [sum(c[k] for c in self.counts.values()) for k in range(3)]


class Impl:
    """One implementation under test: a command line and its capabilities."""

    def __init__(self, argv, timeout):
        self.argv = argv
        self.timeout = timeout
        self.caps = {}

    def call(self, *args):
        """(exit status or a string saying why there is none, [JSON objects], error text)."""
        try:
            # A session of its own, so that a hang is ended with everything
            # the IMPL started (a wrapper's children would keep the pipes open).
            p = subprocess.Popen(self.argv + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            return "could not run: %s" % e, [], ""
        try:
            stdout, stderr = p.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            return "timed out after %g s (a hang)" % self.timeout, [], ""
        if p.returncode < 0:
            return "killed by signal %d (a crash)" % -p.returncode, [], ""
        lines = []
        for raw in stdout.decode("utf-8", "replace").splitlines():
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                return p.returncode, None, "not a JSON line: %r" % raw[:200]
            if not isinstance(obj, dict):
                return p.returncode, None, "not a JSON object: %r" % raw[:200]
            lines.append(obj)
        return p.returncode, lines, stderr.decode("utf-8", "replace")[-300:]

    def has(self, key, value):
        return value in self.caps.get(key, [])


def load_capabilities(impl):
    rc, lines, err = impl.call("capabilities")
    if rc != 0 or not lines:
        return "capabilities failed: exit %s %s" % (rc, err)
    caps = lines[0]
    for key in ("codecs", "features", "targets"):
        if not isinstance(caps.get(key), list):
            return "capabilities: %r is not a list" % key
    impl.caps = caps
    return None


# ---------------------------------------------------------------------------
# Valid vectors.

def expected_digest(d):
    """(bytes, sha256) of an expected decode, or None when it has only XXH3."""
    if "hex" in d:
        b = bytes.fromhex(d["hex"])
        return len(b), hashlib.sha256(b).hexdigest()
    if "sha256" in d:
        return d["bytes"], d["sha256"]
    return None


def valid_needs(impl, e):
    """Why this IMPL cannot be asked about vector `e`, or None."""
    for t in e["tensors"]:
        decodes = [d for d in t["decode"].values() if "error" not in d]
        if decodes and not impl.has("codecs", t["codec"]):
            return "codec %s not declared" % t["codec"]
        for s in t["streams"]:
            if s["compression"] == "zstd" and not impl.has("features", "zstd"):
                return "feature zstd not declared"
            if "line_bytes" in s and not impl.has("features", "line_prefixes"):
                return "feature line_prefixes not declared"
    if e.get("shards", 1) > 1 and not impl.has("features", "shards"):
        return "feature shards not declared"
    return None


def compare_list(lines, e):
    got = [(o.get("name"), o.get("shape"), o.get("dtype"), o.get("codec")) for o in lines]
    want = [(t["name"], t["shape"], t["dtype"], t["codec"]) for t in e["tensors"]]
    if got != want:
        return "list gave %s, expected %s" % (got[:4], want[:4])
    return None


def compare_decoded(lines, want):
    """`want`: [(name, shape, dtype, expected decode)] in order; None or why not."""
    results, errors = {}, {}
    for o in lines:
        if "error" in o:
            if "tensor" not in o:
                return "the file was refused: %s %s" % (o.get("error"), o.get("message", "")[:160])
            errors[o["tensor"]] = o
        else:
            results[o.get("name")] = o
    order = [o.get("name", o.get("tensor")) for o in lines]
    if order != [w[0] for w in want]:
        return "tensors %s, expected %s" % (order[:6], [w[0] for w in want][:6])
    for name, shape, dtype, d in want:
        if "error" in d:
            cls = d["error"]["class"]
            if name not in errors:
                return "%s decoded, expected error %s" % (name, cls)
            if errors[name]["error"] != cls:
                return "%s: error %s, expected %s" % (name, errors[name]["error"], cls)
            continue
        if name in errors:
            return "%s: error %s %s" % (name, errors[name]["error"], errors[name].get("message", "")[:160])
        o = results[name]
        if o.get("shape") != shape or o.get("dtype") != dtype:
            return "%s: shape %s dtype %s, expected %s %s" % (name, o.get("shape"), o.get("dtype"), shape, dtype)
        n, digest = d
        if o.get("bytes") != n or o.get("sha256") != digest:
            return "%s: %s bytes sha256 %s, expected %s bytes %s" % (name, o.get("bytes"), o.get("sha256"), n, digest)
    return None


def run_decode_case(impl, tally, group, case, args, want, verbose):
    """Skips when an expected decode has only XXH3; else one pass or fail."""
    if want is None:
        tally.skipped(group, case, "not every tensor has an expectation for it", verbose)
        return
    for name, _, _, d in want:
        if "error" not in d and not isinstance(d, tuple):
            tally.skipped(group, case, "expectation has XXH3 only, no sha256", verbose)
            return
    rc, lines, err = impl.call(*args)
    if not isinstance(rc, int) or lines is None:
        tally.failed(group, case, rc if lines is not None else err)
        return
    why = compare_decoded(lines, want)
    want_rc = 1 if any("error" in d for _, _, _, d in want if isinstance(d, dict)) else 0
    if why is None and rc != want_rc:
        why = "exit status %d, expected %d" % (rc, want_rc)
    if why is None:
        tally.passed(group)
    else:
        tally.failed(group, case, why)


def want_of(tensors, key, target):
    out = []
    for t in tensors:
        d = t[key][target] if key == "decode" else t.get("decode_views", {}).get(key, {}).get(target)
        if d is None:
            return None
        digest = d if "error" in d else (expected_digest(d) or d)
        out.append((t["name"], t["shape"], t["dtype"], digest))
    return out


def check_valid(impl, tally, path, e, verbose, groups=("list", "decode")):
    name = os.path.basename(path)
    list_group, decode_group = groups
    why = valid_needs(impl, e)
    if why:
        for group in groups:
            tally.skipped(group, name, why, verbose)
        return
    rc, lines, err = impl.call("list", path)
    if rc != 0 or lines is None:
        tally.failed(list_group, name, "exit %s %s" % (rc, (lines or [{}])[-1].get("message", err)[:200]))
    else:
        why = compare_list(lines, e)
        tally.failed(list_group, name, why) if why else tally.passed(list_group)
    for target in TARGETS:
        case = "%s --target %s" % (name, target)
        if e["tensors"] and target not in e["tensors"][0]["decode"]:
            continue  # the expectation has nothing for this target (ggml: f32 and native only)
        if not impl.has("targets", target):
            tally.skipped(decode_group, case, "target %s not declared" % target, verbose)
            continue
        run_decode_case(impl, tally, decode_group, case, ["decode", path, "--target", target],
                        want_of(e["tensors"], "decode", target), verbose)
    check_views(impl, tally, path, e, verbose, "views" if decode_group == "decode" else decode_group)
    check_budgets(impl, tally, path, e, verbose)


def check_views(impl, tally, path, e, verbose, group="views"):
    views = sorted({v for t in e["tensors"] for v in t.get("decode_views", {})})
    for view, target in itertools.product(views, TARGETS):
        case = "%s --view %s --target %s" % (os.path.basename(path), view, target)
        if not impl.has("features", "views"):
            tally.skipped(group, case, "feature views not declared", verbose)
        elif not impl.has("targets", target):
            tally.skipped(group, case, "target %s not declared" % target, verbose)
        elif target not in e["tensors"][0]["decode"]:
            continue  # no expectation for this target (a codec without it)
        else:
            run_decode_case(impl, tally, group, case, ["decode", path, "--view", view, "--target", target],
                            want_of(e["tensors"], view, target), verbose)


def kept_bytes(full, shape, runs, size):
    """The kept elements of a row-major tensor, `runs` per dimension ([start, length] pairs)."""
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    kept = [[i for start, length in dim for i in range(start, start + length)] for dim in runs]
    out = bytearray()
    for idx in itertools.product(*kept):
        at = sum(i * s for i, s in zip(idx, strides)) * size
        out += full[at:at + size]
    return bytes(out)


def kept_whole(shape, runs, dims):
    """Whether `runs` keep every dimension of `dims` whole."""
    return all(runs[d] == [[0, shape[d]]] for d in dims)


def budget_want_tensor(t, bt, target):
    """The expected decode of one kept tensor ([K-6.4], [K-6.5]), or why it cannot be known."""
    d = t["decode"][target]
    shape, runs = t["shape"], bt["runs"]
    kept = bt.get("decode", {}).get(target)
    if kept is not None and "error" not in d:  # the kept bytes' digest, where the parent has no hex
        return kept["bytes"], kept["sha256"]
    if "error" in d or kept_whole(shape, runs, range(len(shape))):
        return d if "error" in d else (expected_digest(d) or "parent %s has no sha256 for %s" % (t["name"], target))
    size = len(d["hex"]) // 2 if "hex" in d else d.get("bytes", 0)
    elements = 1
    for n in shape:
        elements *= n
    whole_bytes = elements and size % elements == 0
    if not whole_bytes and len(shape) < 2:
        return "%s: a cut of a 1-D tensor without whole bytes per element in %s is not settled" % (t["name"], target)
    if not whole_bytes and not kept_whole(shape, runs, range(1, len(shape))):
        # No whole bytes per element (a block codec's native form) and an inner cut: refused.
        return {"error": {"class": "UNIMPLEMENTED", "message": "no whole bytes per element"}}
    if "hex" not in d:
        return "parent %s has no hex expectation for %s" % (t["name"], target)
    full = bytes.fromhex(d["hex"])
    if whole_bytes:
        b = kept_bytes(full, shape, runs, len(full) // elements)
    else:  # only the outermost dimension cut: whole rows
        b = kept_bytes(full, shape[:1], runs[:1], len(full) // shape[0])
    return len(b), hashlib.sha256(b).hexdigest()


def budget_want(e, budget, target):
    """The expected lines of `decode --budget`, or why they cannot be known."""
    by_name = {t["name"]: t for t in e["tensors"]}
    want = []
    for bt in budget["tensors"]:
        # "tensor" is the name after layer renumbering; "parent", where it differs,
        # the parent's (container.md Appendix B.1).
        t = by_name.get(bt.get("parent", bt["tensor"]))
        if t is None or not bt["runs"]:
            return "kept tensor %s: no parent of that name or no runs in the expectation" % bt["tensor"]
        d = budget_want_tensor(t, bt, target)
        if isinstance(d, str):
            return d
        want.append((bt["tensor"], [sum(r[1] for r in dim) for dim in bt["runs"]], t["dtype"], d))
    return want


def check_budgets(impl, tally, path, e, verbose):
    for budget, target in itertools.product(e.get("budget_runs", []), TARGETS):
        case = "%s --budget %s --target %s" % (os.path.basename(path), budget["budget"], target)
        if not impl.has("features", "elastic") or impl.caps.get("budgets") is not True:
            tally.skipped("budgets", case, "feature elastic / budgets not declared", verbose)
            continue
        if not impl.has("targets", target):
            tally.skipped("budgets", case, "target %s not declared" % target, verbose)
            continue
        want = budget_want(e, budget, target)
        if isinstance(want, str):
            tally.skipped("budgets", case, want, verbose)
            continue
        run_decode_case(impl, tally, "budgets", case, ["decode", path, "--budget", budget["budget"],
                                                       "--target", target], want, verbose)


# ---------------------------------------------------------------------------
# Invalid vectors and the crash corpus.

def read_expected_error(path):
    fields = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    return fields


def first_error(lines, last):
    errors = [o for o in lines if "error" in o]
    if not errors:
        return None
    return errors[-1] if last else errors[0]


def rejection(impl, path, target=None):
    """(stage, class) of the first command that refuses `path`, None if none does, or a failure string.

    The decode asks for `target` when the IMPL declares it (a codec vector
    names the target its codec defines), else native or the first declared."""
    steps = [("open", ["list", path], True)]
    if impl.has("features", "verify"):
        steps.append(("verify", ["verify", path], True))
    if target is None or not impl.has("targets", target):
        target = "native" if impl.has("targets", "native") else (impl.caps["targets"] or ["f32"])[0]
    steps.append(("decode", ["decode", path, "--target", target], False))
    for stage, args, last in steps:
        rc, lines, err = impl.call(*args)
        if not isinstance(rc, int):
            return "%s: %s" % (args[0], rc)
        if lines is None:
            return "%s: %s" % (args[0], err)
        if rc == 0:
            continue
        e = first_error(lines, last)
        if e is None:
            return "%s: exit %d without an error line" % (args[0], rc)
        return stage, e.get("error"), e.get("message", "")
    return None


def check_invalid(impl, tally, group, path, verbose):
    name = os.path.basename(path)
    want = read_expected_error(path[:-len(".bolt")] + ".expected_error.txt")
    rule = want.get("rule", "").split(",")[0].strip()
    for prefix, feature in RULE_FEATURES:
        if rule.startswith(prefix) and not impl.has("features", feature):
            tally.skipped(group, name, "rule %s needs feature %s" % (rule, feature), verbose)
            return
    # A codec vector (codecs/invalid) names its codec: skipped by capability.
    codec = want.get("codec")
    if codec and not impl.has("codecs", codec):
        tally.skipped(group, name, "codec %s not declared" % codec, verbose)
        return
    got = rejection(impl, path, want.get("target"))
    if isinstance(got, str):
        tally.failed(group, name, got)
    elif got is None:
        if want.get("stage") == "verify" and not impl.has("features", "verify"):
            tally.skipped(group, name, "fault found by verification only; feature verify not declared", verbose)
        else:
            tally.failed(group, name, "accepted (exit 0), expected %s" % want.get("class"))
    elif got[1] != want.get("class"):
        tally.failed(group, name, "%s: %s (%s), expected %s" % (got[0], got[1], got[2][:160], want.get("class")))
    else:
        tally.passed(group)


# ---------------------------------------------------------------------------

def files(folder, suffix):
    if not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(suffix))


def run_impl(impl, args):
    tally = Tally()
    why = load_capabilities(impl)
    if why:
        tally.failed("list", "capabilities", why)
        return tally
    vectors = args.vectors
    for path in files(os.path.join(vectors, "valid"), ".bolt"):
        with open(path[:-len(".bolt")] + ".expected.json", encoding="utf-8") as f:
            check_valid(impl, tally, path, json.load(f), args.verbose)
    for group, folder in (("invalid", "invalid"), ("crashes", "crashes")):
        for path in files(os.path.join(vectors, folder), ".bolt"):
            check_invalid(impl, tally, group, path, args.verbose)
    # ggml's codec vectors, stored as .bolt by scripts/make_ggml_vectors.py
    # (spec/conformance.md §7): list in group ggml, decodes in ggml too.
    for path in files(os.path.join(vectors, "ggml"), ".bolt"):
        with open(path[:-len(".bolt")] + ".expected.json", encoding="utf-8") as f:
            check_valid(impl, tally, path, json.load(f), args.verbose, groups=("ggml", "ggml"))
    # The codec vectors of make_codec_vectors (spec/conformance.md §7): valid
    # files and their invalid/ folder, all in group codecs.
    codecs = os.path.join(vectors, "codecs")
    for path in files(codecs, ".bolt"):
        with open(path[:-len(".bolt")] + ".expected.json", encoding="utf-8") as f:
            check_valid(impl, tally, path, json.load(f), args.verbose, groups=("codecs", "codecs"))
    for path in files(os.path.join(codecs, "invalid"), ".bolt"):
        check_invalid(impl, tally, "codecs", path, args.verbose)
    return tally


def print_report(label, tally):
    for line in tally.failures:
        print(line)
    for key, n in sorted(tally.skip_reasons.items()):
        print("skipped %d: %s" % (n, key))
    print("\n%s" % label)
    print("%-10s %7s %7s %8s" % ("group", "passed", "failed", "skipped"))
    for g in GROUPS:
        print("%-10s %7d %7d %8d" % ((g,) + tuple(tally.counts[g])))


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vectors", default=os.path.join(root, "spec", "vectors"), help="the kit's vector folder")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per IMPL call; past it, a failure")
    ap.add_argument("--impl", action="append", default=[], help="an IMPL command line (repeatable)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every skipped case")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="IMPL [ARG...]")
    args = ap.parse_args()
    impls = [shlex.split(c) for c in args.impl] + ([args.command] if args.command else [])
    if not impls:
        ap.error("no IMPL given")
    total = [0, 0, 0]
    for argv in impls:
        tally = run_impl(Impl(argv, args.timeout), args)
        print_report("IMPL: " + " ".join(shlex.quote(a) for a in argv), tally)
        total = [a + b for a, b in zip(total, tally.totals())]
    print("%d passed, %d failed, %d skipped" % tuple(total))
    return 1 if total[1] else 0


if __name__ == "__main__":
    sys.exit(main())
