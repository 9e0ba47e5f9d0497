"""The count limits of container.md §9, checked over the whole manifest before
any validity rule ([C-9.20]): a manifest past one is RESOURCE_EXHAUSTED whatever
else is wrong with it.

pyreader counts the parsed manifest (the reference counts the wire bytes before
parsing, [C-9.19]); the class is the same either way.
"""

from errors import BoltError

LIMITS = {  # what: (limit, rule)
    "tensors": (1000000, "C-9.3"), "metadata entries": (1000000, "C-9.4"), "dimensions": (8, "C-9.6"),
    "streams": (64, "C-9.8"), "chunks": (1 << 24, "C-9.9"), "line prefixes": (64, "C-9.10"),
    "codec parameters": (64, "C-9.11"), "feature names": (64, "C-9.12"), "shards": (65536, "C-9.13"),
    "views": (64, "C-9.16"),
}


def _over(path, where, what, n):
    limit, rule = LIMITS[what]
    if n > limit:
        raise BoltError("RESOURCE_EXHAUSTED", "%s: %s: %d %s exceed the limit of %d (spec %s)"
                        % (path, where, n, what, limit, rule))


def _depth(a):
    """Nesting depth of a metadata ARRAY (1 for an array of scalars)."""
    if a is None:
        return 0
    return 1 + max((_depth(x) for x in a["arrays"]), default=0)


def _value(path, where, v):
    if v is not None and v["type"] == 13 and _depth(v["array"]) > 8:  # [C-9.14]
        raise BoltError("RESOURCE_EXHAUSTED", "%s: %s: arrays nested deeper than 8 (spec C-9.14)" % (path, where))


def check_counts(m, path):
    """[C-9.20] The counts of §9, manifest-wide, before §6.13's rules."""
    _over(path, "manifest", "tensors", len(m["tensors"]))
    _over(path, "manifest", "metadata entries", len(m["metadata"]))
    _over(path, "manifest", "shards", len(m["shards"]))
    _over(path, "manifest", "views", len(m["views"]))
    for lst in ("required_features", "optional_features"):
        _over(path, lst, "feature names", len(m[lst]))
    for e in m["metadata"]:
        _value(path, "metadata %r" % e["key"], e["value"])
    for t in m["tensors"]:
        where = "tensor %r" % t["name"]
        _over(path, where, "dimensions", len(t["shape"]))
        _over(path, where, "streams", len(t["streams"]))
        _over(path, where + " required_features", "feature names", len(t["required_features"]))
        codec = t["codec"] or {"params": []}
        _over(path, where, "codec parameters", len(codec["params"]))
        for cp in codec["params"]:
            _value(path, "%s codec parameter %r" % (where, cp["key"]), cp["value"])
        for s in t["streams"]:
            _over(path, "%s stream %r" % (where, s["role"]), "chunks", len(s["chunks"]))
            _over(path, "%s stream %r" % (where, s["role"]), "line prefixes", len(s["prefix_bytes"]))
