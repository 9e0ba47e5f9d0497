#!/usr/bin/env python3
"""Differential check of pyreader/zstd.py against the zstd command line tool
(skipped when it is not installed): varied inputs and levels round-trip."""

import os
import random
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import zstd  # noqa: E402


def inputs():
    rnd = random.Random(7)
    yield b""
    yield b"a"
    yield bytes(100000)
    yield b"".join(b"tensor %d weight %f\n" % (i, i * 0.37) for i in range(5000))
    yield bytes(rnd.getrandbits(8) for _ in range(3000))
    yield bytes(rnd.choice(b"abcdefgh") for _ in range(200000))
    yield bytes(rnd.choice([0, 0, 0, 1, 2, 0x3F, 0x80]) for _ in range(70000))
    import struct
    yield b"".join(struct.pack("<f", rnd.gauss(0, 0.02)) for _ in range(40000))


def main():
    if not shutil.which("zstd"):
        print("zstd tool not installed: skipped")
        return 0
    n = 0
    for data in inputs():
        for level in ("-1", "-3", "-19", "--fast=5"):
            comp = subprocess.run(["zstd", "-q", "-c", level], input=data, capture_output=True, check=True).stdout
            got = zstd.decompress(comp, len(data))
            assert got == data, (len(data), level)
            n += 1
    print("%d zstd round trips passed" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
