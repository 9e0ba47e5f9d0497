"""Opening and validating a .bolt file (container.md §3, §4, §6, §7, §8, §15).

Written from spec/container.md alone. Every check names its rule id.
"""

import os
import re
import struct

import elastic
import wire
from counts import check_counts
from errors import BoltError
from xxh3 import xxh3_64

MAGIC = b"\x89BPK\r\n\x1a\n"
FOOTER_MAGIC = b"BPKEND\r\n"
MAX_MANIFEST = 256 << 20
DTYPES = {1: ("F32", 4), 2: ("F16", 2), 3: ("BF16", 2), 4: ("F64", 8), 5: ("I8", 1),
          6: ("I16", 2), 7: ("I32", 4), 8: ("I64", 8), 9: ("U8", 1), 10: ("U16", 2),
          11: ("U32", 4), 12: ("U64", 8), 13: ("BOOL", 1), 14: ("F8_E4M3", 1),
          15: ("F8_E5M2", 1), 16: ("F8_E8M0", 1), 17: ("C64", 8)}
KNOWN_FEATURES = {"zstd", "shards", "part_shards"}  # required features this reader implements
INT_RANGES = {1: (0, 255), 3: (0, 65535), 5: (0, 2**32 - 1), 7: (0, 2**64 - 1),
              2: (-128, 127), 4: (-32768, 32767), 6: (-2**31, 2**31 - 1), 8: (-2**63, 2**63 - 1)}
ARRAY_FIELD = {1: "uints", 3: "uints", 5: "uints", 7: "uints", 2: "ints", 4: "ints", 6: "ints",
               8: "ints", 9: "f32s", 10: "f64s", 11: "bools", 12: "strings", 13: "arrays"}
CODEC_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
VIEW_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def dl(msg, tensor=None):
    return BoltError("DATA_LOSS", msg, tensor)


def rx(msg):
    return BoltError("RESOURCE_EXHAUSTED", msg)


def pow2_in(a):
    return 64 <= a <= 1 << 30 and a & (a - 1) == 0


def check_header(b, path):
    if len(b) < 64:  # [C-3.2.1]
        raise BoltError("INVALID_ARGUMENT", "%s: not a bolt-pack file (shorter than 64 bytes)" % path)
    if b[:8] != MAGIC:  # [C-3.2.2]
        raise BoltError("INVALID_ARGUMENT", "%s: not a bolt-pack file (bad magic)" % path)
    if xxh3_64(b[:56]) != struct.unpack_from("<Q", b, 56)[0]:  # [C-3.2.3]
        raise dl("%s: header checksum mismatch" % path)
    major, minor, hsize, bom, flags, file_id, align = struct.unpack_from("<HHIIIQQ", b, 8)
    if bom != 0x01020304:  # [C-3.2.4]
        raise dl("%s: byte-order mark %#x, not 0x01020304" % (path, bom))
    if major != 1:  # [C-3.2.5]
        raise BoltError("UNIMPLEMENTED", "%s: format major %d, this reader implements 1" % (path, major))
    if hsize != 64:  # [C-3.2.6]
        raise dl("%s: Header_Size %d is not 64" % (path, hsize))
    if flags != 0 or any(b[40:56]):  # [C-3.2.7]
        raise dl("%s: header flags or reserved bytes not zero" % path)
    return {"major": major, "minor": minor, "file_id": file_id, "alignment": align}


