#!/usr/bin/env python3
"""Runs the hostile cases of issue 15 against a bolt-pack binary, as a user
would, and prints one Markdown row per case: exit code, the first line of the
message, peak RSS and CPU time of the bolt-pack process, and what it left in
its output folder.

    bench/issue15_cases.py BOLT_PACK [WORK_DIR]

The files are made here (GGUF and safetensors by hand, .bolt files by
bolt-pack from the shipped model or taken from spec/vectors/invalid); a .bolt
that needs a rewritten manifest (32 MiB of empty tensor records) is measured
by tests/parser_limits_test.cc instead. Measurement only, not a test: the
tests assert each behaviour (the names in the last column).
"""
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "testdata/tinystories-656k")


# ---- files ------------------------------------------------------------------
def gguf_str(s):
    b = s if isinstance(s, bytes) else s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf(tensors=(), kvs=b"", n_kv=0, data=b""):
    """tensors: (name bytes, dims, ggml type, offset); kvs: encoded pairs."""
    parts = [b"GGUF" + struct.pack("<IQQ", 3, len(tensors), n_kv) + kvs]
    for name, dims, typ, off in tensors:
        parts.append(gguf_str(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims))
        parts.append(struct.pack("<IQ", typ, off))
    out = b"".join(parts)  # one join: appending to bytes is quadratic
    return out + b"\0" * (-len(out) % 32) + data


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def safetensors_f32(path, tensors):
    header, blobs, off = {}, [], 0
    for name, shape, blob in tensors:
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return write(path, struct.pack("<Q", len(h)) + h + b"".join(blobs))


# ---- running ----------------------------------------------------------------
def run(argv, out_dir=None, fsize=None, kill_after=None, sig=signal.SIGKILL, timeout=120):
    """Runs bolt-pack; returns (rc or -signal, message, peak MB, cpu s, files left).

    Peak RSS and CPU come from GNU time, a small process between this one and
    bolt-pack: a child's ru_maxrss starts from its parent's size (this script
    holds the 128 MB model). Output goes to a file, so a million lines never
    block on a pipe. A signalled run is started directly and its process
    signalled; only its exit and leftovers are reported.
    """
    if out_dir:
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)
    log, tfile = tempfile.TemporaryFile(), tempfile.mktemp()
    cmd = list(argv)
    if fsize:
        cmd = ["prlimit", f"--fsize={fsize}"] + cmd
    if kill_after is None:
        cmd = ["/usr/bin/time", "-o", tfile, "-f", "%M %U %S"] + cmd
    # A background shell ignores SIGINT in what it starts; the signalled
    # runs get the default back, as from a terminal.
    default_int = (lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) if kill_after is not None else None
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, preexec_fn=default_int)
    try:
        p.wait(timeout=kill_after if kill_after is not None else timeout)
    except subprocess.TimeoutExpired:
        p.send_signal(sig if kill_after is not None else signal.SIGKILL)
        p.wait()
    rc = p.returncode
    log.seek(0)
    lines = [l for l in log.read().decode(errors="replace").splitlines() if l.strip()]
    lines = [l for l in lines if not l.startswith("Run with --help")]
    msg = lines[-1] if lines else ""  # an error, or "wrote ..." / "OK ...", comes last
    if kill_after is not None and rc == -sig:
        msg = f"(killed by {signal.Signals(sig).name} while running)"
    mb = cpu = 0.0
    if os.path.exists(tfile):
        fields = open(tfile).read().split()[-3:]
        os.remove(tfile)
        if len(fields) == 3:
            mb, cpu = int(fields[0]) / 1024, float(fields[1]) + float(fields[2])
    left = sorted(os.listdir(out_dir)) if out_dir else []
    return rc, msg.strip()[:110], mb, cpu, left


ROWS = []


def row(case, result, tests):
    rc, msg, mb, cpu, left = result
    ROWS.append(f"| {case} | {rc} | `{msg.replace('|', '/')}` | {mb:.0f} MB | {cpu:.2f} s | "
                f"{', '.join(left) if left else 'none'} | {tests} |")


