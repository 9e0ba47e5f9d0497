"""A protobuf wire-format parser for the manifest (container.md §6.1, §5.2).

Hand-written so that the spec's parsing rules are enforced exactly:
- tags, varints (at most 10 bytes), lengths within the enclosing message;
- wire types 6 and 7, field number 0, stray or mismatched end-group tags,
  unterminated groups: malformed (DATA_LOSS, [C-6.1.2]);
- groups (wire types 3/4) are unknown fields, skipped even under a known number;
- a known field number with another wire type than the schema's is an unknown
  field, ignored ([C-6.1.2]); packed and unpacked repeated scalars both accepted
  ([C-6.1.3]);
- a non-repeated scalar keeps its last occurrence, a non-repeated message merges
  all occurrences ([C-6.1.4]): merging is parsing the concatenated payloads;
- enums read as protobuf's open enums: low 32 bits as signed int32 ([C-5.2.3]);
  uint32 reads the low 32 bits, bool any non-zero varint as true;
- string fields must be valid UTF-8 ([C-6.1.2]).
Messages decode to plain dicts keyed by field name, with proto3 defaults.
"""

import struct

from errors import BoltError

RECURSION_LIMIT = 100  # protobuf's default; a manifest deeper than this is malformed


def _dl(msg):
    return BoltError("DATA_LOSS", "manifest is not a well-formed Manifest: " + msg)


# Field kinds: (wire type, decoder). Scalars decode from the raw wire value.
def _u32(v):
    return v & 0xFFFFFFFF