class Reader:
    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            self.data = f.read()
        self.shard_data = [self.data]
        self.verified_chunks = set()
        self._open()

    # ---- header, footer (§3.2, §4.2)
    def _open(self):
        b, p = self.data, self.path
        self.header = h = check_header(b, p)
        if len(b) < 128:  # [C-4.2.1]
            raise dl("%s: truncated (shorter than header and footer)" % p)
        ft = b[-64:]
        if ft[56:] != FOOTER_MAGIC:  # [C-4.2.2]
            raise dl("%s: no footer magic (truncated or unfinished)" % p)
        if xxh3_64(ft[:48]) != struct.unpack_from("<Q", ft, 48)[0]:  # [C-4.2.3]
            raise dl("%s: footer checksum mismatch" % p)
        mo, ml, mc, fmaj, fmin, res, fid, fsize = struct.unpack_from("<QQQHHIQQ", ft, 0)
        if res:  # [C-4.2.4]
            raise dl("%s: footer reserved bytes not zero" % p)
        if fsize != len(b):  # [C-4.2.5]
            raise dl("%s: File_Size %d but the file has %d bytes" % (p, fsize, len(b)))
        if fid != h["file_id"]:  # [C-4.2.6]
            raise dl("%s: footer File_Id differs from the header's" % p)
        if (fmaj, fmin) != (h["major"], h["minor"]):  # [C-4.2.7]
            raise dl("%s: footer version differs from the header's" % p)
        if ml > MAX_MANIFEST:  # [C-4.2.8]
            raise rx("%s: manifest of %d bytes exceeds the limit of 256 MiB (spec C-9.2)" % (p, ml))
        if mo < 64 or mo + ml != fsize - 64:  # [C-4.2.9]
            raise dl("%s: manifest is not where the footer says" % p)
        man = b[mo:mo + ml]
        if xxh3_64(man) != mc:  # [C-4.2.10]
            raise dl("%s: manifest checksum mismatch" % p)
        self.manifest_offset = mo
        self.m = wire.parse("Manifest", man)  # [C-4.2.11] [C-6.13.1]
        check_counts(self.m, p)  # [C-9.20]: every count limit before any validity rule
        self._validate()

    # ---- manifest (§6.13)
    def _validate(self):
        m, h, p = self.m, self.header, self.path
        if m["format_minor"] != h["minor"]:  # [C-6.2.2]
            raise dl("%s: manifest format_minor %d, header %d" % (p, m["format_minor"], h["minor"]))
        if m["alignment"] != h["alignment"]:  # [C-6.2.5] [C-3.1.4]
            raise dl("%s: manifest alignment differs from the header's" % p)
        self._check_shards()
        if m["format_major"] != h["major"]:  # [C-6.2.1]
            raise dl("%s: manifest format_major %d, header %d" % (p, m["format_major"], h["major"]))
        for lst in ("required_features", "optional_features"):
            check_features(m[lst], "%s: %s" % (p, lst))
        if not pow2_in(m["alignment"]):  # [C-6.2.5] [C-7.1.2]
            raise dl("%s: alignment %d is not a power of two in [64, 2^30]" % (p, m["alignment"]))
        if len(m["shards"]) > 1 and "shards" not in m["required_features"]:  # [C-5.3.9] [C-8.2.6]
            raise dl("%s: names sibling files without declaring the shards feature" % p)
        self._check_metadata()
        self._check_views_declared()
        self._check_tensors()
        self.elastic = elastic.validate(m)  # elastic.md §2, after the tensors
        self._check_overlap()
        self._check_view_layout()

    def _check_shards(self):
        m, p = self.m, self.path
        shards = m["shards"]
        if not shards:  # [C-8.2.1]
            self.shard_ends = [self.manifest_offset]
            return
        if len(shards) > 65536:  # [C-8.2.2]
            raise rx("%s: %d shards exceed the limit of 65536 (spec C-9.13)" % (p, len(shards)))
        s0 = shards[0]
        if s0["file_name"] or s0["size"] or s0["file_id"] not in (0, self.header["file_id"]):
            raise dl("%s: shard 0 entry must have no name, size 0 and file_id 0 or this file's" % p)  # [C-8.2.3]
        if s0["data_end"]:  # [C-8.5.1]
            raise dl("%s: shard 0 entry has a data_end" % p)
        names, ids = set(), {self.header["file_id"]}
        for s in shards[1:]:
            n = s["file_name"]
            nb = n.encode("utf-8")
            if (not 1 <= len(nb) <= 255 or n in (".", "..") or any(c in n for c in "/\\:")
                    or any(x < 0x20 or x == 0x7F for x in nb)):  # [C-8.2.4]
                raise dl("%s: shard file name %r is not a bare file name" % (p, n))
            if n in names or s["file_id"] in ids:  # [C-8.2.5]
                raise dl("%s: shard %r named twice or its file_id repeats" % (p, n))
            names.add(n)
            ids.add(s["file_id"])
        if len(shards) > 1 and "shards" not in m["required_features"]:  # [C-5.3.9] [C-8.2.6]
            raise dl("%s: names sibling files without declaring the shards feature" % p)
        if any(s["data_end"] for s in shards[1:]) and "part_shards" not in m["required_features"]:
            raise dl('%s: names part shards but does not declare the "part_shards" feature' % p)  # [C-8.5.1]
        for s in shards[1:]:  # [C-8.5.2]
            if s["data_end"] and not 64 <= s["data_end"] <= s["size"] - 64:
                raise dl("%s: part %r: data_end %d leaves no room for the part's manifest and footer"
                         % (p, s["file_name"], s["data_end"]))
        self.shard_ends = [self.manifest_offset]
        folder = os.path.dirname(os.path.abspath(p))
        for s in shards[1:]:  # §8.3
            sp = os.path.join(folder, s["file_name"])
            try:
                with open(sp, "rb") as f:
                    sd = f.read()
            except OSError as e:  # [C-8.3.1]
                raise BoltError("NOT_FOUND", "%s: sibling shard %s: %s" % (p, sp, e.strerror))
            sh = check_header(sd, sp)  # [C-8.3.2]
            if sh["file_id"] != s["file_id"] or len(sd) != s["size"]:  # [C-8.3.3]
                raise dl("%s: %s is not the shard the manifest names" % (p, sp))
            if s["data_end"]:
                check_part(sd, sh, s["data_end"], p, sp)
            self.shard_data.append(sd)
            self.shard_ends.append(s["data_end"] or len(sd))

    def _check_metadata(self):
        md, p = self.m["metadata"], self.path
        if len(md) > 1000000:  # [C-9.4]
            raise rx("%s: %d metadata entries exceed the limit of 1000000" % (p, len(md)))
        keys = set()
        for e in md:
            check_name(e["key"], "%s: metadata key" % p)
            if e["key"] in keys:  # [C-6.3.3]
                raise dl("%s: duplicate metadata key %r" % (p, e["key"]))
            keys.add(e["key"])
            check_value(e["value"], "%s: metadata %r" % (p, e["key"]))

    def _check_views_declared(self):
        views, p = self.m["views"], self.path
        if len(views) > 64:  # [C-15.3.1]
            raise rx("%s: %d views exceed the limit of 64 (spec C-9.16)" % (p, len(views)))
        self.view_names = set()
        for v in views:
            n = v["name"]
            if not VIEW_NAME.match(n) or n == "full" or n in self.view_names:  # [C-15.3.2] [C-15.1.1]
                raise dl("%s: view name %r invalid, full or declared twice" % (p, n))
            if len(v["description"].encode()) > 4096:  # [C-15.3.5]
                raise rx("%s: view %r description exceeds 4096 bytes (spec C-9.17)" % (p, n))
            self.view_names.add(n)
            last = -1
            for r in v["ranges"]:  # [C-15.3.3]
                if (r["shard"] <= last or r["shard"] >= len(self.shard_ends) or r["length"] == 0
                        or r["offset"] < 64 or r["offset"] + r["length"] > self.shard_ends[r["shard"]]):
                    raise dl("%s: view %r has an invalid range" % (p, n))
                last = r["shard"]

    def _check_tensors(self):
        m, p = self.m, self.path
        ts = m["tensors"]
        if len(ts) > 1000000:  # [C-9.3]
            raise rx("%s: %d tensors exceed the limit of 1000000" % (p, len(ts)))
        names = set()
        for t in ts:
            n = t["name"]
            check_name(n, "%s: tensor name" % p)
            if n in names:  # [C-6.3.3]
                raise dl("%s: duplicate tensor name %r" % (p, n))
            names.add(n)
            self._check_tensor(t)

    def _check_tensor(self, t):
        p, n = self.path, t["name"]
        where = "%s: tensor %r" % (p, n)
        shape = t["shape"]
        if len(shape) > 8:  # [C-6.6.2] [C-9.6]
            raise rx("%s has %d dimensions, the limit is 8 (spec C-9.6)" % (where, len(shape)))
        prod = 1
        for d in shape:
            if d:
                prod *= d
                if prod > 1 << 56:  # [C-6.6.7] [C-9.7]
                    raise rx("%s has more than 2^56 elements (spec C-9.7)" % where)
        dt = t["dtype"]
        if dt <= 0 or dt > 255:  # [C-6.7.1] [C-6.7.2] [C-5.2.3]
            raise dl("%s: dtype %d is invalid" % (where, dt))
        codec = t["codec"] or {"id": "", "params": [], "_unknown": 0}
        t["codec"] = codec
        if not CODEC_ID.match(codec["id"]):  # [C-6.8.1]
            raise dl("%s: invalid codec id %r" % (where, codec["id"]))
        if len(codec["params"]) > 64:  # [C-6.8.2] [C-9.11]
            raise rx("%s: more than 64 codec parameters (spec C-9.11)" % where)
        keys = set()
        for cp in codec["params"]:
            k = cp["key"]
            if not 1 <= len(k.encode()) <= 64 or k in keys:  # [C-6.8.3]
                raise dl("%s: codec parameter key %r invalid or repeated" % (where, k))
            keys.add(k)
            check_value(cp["value"], "%s: codec parameter %r" % (where, k))  # [C-6.8.4]
        check_features(t["required_features"], where + ": required_features")  # [C-6.6.6]
        if len(t["streams"]) > 64:  # [C-6.6.5] [C-9.8]
            raise rx("%s: more than 64 streams (spec C-9.8)" % where)
        rows = shape[0] if shape else 1
        roles = set()
        for s in t["streams"]:
            self._check_stream(s, where, rows, roles)

    def _check_stream(self, s, where, rows, roles):
        role = s["role"]
        w = "%s stream %r" % (where, role)
        if not 1 <= len(role.encode()) <= 64 or role in roles:  # [C-6.9.1]
            raise dl("%s: role empty, too long or repeated" % w)
        roles.add(role)
        if s["shard"] >= len(self.shard_ends):  # [C-6.9.2]
            raise dl("%s: shard %d does not exist" % (w, s["shard"]))
        if not pow2_in(s["alignment"]):  # [C-6.9.3]
            raise dl("%s: alignment %d invalid" % (w, s["alignment"]))
        if s["offset"] % s["alignment"]:  # [C-6.9.4]
            raise dl("%s: offset %d is not a multiple of its alignment" % (w, s["offset"]))
        if s["offset"] < 64 or s["offset"] + s["length"] > self.shard_ends[s["shard"]]:  # [C-6.9.5]
            raise dl("%s: bytes lie outside the data section" % w)
        comp = s["compression"]
        if comp < 0 or comp > 255:  # [C-6.9.10] [C-5.2.3]
            raise dl("%s: compression %d is invalid" % (w, comp))
        if comp == 0:
            if s["raw_length"] != s["length"]:  # [C-6.9.6]
                raise dl("%s: raw_length differs from length" % w)
        else:
            if comp == 1 and "zstd" not in self.m["required_features"]:  # [C-5.3.8]
                raise dl("%s: compressed stream but the file does not declare zstd" % w)
            if s["raw_length"] > 1 << 48:  # [C-9.15]
                raise rx("%s: raw_length exceeds 2^48 (spec C-9.15)" % w)
        ch = s["chunks"]
        if len(ch) > 1 << 24:  # [C-6.9.7] [C-9.9]
            raise rx("%s: more than 2^24 chunks (spec C-9.9)" % w)
        if ch:
            so = ro = fr = 0
            for c in ch:  # [C-6.10.1] [C-6.10.2]
                if (c["stored_offset"], c["raw_offset"], c["first_row"]) != (so, ro, fr):
                    raise dl("%s: chunks do not tile the stream" % w)
                if comp == 0 and c["stored_length"] != c["raw_length"]:  # [C-6.10.3]
                    raise dl("%s: chunk stored and raw lengths differ" % w)
                so += c["stored_length"]
                ro += c["raw_length"]
                fr += c["row_count"]
            if (so, ro, fr) != (s["length"], s["raw_length"], rows):  # [C-6.10.4]
                raise dl("%s: chunks do not end at the stream's end" % w)
        vs = s["views"]
        if vs:  # [C-15.2.1] [C-15.2.2] [C-15.2.3]
            if len(set(vs)) != len(vs) or "full" not in vs or any(
                    v != "full" and v not in self.view_names for v in vs):
                raise dl("%s: views list invalid" % w)
        self._check_line_prefixes(s, w)

    def _check_line_prefixes(self, s, w):
        pb, lb = s["prefix_bytes"], s["line_bytes"]
        if not pb:  # [C-6.10.1.1]
            if lb or any(c["prefix_xxh3"] for c in s["chunks"]):
                raise dl("%s: line_bytes or prefix_xxh3 without prefix_bytes" % w)
            return
        if len(pb) > 64:  # [C-6.10.1.2] [C-9.10]
            raise rx("%s: more than 64 line prefixes (spec C-9.10)" % w)
        if s["compression"] != 0 or not s["chunks"] or lb == 0:  # [C-6.10.1.3]
            raise dl("%s: line prefixes need an uncompressed chunked stream with line_bytes" % w)
        prev = 0
        for x in pb:  # [C-6.10.1.4]
            if not prev < x < lb:
                raise dl("%s: prefix_bytes not strictly ascending inside a line" % w)
            prev = x
        for c in s["chunks"]:
            if c["stored_length"] % lb:  # [C-6.10.1.5]
                raise dl("%s: a chunk is not whole lines" % w)
            if len(c["prefix_xxh3"]) != len(pb):  # [C-6.10.1.6]
                raise dl("%s: a chunk has %d prefix checksums, not %d" % (w, len(c["prefix_xxh3"]), len(pb)))

    def _all_streams(self):
        for t in self.m["tensors"]:
            for s in t["streams"]:
                yield t, s

    def _check_overlap(self):
        per = {}
        for t, s in self._all_streams():
            if s["length"]:
                per.setdefault(s["shard"], []).append((s["offset"], s["offset"] + s["length"], t["name"]))
        for lst in per.values():  # [C-7.2.1]
            lst.sort()
            for a, b2 in zip(lst, lst[1:]):
                if b2[0] < a[1]:
                    raise dl("%s: streams of %r and %r overlap" % (self.path, a[2], b2[2]))

    def reads(self, view, s):
        return view == "full" or not s["views"] or view in s["views"]

    def _check_view_layout(self):
        for v in self.m["views"]:  # §15.4
            name = v["name"]
            want = {}
            per = {}
            for t, s in self._all_streams():
                if s["length"]:
                    per.setdefault(s["shard"], []).append((s, self.reads(name, s)))
            for shard, lst in per.items():
                read = [s for s, r in lst if r]
                unread = [s for s, r in lst if not r]
                if read and unread:  # [C-15.4.1]
                    if max(s["offset"] + s["length"] for s in read) > min(s["offset"] for s in unread):
                        raise dl("%s: view %r is not a prefix of shard %d" % (self.path, name, shard))
                if read:
                    lo = min(s["offset"] for s in read)
                    want[shard] = (lo, max(s["offset"] + s["length"] for s in read) - lo)
            got = {r["shard"]: (r["offset"], r["length"]) for r in v["ranges"]}
            if got != want:  # [C-15.4.2]
                raise dl("%s: view %r ranges do not match its streams" % (self.path, name))

    # ---- stored bytes, verification (§7.4)
    def stored(self, s):
        return self.shard_data[s["shard"]][s["offset"]:s["offset"] + s["length"]]

    def verify_stream(self, t, s):
        data = self.stored(s)
        w = "%s: tensor %r stream %r" % (self.path, t["name"], s["role"])
        if xxh3_64(data) != s["xxh3"]:  # [C-7.4.1]
            raise dl("%s: checksum mismatch" % w, t["name"])
        for k, c in enumerate(s["chunks"]):
            self.verify_chunk(t, s, k, data)

    def verify_chunk(self, t, s, k, data):
        c = s["chunks"][k]
        w = "%s: tensor %r stream %r" % (self.path, t["name"], s["role"])
        cb = data[c["stored_offset"]:c["stored_offset"] + c["stored_length"]]
        if xxh3_64(cb) != c["xxh3"]:  # [C-7.4.1]
            raise dl("%s: chunk %d checksum mismatch" % (w, k), t["name"])
        lb = s["line_bytes"]
        for i, pref in enumerate(s["prefix_bytes"]):  # [C-6.10.1.9]
            kept = b"".join(cb[j:j + pref] for j in range(0, len(cb), lb))
            if xxh3_64(kept) != c["prefix_xxh3"][i]:
                raise dl("%s: chunk %d line-prefix checksum mismatch (prefix %d)" % (w, k, i), t["name"])

    def verify(self):
        for t, s in self._all_streams():
            self.verify_stream(t, s)
        for shard, sd in enumerate(self.shard_data):  # [C-7.2.2]
            end = self.shard_ends[shard]
            spans = sorted((s["offset"], s["offset"] + s["length"]) for t, s in self._all_streams()
                           if s["shard"] == shard)
            pos = 64
            for a, b2 in spans + [(end, end)]:
                if a > pos and any(sd[pos:a]):
                    raise dl("%s: shard %d: padding not zero in [%d, %d)" % (self.path, shard, pos, a))
                pos = max(pos, b2)