def main():
    bp = os.path.abspath(sys.argv[1])
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="issue15-")
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "out")
    w = lambda name: os.path.join(work, name)

    # 1. A flipped byte in a stored stream.
    m = w("m.bolt")
    subprocess.run([bp, "convert", os.path.join(MODEL, "model.safetensors"), "-o", m], check=True, capture_output=True)
    data = bytearray(open(m, "rb").read())
    data[5000] ^= 0x55
    c = write(w("c.bolt"), bytes(data))
    for fmt, extra in ((".safetensors", []), (".bolt", ["--codec", "*=q8_0"]), (".gguf", [])):
        row(f"1. byte 5000 flipped, convert to {fmt} {' '.join(extra)}",
            run([bp, "convert", c, "-o", os.path.join(out, "o" + fmt)] + extra, out), "DecodeChecksum.ConvertRefusesCorruptInputToEveryOutputAndWritesNothing")

    # 2. Sizes from the file.
    bomb = os.path.join(ROOT, "spec/vectors/invalid/zstd_raw_length_over_limit.bolt")
    row("2. zstd raw_length past the limit, convert to safetensors",
        run([bp, "convert", bomb, "-o", os.path.join(out, "x.safetensors")], out), "DecodeChecksum.AZstdStreamMustHoldItsRawLength*, spec vector")
    u8 = gguf(kvs=gguf_str("a") + struct.pack("<IIQ", 9, 0, 1 << 24) + b"\0" * (1 << 24), n_kv=1)
    row("2. GGUF, one U8 array of 2^24 (16.8 MB), inspect", run([bp, "inspect", write(w("u8.gguf"), u8)]),
        "ParserLimits.GgufArrayOf16MBytesIsRefusedBeforeItIsBuilt")
    empty = gguf([(b"t%d" % i, [0], 0, 0) for i in range(1000000)])
    row("2. GGUF, 1M zero-size tensors (39 MB), inspect", run([bp, "inspect", write(w("1m.gguf"), empty)]),
        "ParserLimits.GgufMillionTensorsAreListedWithinBounds")
    row("2. same, convert to .safetensors", run([bp, "convert", w("1m.gguf"), "-o", os.path.join(out, "1m.safetensors")], out),
        "ParserLimits.GgufMillionTensorsConvertToSafetensorsWithinBounds")
    row("2. same, convert to .bolt", run([bp, "convert", w("1m.gguf"), "-o", os.path.join(out, "1m.bolt")], out),
        "BoltManifestBounds.MillionTensors*")
    row("2. that .bolt (1M tensors), inspect", run([bp, "inspect", os.path.join(out, "1m.bolt")]), "BoltManifestBounds.MillionTensors*")
    shutil.copy(os.path.join(out, "1m.bolt"), w("1m.bolt"))
    row("2. that .bolt, verify", run([bp, "verify", w("1m.bolt")]), "BoltManifestBounds.MillionTensors*")
    row("2. that .bolt, convert to .bolt", run([bp, "convert", w("1m.bolt"), "-o", os.path.join(out, "c.bolt")], out),
        "BoltManifestBounds.MillionTensors*")
    row("2. that .bolt, convert to .gguf", run([bp, "convert", w("1m.bolt"), "-o", os.path.join(out, "c.gguf")], out),
        "BoltManifestBounds.MillionTensors*")
    h = b'{"w":{"dtype":"F32","shape":[' + b",".join([b"1"] * 10000000) + b'],"data_offsets":[0,4]}}'
    st = write(w("shape.safetensors"), struct.pack("<Q", len(h)) + h + b"\0\0\0\0")
    row("2. safetensors, a shape of 10M entries (20 MB header), inspect", run([bp, "inspect", st]),
        "ParserLimits.SafetensorsShapeOf10MEntriesIsRefusedWhileParsed")

    # 3. Interrupted writes: a 128 MB model, signalled during the convert.
    def finite(n):  # random f32s with the exponent's top bit clear: no NaN or infinity
        b = bytearray(os.urandom(4 * n))
        b[3::4] = bytes(b[3::4]).translate(bytes(x & 0xBF for x in range(256)))
        return bytes(b)

    big = safetensors_f32(w("big.safetensors"), [(f"layer{i}.weight", [1024, 4096], finite(1024 * 4096))
                                                 for i in range(8)])
    # iq2_xxs: its search makes the convert last seconds, so a signal lands mid-write.
    row("3. convert --codec '*=iq2_xxs' (128 MB), not interrupted",
        run([bp, "convert", big, "-o", os.path.join(out, "o.bolt"), "--codec", "*=iq2_xxs"], out), "(the run signalled below)")
    for sig, after in ((signal.SIGKILL, 0.3), (signal.SIGKILL, 1.5), (signal.SIGKILL, 3.0), (signal.SIGTERM, 1.0),
                       (signal.SIGINT, 1.0), (signal.SIGHUP, 1.0)):
        row(f"3. {signal.Signals(sig).name} after {after} s of that convert",
            run([bp, "convert", big, "-o", os.path.join(out, "o.bolt"), "--codec", "*=iq2_xxs"], out,
                kill_after=after, sig=sig), "NoLeftovers.*")
    row("3. ulimit -f 10 MB, convert (128 MB)",
        run([bp, "convert", big, "-o", os.path.join(out, "o.bolt")], out, fsize=10 << 20), "NoLeftovers.AFileSizeLimitFailsCleanly*")

    # 4. Outputs bolt-pack would refuse.
    bad = write(w("ff.gguf"), gguf([(b"\xff\xfe.w", [4], 0, 0)], data=b"\0" * 16))
    row("4. GGUF tensor named \\xff\\xfe.w, convert to .bolt", run([bp, "convert", bad, "-o", os.path.join(out, "o.bolt")], out),
        "ImportNames.NonUtf8GgufTensorNameIsRefusedNamingTheInput")
    allq = os.path.join(ROOT, "testdata/gguf/ggml-writer-all.gguf")
    row("4. GGUF with Q4_K, Q5_1, IQ* tensors, convert to .bolt",
        run([bp, "convert", allq, "-o", os.path.join(out, "all.bolt")], out), "GgmlPassThrough.GgmlWriterAllConvertsVerifiesAndRoundTrips")
    shutil.copy(os.path.join(out, "all.bolt"), w("all.bolt"))
    row("4. that .bolt, verify", run([bp, "verify", w("all.bolt")]), "GgmlPassThrough.GgmlWriterAllConvertsVerifiesAndRoundTrips")
    for vec in ("codec_record_role", "compression_out_of_range"):
        row(f"4. .bolt copy of spec vector {vec}",
            run([bp, "convert", os.path.join(ROOT, f"spec/vectors/invalid/{vec}.bolt"), "-o", os.path.join(out, "o.bolt")], out),
            "CopyRules.RecordsTheReaderRefusesAreNotCopied")

    # 5. NVFP4 export to GGUF and llama.cpp's rules.
    f16 = os.path.join(MODEL, "TinyStories-656K.f16.gguf")
    row("5. convert f16 GGUF --codec '*.weight=nvfp4' to .gguf",
        run([bp, "convert", f16, "-o", os.path.join(out, "t.gguf"), "--codec", "*.weight=nvfp4"], out), "LlamaNvfp4.*")
    if os.path.exists(os.path.join(out, "t.gguf")):
        shutil.copy(os.path.join(out, "t.gguf"), w("t.gguf"))
        row("5. that GGUF, verify --target llama.cpp", run([bp, "verify", "--target", "llama.cpp", w("t.gguf")]),
            "LlamaNvfp4.VerifyRejectsTheScaleBesideTheEmbedding")
        ft = [l for l in subprocess.run([bp, "inspect", w("t.gguf")], capture_output=True, text=True).stdout.splitlines()
              if "general.file_type" in l]
        ROWS.append(f"| 5. that GGUF's general.file_type | | `{ft[0].strip() if ft else 'absent'}` | | | | LlamaNvfp4* |")

    # 6. Non-regular files and names.
    fifo = w("fifo.gguf")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    for cmd in ("inspect", "verify"):
        row(f"6. a FIFO, {cmd}", run([bp, cmd, fifo], timeout=10), "NonRegular.TheCliRefusesAFifoAFolderAndADeviceAsUsageErrors")
    row("6. a folder, convert", run([bp, "convert", work, "-o", os.path.join(out, "o.bolt")], out), "NonRegular.TheCliRefusesAFifoAFolderAndADeviceAsUsageErrors")
    nul = write(w("nul.gguf"), gguf([(b"a\0b\x1b[31m", [4], 0, 0)], data=b"\0" * 16))
    row("6. GGUF tensor named a\\0b\\x1b[31m, inspect", run([bp, "inspect", nul]), "Escape.InspectTextShowsGgufNamesKeysAndValuesEscaped, Escape.ErrorNamingATensorWithANulByteIsWhole")
    row("6. same, convert", run([bp, "convert", nul, "-o", os.path.join(out, "o.bolt")], out), "Escape.InspectTextShowsGgufNamesKeysAndValuesEscaped, Escape.ErrorNamingATensorWithANulByteIsWhole")
    for label, name in (("empty", b""), ("8 KiB", b"x" * 8192)):
        g = write(w("n.gguf"), gguf([(name, [4], 0, 0)], data=b"\0" * 16))
        row(f"6. GGUF tensor name {label}, convert", run([bp, "convert", g, "-o", os.path.join(out, "o.bolt")], out),
            "ImportNames.*")

    print("| case | exit | message (first line) | peak RSS | CPU | left in OUT | tests |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(ROWS))


if __name__ == "__main__":
    main()
