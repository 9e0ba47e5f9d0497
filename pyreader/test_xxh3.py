#!/usr/bin/env python3
"""Differential check of pyreader/xxh3.py against the xxHash library (libxxhash,
through ctypes, only here in a test: the reader itself uses none), over every
length 0..2200 (each of XXH3's length classes and block boundaries) and a few
large inputs. Skipped when libxxhash is not installed."""

import ctypes
import ctypes.util
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from xxh3 import xxh3_64  # noqa: E402


def main():
    name = ctypes.util.find_library("xxhash")
    if not name:
        print("libxxhash not installed: skipped")
        return 0
    lib = ctypes.CDLL(name)
    lib.XXH3_64bits.restype = ctypes.c_uint64
    lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    rnd = random.Random(3)
    data = bytes(rnd.getrandbits(8) for _ in range(1 << 17))
    lengths = list(range(2201)) + [4095, 4096, 4097, 65536, 100003, 1 << 17]
    for n in lengths:
        want = lib.XXH3_64bits(data[:n], n)
        got = xxh3_64(data[:n])
        assert got == want, (n, hex(got), hex(want))
    print("%d xxh3 lengths agree with libxxhash" % len(lengths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
