"""Codec record checks and decoders, from container.md §10 and spec/codecs*.md.

Codecs: f32, f16, bf16, raw (container.md §10.4), q8_0 and int4-g128
(codecs.md §0, §1, §5), bf16-huffman (codecs-bf16-exp.md §1-§3, §5).
Float conversions: container.md §10.5, as bit-pattern functions in numpy.
"""

import numpy as np

from errors import BoltError

DT_SIZE = {1: 4, 2: 2, 3: 2, 4: 8, 5: 1, 6: 2, 7: 4, 8: 8, 9: 1, 10: 2, 11: 4, 12: 8,
           13: 1, 14: 1, 15: 1, 16: 1, 17: 8}
FLOAT_DT = {1: "f32", 2: "f16", 3: "bf16", 4: "f64"}
STORED = {"f32": "f32", "f16": "f16", "bf16": "bf16"}
ELEM = {"f32": 4, "f16": 2, "bf16": 2}
NO_NATIVE = ("int4-g128",)  # codecs of more than one stream whose native is not their bytes
CODECS = ("f32", "f16", "bf16", "raw", "q8_0", "int4-g128", "bf16-huffman")


# ---- float conversions (container.md §10.5), on uint arrays of bit patterns
def f32_to_bf16(u):
    u = u.astype(np.uint64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16  # [C-10.5.1]
    r = np.where(nan, (u >> 16) | 0x40, r)  # [C-10.5.2]
    return (r & 0xFFFF).astype(np.uint16)


def bf16_to_f32(b):
    return b.astype(np.uint32) << 16  # [C-10.5.3]


def f32_to_f16(u):
    with np.errstate(over="ignore", invalid="ignore"):
        h = u.astype(np.uint32).view(np.float32).astype(np.float16).view(np.uint16)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, ((u >> 16) & 0x8000) | 0x7E00, h).astype(np.uint16)  # [C-10.5.4]


def f16_to_f32(h):
    h = h.astype(np.uint16)
    f = h.view(np.float16).astype(np.float32).view(np.uint32)
    hu = h.astype(np.uint32)
    nan = (hu & 0x7FFF) > 0x7C00
    q = ((hu & 0x8000) << 16) | 0x7FC00000 | ((hu & 0x3FF) << 13)  # [C-10.5.5]
    return np.where(nan, q, f).astype(np.uint32)


def f64_to_f32(d):
    with np.errstate(over="ignore", invalid="ignore"):
        return d.view(np.float64).astype(np.float32).view(np.uint32)  # [C-10.5.6]


def to_f32_bits(kind, arr):
    if kind == "f32":
        return arr.view(np.uint32)
    if kind == "f16":
        return f16_to_f32(arr.view(np.uint16))
    if kind == "bf16":
        return bf16_to_f32(arr.view(np.uint16))
    return f64_to_f32(arr.view(np.uint64))


def from_f32_bits(target, u):
    if target == "f32":
        return u.astype("<u4").tobytes()
    if target == "f16":
        return f32_to_f16(u).astype("<u2").tobytes()
    return f32_to_bf16(u).astype("<u2").tobytes()


def convert(stored_kind, raw, target):
    """Stored elements of kind f32/f16/bf16 to a float target ([C-10.5.7])."""
    if stored_kind == target:
        return bytes(raw)
    arr = np.frombuffer(raw, dtype="<u%d" % ELEM[stored_kind])
    return from_f32_bits(target, to_f32_bits(stored_kind, arr))


def bad(t, msg):
    return BoltError("DATA_LOSS", "tensor %r: %s" % (t["name"], msg), t["name"])


def elements(t):
    n = 1
    for d in t["shape"]:
        n *= d
    return n


def rows(t):
    return t["shape"][0] if t["shape"] else 1


def check_row_chunks(t, s, row_bytes):
    for c in s["chunks"]:
        if c["raw_offset"] != c["first_row"] * row_bytes or c["raw_length"] != c["row_count"] * row_bytes:
            raise bad(t, "stream %r chunk is not whole rows" % s["role"])


def param(t, key):
    for p in t["codec"]["params"]:
        if p["key"] == key:
            return p["value"]
    return None


