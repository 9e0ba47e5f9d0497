#!/usr/bin/env python3
"""A minimal bolt-pack reader written from spec/*.md alone, speaking the
conformance protocol (PROTOCOL.md / spec/conformance.md):

  bolt_reader.py capabilities
  bolt_reader.py list FILE
  bolt_reader.py decode FILE [--target native|f32|f16|bf16] [--view V] [--budget B]
  bolt_reader.py verify FILE          (container.md §7.4 verification, [K-5.2])
"""

import argparse
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bolt_codecs as bcodecs  # noqa: E402
import budget  # noqa: E402
import zstd  # noqa: E402
from container import DTYPES, KNOWN_FEATURES, Reader  # noqa: E402
from errors import BoltError  # noqa: E402
from xxh3 import xxh3_64  # noqa: E402

VERSION = "0.1"


def capabilities():
    return {"name": "pyreader", "version": VERSION, "codecs": list(bcodecs.CODECS),
            "features": sorted(KNOWN_FEATURES | {"views", "elastic", "line_prefixes", "verify"}), "targets": ["native", "f32", "f16", "bf16"],
            "budgets": True}


def dtype_name(t):
    return DTYPES.get(t["dtype"], ("UNKNOWN",))[0]


def stream_raw(r, t, s):
    """The stream's raw bytes, each chunk (or the whole stream) checked first ([C-7.4.1])."""
    data = r.stored(s)
    if not s["chunks"]:
        from container import dl
        if xxh3_64(data) != s["xxh3"]:
            raise dl("%s: tensor %r stream %r: checksum mismatch" % (r.path, t["name"], s["role"]), t["name"])
    else:
        for k in range(len(s["chunks"])):
            r.verify_chunk(t, s, k, data)
    if s["compression"] == 0:
        return data
    pieces = s["chunks"] or [{"stored_offset": 0, "stored_length": s["length"], "raw_length": s["raw_length"]}]
    out = []
    for c in pieces:  # each chunk is a complete zstd payload of its raw_length ([C-7.3.2])
        try:
            raw = zstd.decompress(data[c["stored_offset"]:c["stored_offset"] + c["stored_length"]],
                                  c["raw_length"])
        except zstd.ZstdError as e:
            raise BoltError("DATA_LOSS", "tensor %r stream %r: zstd: %s" % (t["name"], s["role"], e), t["name"])
        if len(raw) != c["raw_length"]:
            raise BoltError("DATA_LOSS", "tensor %r stream %r: zstd: %d bytes, raw_length %d"
                            % (t["name"], s["role"], len(raw), c["raw_length"]), t["name"])
        out.append(raw)
    return b"".join(out)


def decode_tensor(r, t, target, view):
    m = r.m
    missing = [f for f in m["required_features"] if f not in KNOWN_FEATURES]
    if missing:  # [C-5.3.4]
        raise BoltError("UNIMPLEMENTED", "tensor %r: missing required feature %s" % (t["name"], missing[0]), t["name"])
    missing = [f for f in t["required_features"] if f not in KNOWN_FEATURES]
    if missing:  # [C-5.3.5]
        raise BoltError("UNIMPLEMENTED", "tensor %r: missing tensor feature %s" % (t["name"], missing[0]), t["name"])
    if t["dtype"] not in DTYPES:  # [C-5.2.2]
        raise BoltError("UNIMPLEMENTED", "tensor %r: dtype %d is unknown" % (t["name"], t["dtype"]), t["name"])
    for s in t["streams"]:
        if s["compression"] > 1:  # [C-6.9.6]
            raise BoltError("UNIMPLEMENTED", "tensor %r: compression %d is unknown" % (t["name"], s["compression"]), t["name"])
    if t["codec"]["id"] not in bcodecs.CODECS:  # [C-10.2.1]
        raise BoltError("UNIMPLEMENTED", "tensor %r: codec %s is unknown" % (t["name"], t["codec"]["id"]), t["name"])
    state = bcodecs.check_record(t)  # [C-10.3.1]
    streams = [stream_raw(r, t, s) if r.reads(view, s) else b"" for s in t["streams"]]  # [C-15.5.2]
    for s, raw in zip(t["streams"], streams):
        if len(raw) != s["raw_length"]:
            raise BoltError("DATA_LOSS", "tensor %r: view %s does not read stream %r, which the codec needs"
                            % (t["name"], view, s["role"]), t["name"])
    return bcodecs.decode(t, streams, target, state)


def emit(obj):
    print(json.dumps(obj), flush=True)


def fail(e):
    line = {"error": e.cls, "message": e.message}
    if e.tensor is not None:
        line["tensor"] = e.tensor
    emit(line)
    return 1


def cmd_list(path):
    r = Reader(path)
    for t in r.m["tensors"]:
        emit({"name": t["name"], "shape": t["shape"], "dtype": dtype_name(t), "codec": t["codec"]["id"]})
    return 0


def cmd_decode(path, target, view, budget_name=None):
    r = Reader(path)
    if view not in ("full", "") and view not in r.view_names:  # [C-15.5.1]
        raise BoltError("NOT_FOUND", "%s: view %r is not declared (views: full%s)"
                        % (path, view, "".join(", " + v for v in sorted(r.view_names))))
    view = view or "full"
    if budget_name is None:
        todo = [(t, t["name"], None) for t in r.m["tensors"]]
    else:
        todo = budget.kept_tensors(r, budget_name)  # [K-6.3]: the kept tensors, renumbered
    rc = 0
    for t, name, runs in todo:
        try:
            out = decode_tensor(r, t, target, view)
            shape = t["shape"]
            if runs is not None:  # elastic.md §5.4: decode in the view, then cut
                out = budget.cut(t, out, runs, target)
                shape = [sum(e - s for s, e in rs) for rs in runs]
        except BoltError as e:  # [K-6.2]: an error line in its place, the tensors after it still decoded
            e.tensor = name
            rc = fail(e)
            continue
        emit({"name": name, "shape": shape, "dtype": dtype_name(t), "target": target,
              "bytes": len(out), "sha256": hashlib.sha256(out).hexdigest(), "xxh3": "%016x" % xxh3_64(out)})
    return rc


def cmd_verify(path):
    Reader(path).verify()  # [K-5.2]: exit 0 and no line when the file is sound
    return 0


def main(argv):
    ap = argparse.ArgumentParser(prog="bolt_reader.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("capabilities")
    sub.add_parser("list").add_argument("file")
    sub.add_parser("verify").add_argument("file")
    d = sub.add_parser("decode")
    d.add_argument("file")
    d.add_argument("--target", default="native", choices=["native", "f32", "f16", "bf16"])
    d.add_argument("--view", default="full")
    d.add_argument("--budget")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "capabilities":
            emit(capabilities())
            return 0
        if a.cmd == "list":
            return cmd_list(a.file)
        if a.cmd == "verify":
            return cmd_verify(a.file)
        return cmd_decode(a.file, a.target, a.view, a.budget)
    except BoltError as e:
        return fail(e)
    except OSError as e:
        return fail(BoltError("NOT_FOUND", "%s: %s" % (getattr(e, "filename", "") or "", e.strerror)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
