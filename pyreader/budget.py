"""decode --budget: the tensors an elastic budget keeps (elastic.md §1, §5.2,
§5.4; spec/conformance.md [K-6.3] to [K-6.5]).

Written from the spec alone. A budget is "decode the parent (in the view), then
cut": each kept tensor's bytes are the kept elements of the parent's decode, in
row-major order, gathered run by run of every dimension.
"""

import numpy as np

from elastic import layer_span
from errors import BoltError


def kept_tensors(r, name):
    """[(parent tensor, renumbered name, runs per dimension)] in file order; NOT_FOUND for no such budget."""
    e = r.elastic
    if e is None:  # [K-6.2]
        raise BoltError("NOT_FOUND", "%s: has no elastic manifest, so no budget %r" % (r.path, name))
    b = e.budgets.get(name)
    if b is None:
        raise BoltError("NOT_FOUND", "%s: no budget %r (budgets: %s)" % (r.path, name, ", ".join(e.budgets)))
    kept_layers = [L for L in range(e.lc) if b["layer_keep"][L]]
    renumber = {L: i for i, L in enumerate(kept_layers)}  # §5.2: consecutive in the kept layers
    bindings = {x["tensor"]: x for x in e.em["bindings"]}
    out = []
    for t in r.m["tensors"]:
        n, layer = t["name"], None
        f = layer_span(n, e.pattern) if e.lc else None
        if f is not None and f[0] < e.lc:  # a tensor of a layer ([E-1.3]); an index >= layer_count is not one
            layer = f[0]
            if not b["layer_keep"][layer]:
                continue  # dropped with its layer
            bind = bindings.get(n[:f[1]] + "{L}" + n[f[2]:])
            n = n[:f[1]] + str(renumber[layer]) + n[f[2]:]
        else:
            bind = bindings.get(n)
        shape = t["shape"]
        if bind and bind.get("flat"):
            # [E-1.4] a flat binding cuts the elements taken flat; [E-2.9] (checked at open) makes that the
            # outer dimensions whole and the same columns of every row.
            row = e.flat_rows(e.flat_runs(b, bind, layer, t), shape)
            runs = [[(0, shape[d])] for d in range(len(shape) - 1)] + [row]
        else:
            runs = [e.dim_runs(b, bind, d, layer, shape[d]) if bind else [(0, shape[d])] for d in range(len(shape))]
        out.append((t, n, runs))
    return out


def cut(t, decoded, runs, target):
    """The kept elements of `decoded` (row-major, `t`'s shape), run by run ([K-6.3])."""
    shape = t["shape"]
    elements = 1
    for d in shape:
        elements *= d
    if elements == 0 or not shape:
        return decoded
    whole_inner = all(rs == [(0, shape[d])] for d, rs in enumerate(runs) if d > 0)
    if len(decoded) % elements:
        # A block codec's native form has no whole bytes per element ([K-6.4], elastic.md [E-5.3.2]):
        # only whole outer rows can be gathered.
        if not whole_inner or len(decoded) % shape[0]:
            raise BoltError("UNIMPLEMENTED", "tensor %r: target %s has no whole bytes per element, so a cut of "
                            "an inner dimension cannot be gathered; decode to f32, f16 or bf16"
                            % (t["name"], target), t["name"])
        rows = np.frombuffer(decoded, np.uint8).reshape(shape[0], -1)
        return rows[np.concatenate([np.arange(s, e) for s, e in runs[0]] or [np.arange(0)])].tobytes()
    size = len(decoded) // elements
    arr = np.frombuffer(decoded, np.uint8).reshape(list(shape) + [size])
    idx = [np.concatenate([np.arange(s, e) for s, e in rs]) if rs else np.arange(0) for rs in runs]
    return arr[np.ix_(*idx, np.arange(size))].tobytes()