def _enum(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _sint64(v):
    return (v >> 1) ^ -(v & 1)


KINDS = {
    "uint32": (0, _u32),
    "uint64": (0, lambda v: v),
    "sint64": (0, _sint64),
    "enum": (0, _enum),
    "bool": (0, lambda v: v != 0),
    "fixed64": (1, lambda v: v),
    "double": (1, lambda v: v),       # kept as the 64-bit pattern
    "float": (5, lambda v: v),        # kept as the 32-bit pattern
    "string": (2, None),
    "bytes": (2, None),
    "message": (2, None),
}

# Schema: message -> {field number: (name, kind, repeated, submessage)}
S = {}


def _msg(name, fields):
    S[name] = {f[0]: f[1:] for f in fields}


def _f(num, name, kind, rep=False, sub=None):
    return (num, name, kind, rep, sub)


_msg("Value", [_f(1, "type", "enum"), _f(2, "u", "uint64"), _f(3, "i", "sint64"),
               _f(4, "f32", "float"), _f(5, "f64", "double"), _f(6, "b", "bool"),
               _f(7, "s", "bytes"), _f(8, "array", "message", False, "Array")])
_msg("Array", [_f(1, "element_type", "enum"), _f(2, "uints", "uint64", True),
               _f(3, "ints", "sint64", True), _f(4, "f32s", "float", True),
               _f(5, "f64s", "double", True), _f(6, "bools", "bool", True),
               _f(7, "strings", "bytes", True), _f(8, "arrays", "message", True, "Array")])
_msg("MetadataEntry", [_f(1, "key", "string"), _f(2, "value", "message", False, "Value")])
_msg("CodecParam", [_f(1, "key", "string"), _f(2, "value", "message", False, "Value")])
_msg("Codec", [_f(1, "id", "string"), _f(2, "params", "message", True, "CodecParam")])
_msg("Chunk", [_f(1, "stored_offset", "uint64"), _f(2, "stored_length", "uint64"),
               _f(3, "raw_offset", "uint64"), _f(4, "raw_length", "uint64"),
               _f(5, "first_row", "uint64"), _f(6, "row_count", "uint64"),
               _f(7, "xxh3", "fixed64"), _f(8, "prefix_xxh3", "fixed64", True)])
_msg("Stream", [_f(1, "role", "string"), _f(2, "shard", "uint32"), _f(3, "offset", "uint64"),
                _f(4, "length", "uint64"), _f(5, "alignment", "uint64"), _f(6, "xxh3", "fixed64"),
                _f(7, "compression", "enum"), _f(8, "raw_length", "uint64"),
                _f(9, "chunks", "message", True, "Chunk"), _f(10, "views", "string", True),
                _f(11, "line_bytes", "uint64"), _f(12, "prefix_bytes", "uint64", True)])
_msg("Tensor", [_f(1, "name", "string"), _f(2, "shape", "uint64", True), _f(3, "dtype", "enum"),
                _f(4, "codec", "message", False, "Codec"),
                _f(5, "streams", "message", True, "Stream"),
                _f(6, "required_features", "string", True)])
_msg("Shard", [_f(1, "file_name", "string"), _f(2, "size", "uint64"), _f(3, "file_id", "fixed64"),
                  _f(4, "data_end", "uint64")])  # 1.3, container.md §8.5
_msg("ElasticManifest", [_f(2, "version", "uint32"), _f(3, "storage_order", "enum"),
                         _f(4, "layer_count", "uint32"), _f(5, "layer_pattern", "string"),
                         _f(6, "axes", "message", True, "ElasticAxis"),
                         _f(7, "bindings", "message", True, "ElasticBinding"),
                         _f(8, "budgets", "message", True, "ElasticBudget"),
                         _f(9, "importance", "message", True, "ElasticImportance")])
_msg("ElasticAxis", [_f(1, "name", "string"), _f(2, "scope", "enum"), _f(3, "granularity", "uint64"),
                     _f(4, "unit_elems", "uint64"), _f(5, "parent", "uint64", True),
                     _f(6, "at_most", "string"), _f(7, "metadata_key", "string"),
                     _f(8, "groups", "uint64")])
_msg("ElasticBinding", [_f(1, "tensor", "string"), _f(2, "dims", "string", True),
                        _f(3, "segmented", "message", True, "ElasticSegmentedDim"),
                        _f(4, "flat", "bool")])
_msg("ElasticSegmentedDim", [_f(1, "dim", "uint32"),
                             _f(2, "segments", "message", True, "ElasticSegment")])
_msg("ElasticSegment", [_f(1, "axis", "string"), _f(2, "fixed_elems", "uint64")])
_msg("ElasticBudgetAxis", [_f(1, "axis", "string"), _f(2, "counts", "uint64", True)])
_msg("ElasticBudget", [_f(1, "name", "string"), _f(2, "layer_keep", "bool", True),
                       _f(3, "sizes", "message", True, "ElasticBudgetAxis"),
                       _f(4, "nested_in", "string")])
_msg("ElasticImportance", [_f(1, "axis", "string"), _f(2, "layer", "uint32"),
                           _f(3, "scores", "float", True), _f(4, "order", "uint32", True),
                           _f(5, "method", "string")])
_msg("ByteRange", [_f(1, "shard", "uint32"), _f(2, "offset", "uint64"), _f(3, "length", "uint64")])
_msg("View", [_f(1, "name", "string"), _f(3, "description", "string"),
              _f(4, "ranges", "message", True, "ByteRange")])
_msg("Manifest", [_f(1, "format_major", "uint32"), _f(2, "format_minor", "uint32"),
                  _f(3, "required_features", "string", True),
                  _f(4, "optional_features", "string", True), _f(5, "alignment", "uint64"),
                  _f(6, "shards", "message", True, "Shard"),
                  _f(7, "metadata", "message", True, "MetadataEntry"),
                  _f(8, "tensors", "message", True, "Tensor"),
                  _f(9, "elastic", "message", False, "ElasticManifest"),
                  _f(10, "views", "message", True, "View"), _f(11, "writer", "string")])


def read_varint(b, pos, end):
    result = 0
    shift = 0
    for i in range(10):
        if pos >= end:
            raise _dl("truncated varint")
        c = b[pos]
        pos += 1
        result |= (c & 0x7F) << shift
        if not c & 0x80:
            return result & ((1 << 64) - 1), pos
        shift += 7
    raise _dl("varint longer than 10 bytes")


def _read_tag(b, pos, end):
    tag, pos = read_varint(b, pos, end)
    if tag > 0xFFFFFFFF:
        raise _dl("tag does not fit 32 bits")
    num, wt = tag >> 3, tag & 7
    if num == 0:
        raise _dl("field number 0")
    if wt in (6, 7):
        raise _dl("invalid wire type %d" % wt)
    return num, wt, pos


def _skip(b, pos, end, num, wt, depth):
    """Skip one field's value; returns the new position. Handles groups."""
    if wt == 0:
        return read_varint(b, pos, end)[1]
    if wt == 1:
        if end - pos < 8:
            raise _dl("truncated fixed64")
        return pos + 8
    if wt == 5:
        if end - pos < 4:
            raise _dl("truncated fixed32")
        return pos + 4
    if wt == 2:
        n, pos = read_varint(b, pos, end)
        if n > end - pos:
            raise _dl("length runs past the end of its message")
        return pos + n
    if wt == 3:
        if depth + 1 > RECURSION_LIMIT:
            raise _dl("nesting past the recursion limit")
        while True:
            if pos >= end:
                raise _dl("group runs to the end of its message")
            n2, wt2, pos = _read_tag(b, pos, end)
            if wt2 == 4:
                if n2 != num:
                    raise _dl("end-group tag of another field number")
                return pos
            pos = _skip(b, pos, end, n2, wt2, depth + 1)
    raise _dl("end-group tag without its start-group tag")


def _read_value(b, pos, end, wt):
    if wt == 0:
        return read_varint(b, pos, end)
    if wt == 1:
        if end - pos < 8:
            raise _dl("truncated fixed64")
        return struct.unpack_from("<Q", b, pos)[0], pos + 8
    if wt == 5:
        if end - pos < 4:
            raise _dl("truncated fixed32")
        return struct.unpack_from("<I", b, pos)[0], pos + 4
    raise AssertionError(wt)


def _unpack(b, pos, end, wt, dec):
    out = []
    while pos < end:
        v, pos = _read_value(b, pos, end, wt)
        out.append(dec(v))
    if pos != end:
        raise _dl("packed field ends inside an element")
    return out


def parse(msg_name, b, pos=0, end=None, depth=1, counter=None):
    """Parse message msg_name from b[pos:end] into a dict.

    counter is the depth of metadata arrays: more than 8 is RESOURCE_EXHAUSTED,
    counted before the recursion limit can apply ([C-6.4.9]).
    """
    if end is None:
        end = len(b)
    counter = counter or 0
    if msg_name == "Array":
        counter += 1
        if counter > 8:  # [C-6.4.9] [C-9.14]
            raise BoltError("RESOURCE_EXHAUSTED", "metadata arrays nested deeper than 8 (spec C-9.14)")
    if depth > RECURSION_LIMIT:
        raise _dl("nesting past the recursion limit")
    schema = S[msg_name]
    out = {}
    singular_msgs = {}
    for num, (name, kind, rep, sub) in schema.items():
        if rep:
            out[name] = []
        elif kind == "message":
            out[name] = None
        elif kind in ("string",):
            out[name] = ""
        elif kind == "bytes":
            out[name] = b""
        elif kind == "bool":
            out[name] = False
        else:
            out[name] = 0
    unknown = 0
    while pos < end:
        num, wt, pos = _read_tag(b, pos, end)
        f = schema.get(num)
        if wt == 4:
            raise _dl("end-group tag without its start-group tag")
        if f is None or wt == 3:
            pos = _skip(b, pos, end, num, wt, depth)
            unknown += 1
            continue
        name, kind, rep, sub = f
        kwt, dec = KINDS[kind]
        if wt == 2 and rep and kwt != 2:  # packed repeated scalar
            n, pos = read_varint(b, pos, end)
            if n > end - pos:
                raise _dl("length runs past the end of its message")
            out[name].extend(_unpack(b, pos, pos + n, kwt, dec))
            pos += n
            continue
        if wt != kwt:  # known number, other wire type: an unknown field
            pos = _skip(b, pos, end, num, wt, depth)
            unknown += 1
            continue
        if kwt != 2:
            v, pos = _read_value(b, pos, end, wt)
            v = dec(v)
            if rep:
                out[name].append(v)
            else:
                out[name] = v
            continue
        n, pos = read_varint(b, pos, end)
        if n > end - pos:
            raise _dl("length runs past the end of its message")
        start, pos = pos, pos + n
        if kind == "message":
            if rep:
                out[name].append(parse(sub, b, start, pos, depth + 1, counter))
            else:
                singular_msgs.setdefault(name, (sub, []))[1].append(bytes(b[start:pos]))
            continue
        raw = bytes(b[start:pos])
        if kind == "string":
            try:
                v = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise _dl("field %s of %s is not valid UTF-8" % (name, msg_name))
        else:
            v = raw
        if rep:
            out[name].append(v)
        else:
            out[name] = v
    if pos != end:
        raise _dl("field runs past the end of its message")
    for name, (sub, parts) in singular_msgs.items():
        joined = b"".join(parts)
        out[name] = parse(sub, joined, 0, len(joined), depth + 1, counter)
    out["_unknown"] = unknown
    return out
