"""A small Zstandard decoder (RFC 8878) in pure Python, for container.md §7.3.

Frames without a dictionary; raw, RLE and compressed blocks; Huffman
literals (1 or 4 streams, treeless repeat); FSE/RLE/predefined/repeat
sequence tables; repeat offsets. Slow, and meant for small inputs (the
conformance vectors). Any malformation raises ZstdError; the output is
bounded by the caller's expected length ([C-7.3.2]). The optional frame
content checksum (XXH64) is not checked: the stream's XXH3 covers the bytes.
"""


class ZstdError(Exception):
    pass


LL_BASE = [(i, 0) for i in range(16)] + [
    (16, 1), (18, 1), (20, 1), (22, 1), (24, 2), (28, 2), (32, 3), (40, 3), (48, 4), (64, 6),
    (128, 7), (256, 8), (512, 9), (1024, 10), (2048, 11), (4096, 12), (8192, 13), (16384, 14),
    (32768, 15), (65536, 16)]
ML_BASE = [(i + 3, 0) for i in range(32)] + [
    (35, 1), (37, 1), (39, 1), (41, 1), (43, 2), (47, 2), (51, 3), (59, 3), (67, 4), (83, 4),
    (99, 5), (131, 7), (259, 8), (515, 9), (1027, 10), (2051, 11), (4099, 12), (8195, 13),
    (16387, 14), (32771, 15), (65539, 16)]
LL_DEFAULT = [4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1,
              1, 1, 1, 1, -1, -1, -1, -1]
ML_DEFAULT = [1, 4, 3, 2, 2, 2, 2, 2, 2] + [1] * 37 + [-1] * 7
OF_DEFAULT = [1, 1, 1, 1, 1, 1, 2, 2, 2] + [1] * 15 + [-1] * 5


class BackBits:
    """A backward bitstream (RFC 8878 §4.1.4 / §4.2.2): read from the end."""

    def __init__(self, data):
        if not data or data[-1] == 0:
            raise ZstdError("bitstream without its end mark")
        self.x = int.from_bytes(data, "little")
        self.pos = 8 * (len(data) - 1) + data[-1].bit_length() - 1

    def read(self, n):
        if n == 0:
            return 0
        self.pos -= n
        if self.pos >= 0:
            return (self.x >> self.pos) & ((1 << n) - 1)
        return (self.x << -self.pos) & ((1 << n) - 1)

    def peek(self, n):
        p = self.pos - n
        return ((self.x >> p) if p >= 0 else (self.x << -p)) & ((1 << n) - 1)


def read_fse_table(data, pos, max_al, max_sym):
    """FSE table description (RFC 8878 §4.1.1); returns (probs, al, new pos)."""
    x = int.from_bytes(data[pos:pos + 600], "little")
    bit = 0

    def bits(n):
        return (x >> bit) & ((1 << n) - 1)
    al = bits(4) + 5
    bit += 4
    if al > max_al:
        raise ZstdError("FSE accuracy log too large")
    remaining = (1 << al) + 1
    threshold = 1 << al
    nb = al + 1
    probs = []
    while remaining > 1 and len(probs) <= max_sym:
        mx = 2 * threshold - 1 - remaining
        v = bits(nb - 1)
        if v & (threshold - 1) < mx:
            count = v & (threshold - 1)
            bit += nb - 1
        else:
            count = bits(nb) & (2 * threshold - 1)
            if count >= threshold:
                count -= mx
            bit += nb
        count -= 1
        remaining -= abs(count)
        probs.append(count)
        if count == 0:
            while True:
                rep = bits(2)
                bit += 2
                probs.extend([0] * rep)
                if rep != 3:
                    break
        while remaining < threshold:
            nb -= 1
            threshold >>= 1
    if remaining != 1 or len(probs) > max_sym + 1 or bit > 8 * len(data[pos:pos + 600]):
        raise ZstdError("corrupt FSE table description")
    return probs, al, pos + (bit + 7) // 8


def build_fse(probs, al):
    size = 1 << al
    sym = [0] * size
    high = size - 1
    nxt = list(probs)
    for s, p in enumerate(probs):
        if p == -1:
            sym[high] = s
            high -= 1
            nxt[s] = 1
    step = (size >> 1) + (size >> 3) + 3
    pos = 0
    for s, p in enumerate(probs):
        for _ in range(max(p, 0)):
            sym[pos] = s
            pos = (pos + step) & (size - 1)
            while pos > high:
                pos = (pos + step) & (size - 1)
    if pos != 0:
        raise ZstdError("FSE table does not fill")
    table = []
    for u in range(size):
        s = sym[u]
        n = nxt[s]
        nxt[s] += 1
        nbits = al - (n.bit_length() - 1)
        table.append((s, nbits, (n << nbits) - size))
    return table, al


def rle_table(s):
    return [(s, 0, 0)], 0


class FSEState:
    def __init__(self, t, bs):
        self.table, al = t
        self.state = bs.read(al)

    def sym(self):
        return self.table[self.state][0]

    def update(self, bs):
        _, nb, base = self.table[self.state]
        self.state = base + bs.read(nb)