# ---- raw element codecs (container.md §10.4)
def check_raw(t):
    cid = t["codec"]["id"]
    if t["codec"]["params"]:  # [C-10.4.1]
        raise bad(t, "codec %s takes no parameters" % cid)
    if cid != "raw" and t["dtype"] not in FLOAT_DT:
        raise bad(t, "codec %s does not accept this dtype" % cid)
    if len(t["streams"]) != 1 or t["streams"][0]["role"] != "data":
        raise bad(t, "codec %s needs exactly one stream, role data" % cid)
    es = DT_SIZE[t["dtype"]] if cid == "raw" else ELEM[cid]
    s = t["streams"][0]
    if s["raw_length"] != elements(t) * es:
        raise bad(t, "stream data raw_length %d, expected %d" % (s["raw_length"], elements(t) * es))
    check_row_chunks(t, s, (elements(t) // rows(t) if rows(t) else 0) * es)


def raw_stored_kind(t):
    cid = t["codec"]["id"]
    if cid != "raw":
        return cid
    return {1: "f32", 2: "f16", 3: "bf16"}.get(t["dtype"])


def decode_raw(t, streams, target):
    raw = streams[0]
    if target == "native":
        return bytes(raw)
    kind = raw_stored_kind(t)
    if kind is None:
        raise BoltError("INVALID_ARGUMENT", "tensor %r: decode target %s not offered" % (t["name"], target), t["name"])
    return convert(kind, raw, target)


# ---- block codecs (codecs.md §0)
BLOCK = {"q8_0": (32, [("blocks", 34)]), "int4-g128": (128, [("values", 64), ("scales", 2)])}


def check_block(t):
    cid = t["codec"]["id"]
    bk, streams = BLOCK[cid]
    if t["dtype"] not in FLOAT_DT:
        raise bad(t, "codec %s does not accept this dtype" % cid)
    if t["codec"]["params"]:
        raise bad(t, "codec %s takes no parameters" % cid)
    shape = t["shape"]
    if not shape:
        raise bad(t, "codec %s refuses rank 0" % cid)
    if shape[-1] % bk:
        raise bad(t, "innermost dimension is not a multiple of %d" % bk)
    if [s["role"] for s in t["streams"]] != [r for r, _ in streams]:
        raise bad(t, "codec %s needs streams %s" % (cid, [r for r, _ in streams]))
    nblocks = elements(t) // bk
    for s, (role, per) in zip(t["streams"], streams):
        if s["raw_length"] != nblocks * per:
            raise bad(t, "stream %r raw_length %d, expected %d" % (role, s["raw_length"], nblocks * per))
        if len(shape) == 1 and s["chunks"]:
            raise bad(t, "stream %r of a 1-D tensor has chunks" % role)
        row_blocks = (elements(t) // shape[0]) // bk if shape[0] else 0
        check_row_chunks(t, s, row_blocks * per)


def _mul(q, d):
    with np.errstate(all="ignore"):
        return (q.astype(np.float32) * d.view(np.float32)).view(np.uint32)


def decode_block(t, streams, target):
    cid = t["codec"]["id"]
    if cid == "q8_0":
        raw = streams[0]
        if target == "native":
            return bytes(raw)
        blk = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 34)
        d = f16_to_f32(blk[:, 0:2].copy().view("<u2").reshape(-1))
        q = blk[:, 2:].view(np.int8)
        y = _mul(q, np.repeat(d, 32).reshape(-1, 32))
    else:
        if target == "native":
            raise BoltError("INVALID_ARGUMENT", "tensor %r: codec int4-g128 has no native target" % t["name"], t["name"])
        v = np.frombuffer(streams[0], dtype=np.uint8).reshape(-1, 64)
        d = f16_to_f32(np.frombuffer(streams[1], dtype="<u2"))
        nib = np.empty((v.shape[0], 128), dtype=np.int16)
        nib[:, 0::2] = v & 15
        nib[:, 1::2] = v >> 4
        y = _mul(nib - 8, np.repeat(d, 128).reshape(-1, 128))
    return from_f32_bits(target, y.reshape(-1))


# ---- bf16-huffman (codecs-bf16-exp.md)
def check_bf16_huffman(t):
    keys = {p["key"]: p["value"] for p in t["codec"]["params"]}
    if set(keys) - {"exp_code_lengths", "from_f32"}:
        raise bad(t, "bf16-huffman: unknown parameter")
    f = keys.get("from_f32")
    if f is not None and f["type"] != 11:
        raise bad(t, "bf16-huffman: from_f32 is not BOOL")
    from_f32 = bool(f and f["b"])
    if not ((t["dtype"] == 3 and not from_f32) or (t["dtype"] == 1 and from_f32)):
        raise bad(t, "bf16-huffman: dtype and from_f32 disagree")
    lv = keys.get("exp_code_lengths")
    if lv is None or lv["type"] != 12:
        raise bad(t, "bf16-huffman: exp_code_lengths missing or not STRING")
    txt = lv["s"]
    if len(txt) != 256 or any(c not in b"0123456789abc" for c in txt):
        raise bad(t, "bf16-huffman: exp_code_lengths is not 256 digits 0..c")
    lengths = [int(chr(c), 16) for c in txt]
    used = [(l, e) for e, l in enumerate(lengths) if l]
    kraft = sum(1 << (12 - l) for l, _ in used)
    n = elements(t)
    single = len(used) == 1 and used[0][0] == 1
    if not (kraft == 4096 or single or (not used and n == 0)):
        raise bad(t, "bf16-huffman: code lengths are not a complete prefix code")
    if [s["role"] for s in t["streams"]] != ["sign_mantissa", "exponents"]:
        raise bad(t, "bf16-huffman: streams must be sign_mantissa, exponents")
    sm, ex = t["streams"]
    if sm["raw_length"] != n:
        raise bad(t, "bf16-huffman: sign_mantissa raw_length %d, expected %d" % (sm["raw_length"], n))
    if bool(sm["chunks"]) != bool(ex["chunks"]) or len(sm["chunks"]) != len(ex["chunks"]):
        raise bad(t, "bf16-huffman: the two streams' chunk indexes differ")
    row_elems = n // rows(t) if rows(t) else 0
    for a, b in zip(sm["chunks"], ex["chunks"]):
        if (a["first_row"], a["row_count"]) != (b["first_row"], b["row_count"]):
            raise bad(t, "bf16-huffman: the two streams' chunks cover other rows")
    check_row_chunks(t, sm, row_elems)
    return sorted(used)


def _canonical(used):
    table = {}
    code, prev = 0, None
    for l, e in used:
        if prev is not None:
            code = (code + 1) << (l - prev)
        table[(l, code)] = e
        prev = l
    if len(used) == 1:  # the single exponent's code is the bit 0 ([X-3.1])
        table = {(1, 0): used[0][1]}
    return table


def _decode_lane(t, lane, m, table, maxlen):
    out = np.empty(m, dtype=np.uint16)
    bits = int.from_bytes(lane, "big")
    nbits = len(lane) * 8
    pos = 0
    for i in range(m):
        l = 1
        while True:
            if pos + l > nbits:
                raise bad(t, "bf16-huffman: lane ends inside a code word")
            code = (bits >> (nbits - pos - l)) & ((1 << l) - 1)
            e = table.get((l, code))
            if e is not None:
                break
            l += 1
            if l > maxlen:
                raise bad(t, "bf16-huffman: bit pattern that is not a code word")
        out[i] = e
        pos += l
    if (pos + 7) // 8 != len(lane):
        raise bad(t, "bf16-huffman: lane has bytes no code word reaches")
    if pos % 8 and bits & ((1 << (8 - pos % 8)) - 1):
        raise bad(t, "bf16-huffman: unused low bits of a lane are not zero")
    return out


def _decode_piece(t, data, m, table, maxlen):
    if m < 16384:
        return _decode_lane(t, data, m, table, maxlen)
    if len(data) < 12:
        raise bad(t, "bf16-huffman: piece shorter than its lane header")
    lens = [int.from_bytes(data[4 * k:4 * k + 4], "little") for k in range(3)]
    if sum(lens) > len(data) - 12:
        raise bad(t, "bf16-huffman: lane header lengths exceed the bytes")
    lens.append(len(data) - 12 - sum(lens))
    parts, pos = [], 12
    for k in range(4):
        cnt = (k + 1) * m // 4 - k * m // 4
        parts.append(_decode_lane(t, data[pos:pos + lens[k]], cnt, table, maxlen))
        pos += lens[k]
    return np.concatenate(parts)


def decode_bf16_huffman(t, streams, target, used):
    sm, ex = streams
    table = _canonical(used)
    maxlen = max([l for l, _ in used] or [1])
    n = elements(t)
    row_elems = n // rows(t) if rows(t) else 0
    ex_chunks = t["streams"][1]["chunks"]
    if ex_chunks:
        pieces = [(ex[c["raw_offset"]:c["raw_offset"] + c["raw_length"]], c["row_count"] * row_elems)
                  for c in ex_chunks]
    else:
        pieces = [(ex, n)]
    exps = np.concatenate([_decode_piece(t, d, m, table, maxlen) for d, m in pieces] or
                          [np.empty(0, np.uint16)])
    s = np.frombuffer(sm, dtype=np.uint8).astype(np.uint16)
    b = ((s & 0x80) << 8) | (exps << 7) | (s & 0x7F)
    if target in ("native", "bf16"):
        return b.astype("<u2").tobytes()
    return from_f32_bits(target, bf16_to_f32(b))


def check_record(t):
    """Record validation (container.md §10.3); returns codec-specific state."""
    cid = t["codec"]["id"]
    if cid in ("f32", "f16", "bf16", "raw"):
        return check_raw(t)
    if cid in BLOCK:
        return check_block(t)
    return check_bf16_huffman(t)


def decode(t, streams, target, state):
    cid = t["codec"]["id"]
    if cid in ("f32", "f16", "bf16", "raw"):
        return decode_raw(t, streams, target)
    if cid in BLOCK:
        return decode_block(t, streams, target)
    return decode_bf16_huffman(t, streams, target, state)