def check_part(b, h, data_end, p, sp):
    """A part shard's footer and manifest (container.md §8.5); its header passed §8.3."""
    ft = b[-64:]
    if ft[56:] != FOOTER_MAGIC:  # [C-8.5.3] [C-4.2.2]
        raise dl("%s: part %s: no footer magic (truncated or unfinished)" % (p, sp))
    if xxh3_64(ft[:48]) != struct.unpack_from("<Q", ft, 48)[0]:  # [C-8.5.3] [C-4.2.3]
        raise dl("%s: part %s: footer checksum mismatch" % (p, sp))
    mo, ml, mc, fmaj, fmin, res, fid, fsize = struct.unpack_from("<QQQHHIQQ", ft, 0)
    if res:  # [C-8.5.3] [C-4.2.4]
        raise dl("%s: part %s: footer reserved bytes not zero" % (p, sp))
    if fid != h["file_id"] or fsize != len(b) or (fmaj, fmin) != (h["major"], h["minor"]):  # [C-8.5.3]
        raise dl("%s: %s is not the part the manifest names (its footer is another write's)" % (p, sp))
    if mo != data_end or mo + ml != fsize - 64:  # [C-8.5.4]
        raise dl("%s: part %s: the part's manifest starts at %d and ends at %d, not at data_end %d "
                 "and the footer" % (p, sp, mo, mo + ml, data_end))
    if xxh3_64(b[mo:mo + ml]) != mc:  # [C-8.5.5]
        raise dl("%s: part %s: the part's manifest checksum mismatch" % (p, sp))


