#!/usr/bin/env python3
"""Unit checks of the decoders that spec/vectors does not cover yet (int4-g128,
bf16-huffman, q8_0's non-finite scales), with expectations worked out by hand
from codecs.md and codecs-bf16-exp.md. Run: python3 pyreader/test_codecs.py"""

import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bolt_codecs as c  # noqa: E402
from errors import BoltError  # noqa: E402


def val(ty, **kw):
    v = {"type": ty, "u": 0, "i": 0, "f32": 0, "f64": 0, "b": False, "s": b"", "array": None}
    v.update(kw)
    return v


def tensor(codec, shape, dtype, roles, raw_lengths, params=()):
    return {"name": "t", "shape": list(shape), "dtype": dtype,
            "codec": {"id": codec, "params": [{"key": k, "value": v} for k, v in params]},
            "streams": [{"role": r, "raw_length": n, "chunks": []} for r, n in zip(roles, raw_lengths)]}


def f32s(b):
    return [hex(x) for x in struct.unpack("<%dI" % (len(b) // 4), b)]


def test_int4():
    t = tensor("int4-g128", [1, 128], 1, ["values", "scales"], [64, 2])
    c.check_record(t)
    values = bytes([0x9F] + [0x88] * 62 + [0x08])  # elems 0,1 = 15-8, 9-8; 126 = 8-8 (low nibble), 127 = 0-8
    scales = struct.pack("<H", 0x3C00)  # 1.0
    y = c.decode(t, [values, scales], "f32", None)
    got = struct.unpack("<128f", y)
    assert got[0] == 7.0 and got[1] == 1.0 and got[126] == 0.0 and got[127] == -8.0, got[:2]
    bf = c.decode(t, [values, scales], "bf16", None)
    assert bf[:4] == bytes.fromhex("e040803f"), bf[:4].hex()  # 7.0, 1.0
    try:
        c.decode(t, [values, scales], "native", None)
        raise AssertionError("int4-g128 has no native target")
    except BoltError as e:
        assert e.cls == "INVALID_ARGUMENT"
    bad = tensor("int4-g128", [1, 128], 1, ["scales", "values"], [2, 64])
    try:
        c.check_record(bad)
        raise AssertionError("stream order")
    except BoltError as e:
        assert e.cls == "DATA_LOSS"


def test_q8_0_nonfinite():
    t = tensor("q8_0", [64], 1, ["blocks"], [68])
    c.check_record(t)
    inf_block = struct.pack("<H", 0x7C00) + bytes([0, 1, 0xFF] + [0] * 29)
    nan_block = struct.pack("<H", 0x7D00) + bytes([0, 1] + [0] * 30)
    y = f32s(c.decode(t, [inf_block + nan_block], "f32", None))
    assert y[0] == "0xffc00000" and y[1] == "0x7f800000" and y[2] == "0xff800000", y[:3]
    assert y[32] == "0x7fe00000" and y[33] == "0x7fe00000", y[32:34]  # 0x7D00 widened and quieted


def huff_lengths(d):
    s = ["0"] * 256
    for e, l in d.items():
        s[e] = "%x" % l
    return val(12, s="".join(s).encode())


def test_bf16_huffman_one_lane():
    # canonical codes, sorted by (length, exponent): 127 -> 0, 126 -> 10, 128 -> 11
    t = tensor("bf16-huffman", [2, 3], 3, ["sign_mantissa", "exponents"], [6, 2],
               [("exp_code_lengths", huff_lengths({127: 1, 126: 2, 128: 2}))])
    used = c.check_record(t)
    # bits 0 10 11 0 0 10 = 0101 1001 0(000 0000): exponents 127, 126, 128, 127, 127, 126
    ex = bytes([0b01011001, 0b00000000])
    sm = bytes([0x00, 0x80, 0x40, 0x01, 0xFF, 0x7F])
    y = c.decode(t, [sm, ex], "bf16", used)
    want = [0x3F80, 0xBF00, 0x4040, 0x3F81, 0xBFFF, 0x3F7F]
    assert list(struct.unpack("<6H", y)) == want, [hex(x) for x in struct.unpack("<6H", y)]
    for bad_ex, why in ((bytes([0b01011001]), "ends inside a code word"),
                        (bytes([0b01011001, 0b00100000]), "unused bits not zero"),
                        (bytes([0b01011001, 0, 0]), "a byte no code word reaches")):
        try:
            c.decode(t, [sm, bad_ex], "bf16", used)
            raise AssertionError(why)
        except BoltError as e:
            assert e.cls == "DATA_LOSS", why


def test_bf16_huffman_four_lanes():
    m = 16384
    t = tensor("bf16-huffman", [m], 3, ["sign_mantissa", "exponents"], [m, 12 + m // 4],
               [("exp_code_lengths", huff_lengths({127: 1, 128: 1}))])
    used = c.check_record(t)
    lane = bytes([0b01010101]) * (m // 4 // 8)  # 4096 exponents per lane, alternating 127, 128
    n = len(lane)
    ex = struct.pack("<3I", n, n, n) + lane * 4
    y = struct.unpack("<%dH" % m, c.decode(t, [bytes(m), ex], "native", used))
    assert y[0] == 0x3F80 and y[1] == 0x4000 and y[m - 1] == 0x4000 and len(set(y)) == 2
    try:
        c.decode(t, [bytes(m), struct.pack("<3I", n, n, 3 * n) + lane * 4], "native", used)
        raise AssertionError("header lengths past the bytes")
    except BoltError as e:
        assert e.cls == "DATA_LOSS"


def test_bf16_huffman_tables():
    for lengths, ok in (({127: 1}, True), ({127: 2}, False), ({1: 1, 2: 2}, False),
                        ({1: 1, 2: 1, 3: 1}, False)):
        t = tensor("bf16-huffman", [4], 3, ["sign_mantissa", "exponents"], [4, 1],
                   [("exp_code_lengths", huff_lengths(lengths))])
        try:
            c.check_record(t)
            assert ok, lengths
        except BoltError as e:
            assert not ok and e.cls == "DATA_LOSS", lengths


if __name__ == "__main__":
    n = 0
    for name, fn in sorted(globals().items()):
        if name.startswith("test_"):
            fn()
            n += 1
    print("%d codec tests passed" % n)
