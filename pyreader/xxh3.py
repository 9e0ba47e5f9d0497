"""XXH3-64 (seed 0, default secret) in pure Python, for container.md §1.4.

Written from the published XXH3 algorithm (xxHash 0.8.x, `XXH3_64bits`).
Inputs over 240 bytes use numpy for the per-block accumulation: inside one
1024-byte block the accumulator updates are plain sums modulo 2^64 (the
scramble only runs between blocks), so a block's 16 stripes can be summed
as vectors. Checked against container.md §1.4's test values and against the
`xxh3` of every stream and chunk of spec/vectors/valid (selfcheck.py).
"""

import struct

import numpy as np

M64 = (1 << 64) - 1

P32_1 = 0x9E3779B1
P32_2 = 0x85EBCA77
P32_3 = 0xC2B2AE3D
P64_1 = 0x9E3779B185EBCA87
P64_2 = 0xC2B2AE3D27D4EB4F
P64_3 = 0x165667B19E3779F9
P64_4 = 0x85EBCA77C2B2AE63
P64_5 = 0x27D4EB2F165667C5
PMX1 = 0x165667919E3779F9
PMX2 = 0x9FB21C651E98DF25

SECRET = bytes([
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
])


def _r64(b, i):
    return struct.unpack_from("<Q", b, i)[0]


def _r32(b, i):
    return struct.unpack_from("<I", b, i)[0]


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _fold(a, b):
    p = a * b
    return (p & M64) ^ (p >> 64)


def _avalanche(h):
    h ^= h >> 37
    h = (h * PMX1) & M64
    return h ^ (h >> 32)


def _xxh64_avalanche(h):
    h ^= h >> 33
    h = (h * P64_2) & M64
    h ^= h >> 29
    h = (h * P64_3) & M64
    return h ^ (h >> 32)


def _rrmxmx(h, n):
    h ^= _rotl(h, 49) ^ _rotl(h, 24)
    h = (h * PMX2) & M64
    h ^= (h >> 35) + n
    h = (h * PMX2) & M64
    return h ^ (h >> 28)


def _mix16(b, i, s):
    return _fold(_r64(b, i) ^ _r64(SECRET, s), _r64(b, i + 8) ^ _r64(SECRET, s + 8))


def _short(b):
    n = len(b)
    if n == 0:
        return _xxh64_avalanche(_r64(SECRET, 56) ^ _r64(SECRET, 64))
    if n <= 3:
        combined = (b[0] << 16) | (b[n >> 1] << 24) | b[n - 1] | (n << 8)
        return _xxh64_avalanche(combined ^ (_r32(SECRET, 0) ^ _r32(SECRET, 4)))
    if n <= 8:
        x = ((_r32(b, n - 4) + (_r32(b, 0) << 32)) & M64) ^ (_r64(SECRET, 8) ^ _r64(SECRET, 16))
        return _rrmxmx(x, n)
    if n <= 16:
        lo = _r64(b, 0) ^ (_r64(SECRET, 24) ^ _r64(SECRET, 32))
        hi = _r64(b, n - 8) ^ (_r64(SECRET, 40) ^ _r64(SECRET, 48))
        swapped = int.from_bytes(lo.to_bytes(8, "little"), "big")
        return _avalanche((n + swapped + hi + _fold(lo, hi)) & M64)
    acc = (n * P64_1) & M64
    if n <= 128:
        if n > 32:
            if n > 64:
                if n > 96:
                    acc += _mix16(b, 48, 96) + _mix16(b, n - 64, 112)
                acc += _mix16(b, 32, 64) + _mix16(b, n - 48, 80)
            acc += _mix16(b, 16, 32) + _mix16(b, n - 32, 48)
        acc += _mix16(b, 0, 0) + _mix16(b, n - 16, 16)
        return _avalanche(acc & M64)
    for i in range(8):
        acc += _mix16(b, 16 * i, 16 * i)
    acc = _avalanche(acc & M64)
    for i in range(8, n // 16):
        acc += _mix16(b, 16 * i, 16 * (i - 8) + 3)
    acc += _mix16(b, n - 16, 136 - 17)
    return _avalanche(acc & M64)


_SEC_WORDS = np.frombuffer(SECRET, dtype="<u8", count=24)
# key of lane i of stripe s: the 64-bit word at secret byte 8*s + 8*i.
_STRIPE_KEYS = np.array(
    [np.frombuffer(SECRET[8 * s:8 * s + 64], dtype="<u8") for s in range(16)], dtype=np.uint64)
_SWAP = np.array([1, 0, 3, 2, 5, 4, 7, 6])


def _accumulate(acc, data, keys):
    """acc (8 Python ints) += the stripes of data (n x 8 uint64) with keys (n x 8)."""
    if data.shape[0] == 0:
        return acc
    dk = data ^ keys
    prod = (dk & np.uint64(0xFFFFFFFF)) * (dk >> np.uint64(32))
    with np.errstate(over="ignore"):
        prod_sum = prod.sum(axis=0, dtype=np.uint64)
        data_sum = data.sum(axis=0, dtype=np.uint64)
    return [(acc[i] + int(prod_sum[i]) + int(data_sum[_SWAP[i]])) & M64 for i in range(8)]


def _scramble(acc):
    out = []
    for i in range(8):
        a = acc[i]
        a ^= a >> 47
        a ^= _r64(SECRET, 128 + 8 * i)
        out.append((a * P32_1) & M64)
    return out


def _long(b):
    n = len(b)
    acc = [P32_3, P64_1, P64_2, P64_3, P64_4, P32_2, P64_5, P32_1]
    nb_blocks = (n - 1) // 1024
    words = np.frombuffer(b, dtype="<u8", count=(n // 8)).astype(np.uint64)
    for k in range(nb_blocks):
        block = words[k * 128:(k + 1) * 128].reshape(16, 8)
        acc = _scramble(_accumulate(acc, block, _STRIPE_KEYS))
    nb_stripes = ((n - 1) - 1024 * nb_blocks) // 64
    tail = words[nb_blocks * 128:nb_blocks * 128 + nb_stripes * 8].reshape(nb_stripes, 8)
    acc = _accumulate(acc, tail, _STRIPE_KEYS[:nb_stripes])
    last = np.frombuffer(b[n - 64:], dtype="<u8").astype(np.uint64).reshape(1, 8)
    last_key = np.frombuffer(SECRET[192 - 64 - 7:192 - 7], dtype="<u8").reshape(1, 8)
    acc = _accumulate(acc, last, last_key)
    result = (n * P64_1) & M64
    for i in range(4):
        result += _fold(acc[2 * i] ^ _r64(SECRET, 11 + 16 * i),
                        acc[2 * i + 1] ^ _r64(SECRET, 11 + 16 * i + 8))
    return _avalanche(result & M64)


def xxh3_64(data):
    b = bytes(data)
    if len(b) <= 240:
        return _short(b)
    return _long(b)


if __name__ == "__main__":
    assert xxh3_64(b"") == 0x2D06800538D394C2, hex(xxh3_64(b""))
    assert xxh3_64(b"abc") == 0x78AF5F94892F3950, hex(xxh3_64(b"abc"))
    print("ok")