def check_name(n, where):
    nb = n.encode("utf-8")
    if not nb:  # [C-6.3.1]
        raise dl("%s is empty" % where)
    if len(nb) > 4096:  # [C-6.3.1] [C-9.5]
        raise rx("%s is longer than 4096 bytes (spec C-9.5)" % where)
    if b"\0" in nb:  # [C-6.3.2]
        raise dl("%s holds a NUL byte" % where)


def check_features(lst, where):
    if len(lst) > 64:  # [C-5.3.1] [C-9.12]
        raise rx("%s: more than 64 names (spec C-9.12)" % where)
    for f in lst:
        if not 1 <= len(f.encode()) <= 64:  # [C-5.3.1]
            raise dl("%s: feature name of %d bytes" % (where, len(f.encode())))


def check_value(v, where):
    if v is None:
        raise dl("%s: no value" % where)
    ty = v["type"]
    if not 1 <= ty <= 13:  # [C-6.4.1]
        raise dl("%s: value type %d invalid" % (where, ty))
    if ty in INT_RANGES:  # [C-6.4.2]
        lo, hi = INT_RANGES[ty]
        x = v["u"] if ty in (1, 3, 5, 7) else v["i"]
        if not lo <= x <= hi:
            raise dl("%s: value %d out of range for its type" % (where, x))
    if ty == 13:
        check_array(v["array"], where, 1)


def check_array(a, where, depth):
    if depth > 8:  # [C-6.4.9] [C-9.14]
        raise rx("%s: arrays nested deeper than 8 (spec C-9.14)" % where)
    if a is None:
        raise dl("%s: ARRAY without an array" % where)
    et = a["element_type"]
    if not 1 <= et <= 13:  # [C-6.4.6]
        raise dl("%s: array element type %d invalid" % (where, et))
    field = ARRAY_FIELD[et]
    for f in set(ARRAY_FIELD.values()):  # [C-6.4.7]
        if f != field and a[f]:
            raise dl("%s: array holds elements of another type" % where)
    if et in INT_RANGES:  # [C-6.4.8]
        lo, hi = INT_RANGES[et]
        for x in a[field]:
            if not lo <= x <= hi:
                raise dl("%s: array element %d out of range" % (where, x))
    if et == 13:
        for inner in a["arrays"]:
            check_array(inner, where, depth + 1)