def huffman_weights(data, pos):
    h = data[pos]
    pos += 1
    if h >= 128:
        n = h - 127
        raw = data[pos:pos + (n + 1) // 2]
        if len(raw) < (n + 1) // 2:
            raise ZstdError("truncated Huffman weights")
        w = []
        for b in raw:
            w += [b >> 4, b & 15]
        return w[:n], pos + (n + 1) // 2
    block = data[pos:pos + h]
    if len(block) < h:
        raise ZstdError("truncated Huffman weights")
    probs, al, p2 = read_fse_table(block, 0, 6, 255)
    t = build_fse(probs, al)
    bs = BackBits(block[p2:])
    s1, s2 = FSEState(t, bs), FSEState(t, bs)
    w = []
    while len(w) < 255:
        w.append(s1.sym())
        s1.update(bs)
        if bs.pos < 0:
            w.append(s2.sym())
            break
        w.append(s2.sym())
        s2.update(bs)
        if bs.pos < 0:
            w.append(s1.sym())
            break
    return w, pos + h


def build_huffman(weights):
    total = sum(1 << (w - 1) for w in weights if w)
    if total == 0:
        raise ZstdError("empty Huffman table")
    maxbits = total.bit_length()
    rest = (1 << maxbits) - total
    if rest & (rest - 1):
        raise ZstdError("Huffman weights do not complete a power of two")
    weights = weights + [rest.bit_length()]
    if maxbits > 11:
        raise ZstdError("Huffman code too long")
    table = [None] * (1 << maxbits)
    pos = 0
    for w in range(1, maxbits + 1):
        for s, ws in enumerate(weights):
            if ws == w:
                n = 1 << (w - 1)
                nbits = maxbits + 1 - w
                for i in range(pos, pos + n):
                    table[i] = (s, nbits)
                pos += n
    return table, maxbits


def huffman_stream(data, n, huf):
    table, maxbits = huf
    bs = BackBits(data)
    out = bytearray()
    for _ in range(n):
        s, nb = table[bs.peek(maxbits)]
        bs.pos -= nb
        out.append(s)
    if bs.pos != 0:
        raise ZstdError("Huffman stream not fully consumed")
    return out


def literals(data, pos, st):
    b0 = data[pos]
    ty, fmt = b0 & 3, (b0 >> 2) & 3
    if ty in (0, 1):
        if fmt in (0, 2):
            size, pos = b0 >> 3, pos + 1
        elif fmt == 1:
            size, pos = (b0 >> 4) + (data[pos + 1] << 4), pos + 2
        else:
            size, pos = (b0 >> 4) + (data[pos + 1] << 4) + (data[pos + 2] << 12), pos + 3
        if ty == 0:
            if pos + size > len(data):
                raise ZstdError("truncated raw literals")
            return bytes(data[pos:pos + size]), pos + size
        return bytes([data[pos]]) * size, pos + 1
    hsize = {0: 3, 1: 3, 2: 4, 3: 5}[fmt]
    v = int.from_bytes(data[pos:pos + hsize], "little") >> 4
    nbits = {0: 10, 1: 10, 2: 14, 3: 18}[fmt]
    regen, comp = v & ((1 << nbits) - 1), (v >> nbits) & ((1 << nbits) - 1)
    pos += hsize
    end = pos + comp
    if end > len(data):
        raise ZstdError("truncated compressed literals")
    if ty == 2:
        w, pos = huffman_weights(data, pos)
        st["huf"] = build_huffman(w)
    elif st.get("huf") is None:
        raise ZstdError("treeless literals without a previous table")
    if fmt == 0:
        return bytes(huffman_stream(data[pos:end], regen, st["huf"])), end
    if end - pos < 6:
        raise ZstdError("truncated jump table")
    l1, l2, l3 = (int.from_bytes(data[pos + 2 * i:pos + 2 * i + 2], "little") for i in range(3))
    pos += 6
    seg = (regen + 3) // 4
    out = bytearray()
    for k, ln in enumerate((l1, l2, l3, end - pos - l1 - l2 - l3)):
        if ln < 0 or pos + ln > end:
            raise ZstdError("jump table past the literals")
        out += huffman_stream(data[pos:pos + ln], seg if k < 3 else regen - 3 * seg, st["huf"])
        pos += ln
    return bytes(out), end


def seq_table(mode, data, pos, default, default_al, max_al, max_sym, st, key):
    if mode == 0:
        st[key] = build_fse(default, default_al)
    elif mode == 1:
        st[key] = rle_table(data[pos])
        pos += 1
    elif mode == 2:
        probs, al, pos = read_fse_table(data, pos, max_al, max_sym)
        st[key] = build_fse(probs, al)
    elif st.get(key) is None:
        raise ZstdError("repeat table without a previous table")
    return pos


def compressed_block(data, out, st, limit):
    lits, pos = literals(data, 0, st)
    if pos >= len(data):
        raise ZstdError("no sequences header")
    b0 = data[pos]
    if b0 < 128:
        nseq, pos = b0, pos + 1
    elif b0 < 255:
        nseq, pos = ((b0 - 128) << 8) + data[pos + 1], pos + 2
    else:
        nseq, pos = data[pos + 1] + (data[pos + 2] << 8) + 0x7F00, pos + 3
    if nseq == 0:
        out += lits
        return
    modes = data[pos]
    pos += 1
    if modes & 3:
        raise ZstdError("reserved bits in the compression modes")
    pos = seq_table(modes >> 6, data, pos, LL_DEFAULT, 6, 9, 35, st, "ll")
    pos = seq_table((modes >> 4) & 3, data, pos, OF_DEFAULT, 5, 8, 31, st, "of")
    pos = seq_table((modes >> 2) & 3, data, pos, ML_DEFAULT, 6, 9, 52, st, "ml")
    bs = BackBits(data[pos:])
    ll, of, ml = FSEState(st["ll"], bs), FSEState(st["of"], bs), FSEState(st["ml"], bs)
    reps = st["reps"]
    lp = 0
    for i in range(nseq):
        ofc, mlc, llc = of.sym(), ml.sym(), ll.sym()
        if ofc > 31 or mlc >= len(ML_BASE) or llc >= len(LL_BASE):
            raise ZstdError("invalid sequence code")
        ofv = (1 << ofc) + bs.read(ofc)
        mlen = ML_BASE[mlc][0] + bs.read(ML_BASE[mlc][1])
        llen = LL_BASE[llc][0] + bs.read(LL_BASE[llc][1])
        if ofv > 3:
            off = ofv - 3
            reps[:] = [off, reps[0], reps[1]]
        else:
            idx = ofv - 1 + (1 if llen == 0 else 0)
            if idx == 0:
                off = reps[0]
            elif idx == 1:
                off = reps[1]
                reps[:] = [off, reps[0], reps[2]]
            else:
                off = reps[2] if idx == 2 else reps[0] - 1
                if off == 0:
                    raise ZstdError("zero offset")
                reps[:] = [off, reps[0], reps[1]]
        if lp + llen > len(lits):
            raise ZstdError("sequence past the literals")
        out += lits[lp:lp + llen]
        lp += llen
        if off > len(out) or len(out) + mlen > limit:
            raise ZstdError("match offset before the output, or output too long")
        start = len(out) - off
        for j in range(mlen):
            out.append(out[start + j])
        if i != nseq - 1:
            ll.update(bs)
            ml.update(bs)
            of.update(bs)
    if bs.pos != 0:
        raise ZstdError("sequence bitstream not fully consumed")
    out += lits[lp:]


def decompress(data, limit):
    """All frames of data, at most limit bytes of output."""
    out = bytearray()
    pos = 0
    data = bytes(data)
    while pos < len(data):
        if len(data) - pos < 4:
            raise ZstdError("truncated frame magic")
        magic = int.from_bytes(data[pos:pos + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:
            size = int.from_bytes(data[pos + 4:pos + 8], "little")
            pos += 8 + size
            if pos > len(data):
                raise ZstdError("truncated skippable frame")
            continue
        if magic != 0xFD2FB528:
            raise ZstdError("not a zstd frame")
        pos = frame(data, pos + 4, out, limit)
    return bytes(out)


def frame(data, pos, out, limit):
    if pos >= len(data):
        raise ZstdError("truncated frame header")
    fd = data[pos]
    pos += 1
    fcs_flag, single, checksum, did = fd >> 6, (fd >> 5) & 1, (fd >> 2) & 1, fd & 3
    if fd & 0x08:
        raise ZstdError("reserved bit set in the frame header")
    if not single:
        pos += 1
    if did:
        raise ZstdError("frame needs a dictionary")
    fcs_len = {0: 1 if single else 0, 1: 2, 2: 4, 3: 8}[fcs_flag]
    fcs = int.from_bytes(data[pos:pos + fcs_len], "little") if fcs_len else None
    if fcs_len == 2:
        fcs += 256
    pos += fcs_len
    start = len(out)
    st = {"reps": [1, 4, 8]}
    while True:
        if pos + 3 > len(data):
            raise ZstdError("truncated block header")
        h = int.from_bytes(data[pos:pos + 3], "little")
        pos += 3
        last, ty, size = h & 1, (h >> 1) & 3, h >> 3
        if ty == 1:
            if pos + 1 > len(data) or len(out) + size > limit:
                raise ZstdError("truncated RLE block or output too long")
            out += bytes([data[pos]]) * size
            pos += 1
        elif ty == 3:
            raise ZstdError("reserved block type")
        else:
            if pos + size > len(data):
                raise ZstdError("truncated block")
            if ty == 0:
                if len(out) + size > limit:
                    raise ZstdError("output too long")
                out += data[pos:pos + size]
            else:
                compressed_block(data[pos:pos + size], out, st, limit)
            pos += size
        if len(out) > limit:
            raise ZstdError("output too long")
        if last:
            break
    if checksum:
        if pos + 4 > len(data):
            raise ZstdError("truncated content checksum")
        pos += 4
    if fcs is not None and len(out) - start != fcs:
        raise ZstdError("frame content size differs from its content")
    return pos
