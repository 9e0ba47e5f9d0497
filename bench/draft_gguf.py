#!/usr/bin/env python3
"""Put a decoded view's tensors into a GGUF file's layout (no third-party packages).

  bench/draft_gguf.py FULL.gguf VIEW.safetensors OUT.gguf
      OUT = FULL with every tensor's bytes replaced by VIEW's tensor of the same
      name (same dtype size, same shape); metadata and layout are FULL's.
  bench/draft_gguf.py --same-tensors A.gguf B.gguf
      exit 0 when A and B hold the same tensors (names, types, shapes, bytes),
      whatever their metadata; prints the first difference otherwise.

Used by bench/draft_acceptance.sh: `bolt-pack convert X.bolt --view draft`
writes only .safetensors (with the .bolt's GGUF tensor names), so the draft
GGUF is the full view's GGUF with the draft view's values.
"""
import array
import json
import struct
import sys

# GGUF metadata value types -> struct format (scalars); 8 = string, 9 = array.
SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?",
          10: "Q", 11: "q", 12: "d"}
# The GGUF tensor types a bf16 model's views use -> safetensors dtype.
GGUF_TYPE = {0: "F32", 1: "F16", 30: "BF16"}


class Cursor:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        vals = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return vals[0] if len(vals) == 1 else vals

    def string(self):
        n = self.take("Q")
        s = self.data[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def value(self, vtype):
        if vtype in SCALAR:
            return self.take(SCALAR[vtype])
        if vtype == 8:
            return self.string()
        if vtype == 9:
            etype, n = self.take("I"), self.take("Q")
            return [self.value(etype) for _ in range(n)]
        raise ValueError("unknown GGUF value type %d" % vtype)


def read_gguf(data):
    """Returns (tensors: name -> (type, dims, absolute offset), data_start)."""
    c = Cursor(data)
    if data[:4] != b"GGUF":
        raise ValueError("not a GGUF file")
    c.pos = 4
    _version, n_tensors, n_kv = c.take("I"), c.take("Q"), c.take("Q")
    alignment = 32
    for _ in range(n_kv):
        key = c.string()
        val = c.value(c.take("I"))
        if key == "general.alignment":
            alignment = val
    infos = []
    for _ in range(n_tensors):
        name = c.string()
        nd = c.take("I")
        dims = [c.take("Q") for _ in range(nd)]
        infos.append((name, c.take("I"), dims, c.take("Q")))
    start = (c.pos + alignment - 1) // alignment * alignment
    tensors = {name: (t, dims, start + off) for name, t, dims, off in infos}
    return tensors, start


def read_safetensors(data):
    n = struct.unpack_from("<Q", data, 0)[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    base = 8 + n
    return {k: (v["dtype"], v["shape"], data[base + v["data_offsets"][0]:base + v["data_offsets"][1]])
            for k, v in header.items()}


def bf16_to_f32(raw):
    halves = array.array("H", raw)
    if sys.byteorder != "little":
        halves.byteswap()
    out = array.array("I", (h << 16 for h in halves))
    if sys.byteorder != "little":
        out.byteswap()
    return out.tobytes()


def tensor_bytes(tensors, data):
    """name -> bytes, each tensor running to the next tensor's offset (or the end)."""
    order = sorted(tensors.items(), key=lambda kv: kv[1][2])
    out = {}
    for i, (name, (_t, _d, off)) in enumerate(order):
        end = order[i + 1][1][2] if i + 1 < len(order) else len(data)
        out[name] = data[off:end]
    return out


def same_tensors(a_path, b_path):
    a, b = open(a_path, "rb").read(), open(b_path, "rb").read()
    (ta, _), (tb, _) = read_gguf(a), read_gguf(b)
    if sorted(ta) != sorted(tb):
        print("tensor names differ")
        return 1
    ba, bb = tensor_bytes(ta, a), tensor_bytes(tb, b)
    for name in ta:
        if ta[name][:2] != tb[name][:2] or ba[name].rstrip(b"\0") != bb[name].rstrip(b"\0"):
            print("tensor %s differs" % name)
            return 1
    print("same tensors: %d, %d bytes" % (len(ta), sum(len(v) for v in ba.values())))
    return 0


def splice(full_path, view_path, out_path):
    full = bytearray(open(full_path, "rb").read())
    tensors, _ = read_gguf(full)
    view = read_safetensors(open(view_path, "rb").read())
    if sorted(view) != sorted(tensors):
        raise SystemExit("tensor names differ between %s and %s" % (full_path, view_path))
    for name, (_t, dims, off) in tensors.items():
        dtype, shape, raw = view[name]
        if GGUF_TYPE.get(_t) == "F32" and dtype == "BF16":  # 1-D tensors kept F32: bf16 bits << 16 (exact)
            dtype, raw = "F32", bf16_to_f32(raw)
        if list(reversed(shape)) != dims or GGUF_TYPE.get(_t) != dtype:
            raise SystemExit("%s: %s %s vs GGUF type %d dims %s" % (name, dtype, shape, _t, dims))
        full[off:off + len(raw)] = raw
    open(out_path, "wb").write(full)
    print("wrote %s (%d tensors from %s)" % (out_path, len(tensors), view_path))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--same-tensors":
        sys.exit(same_tensors(sys.argv[2], sys.argv[3]))
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    splice(*sys.argv[1:])
