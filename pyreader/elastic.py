"""Validation of the elastic manifest at open (spec/elastic.md §1-§3).

Written from elastic.md alone. DATA_LOSS for every rule of §2; the counts of
§3 (layers, axes, bindings, budgets, segments, budgets x parents) are limits,
RESOURCE_EXHAUSTED; the length and value bounds are validity rules (§3).
Budgets are validated here; budget.py cuts them (decode --budget).
"""

import re

from errors import BoltError

AXIS_NAME = re.compile(r"^[a-z0-9_]{1,64}$")
# B by codec id (§2 rule 6); the ggml-<type> pass-through codecs are not checked here (not done).
BLOCK = {"q8_0": 32, "mxfp4": 32, "nvfp4": 16, "nvfp4-ggml": 64, "int4-g128": 128, "iq2_xxs": 256}
U32 = 1 << 32


def dl(msg):
    return BoltError("DATA_LOSS", "elastic: " + msg)


def rx(msg):
    return BoltError("RESOURCE_EXHAUSTED", "elastic: " + msg)


def layer_span(name, pattern):
    """[E-1.3]: (index, start, end) of the first qualifying run of digits, or None."""
    if "{L}" not in pattern:
        return None
    pre, post = pattern.split("{L}", 1)
    start = 0
    while True:
        i = name.find(pre, start)
        if i < 0:
            return None
        j = i + len(pre)
        k = j
        while k < len(name) and k - j < 10 and name[k] in "0123456789":
            k += 1
        run = name[j:k]
        if run and (run == "0" or run[0] != "0") and int(run) <= U32 - 1 and name.startswith(post, k):
            return int(run), j, k
        start = i + 1


def find_layer(name, pattern):
    """[E-1.3]: (index, template) of the first qualifying position, or None."""
    f = layer_span(name, pattern)
    return None if f is None else (f[0], name[:f[1]] + "{L}" + name[f[2]:])


class Elastic:
    def __init__(self, em, tensors):
        self.em = em
        self.tensors = tensors
        self.lc = em["layer_count"]
        self.pattern = em["layer_pattern"]

    def validate(self):
        self._manifest()
        self._axes()
        self._bindings()
        self._matches()
        self._budgets()
        self._flat_cuts()
        self._blocks()
        self._importance()

    # rule 1
    def _manifest(self):
        em = self.em
        uses_v2 = any(a["groups"] > 1 for a in em["axes"]) or any(
            b["segmented"] or any("*" in d for d in b["dims"]) or
            any("*" in s["axis"] for sd in b["segmented"] for s in sd["segments"]) for b in em["bindings"])
        if em["version"] not in (1, 2, 3):  # [E-2.1]
            raise dl("version %d is not 1, 2 or 3" % em["version"])
        for b in em["bindings"]:
            if b.get("flat") and em["version"] < 3:  # [E-2.1] [E-1.4]
                raise dl('version %d but binding "%s" is flat, which needs version 3 (format 1.4)'
                         % (em["version"], b["tensor"]))
        if em["version"] == 1 and uses_v2:  # [E-2.1]
            raise dl("version 1 but the manifest uses groups, segments or products: need version 2")
        if em["storage_order"] != 1:  # [E-2.1]
            raise dl("storage_order is not PREFIX")
        if self.lc > 65536:  # [E-3.1]
            raise rx("layer_count %d exceeds 65536" % self.lc)
        p = self.pattern
        pb = p.encode()
        if self.lc > 0:
            if p.count("{L}") != 1 or not 4 <= len(pb) <= 4096 or "\0" in p:  # [E-2.1] [E-3.10]
                raise dl("layer_pattern %r invalid" % p)
        elif p:
            raise dl("layer_pattern set but layer_count is 0")

    # rule 2
    def _axes(self):
        axes = self.em["axes"]
        if len(axes) > 64:  # [E-3.2]
            raise rx("more than 64 axes")
        if not axes:  # [E-2.2]
            raise dl("no axes")
        self.ax = {}
        for a in axes:
            n = a["name"]
            if not AXIS_NAME.match(n) or n in self.ax:  # [E-2.2] [E-3.8]
                raise dl("axis name %r invalid or repeated" % n)
            if a["scope"] not in (1, 2) or (a["scope"] == 1 and self.lc == 0):
                raise dl("axis %r: scope unset, or per layer with layer_count 0" % n)
            for f in ("granularity", "unit_elems"):  # [E-3.5]
                if not 1 <= a[f] <= U32:
                    raise dl("axis %r: %s %d not in 1..2^32" % (n, f, a[f]))
            want = self.lc if a["scope"] == 1 else 1
            if len(a["parent"]) != want or any(v > U32 for v in a["parent"]):
                raise dl("axis %r: parent has %d values, needs %d, each <= 2^32" % (n, len(a["parent"]), want))
            if a["groups"] > U32 or any(v % max(a["groups"], 1) for v in a["parent"]):
                raise dl("axis %r: parent size is not divisible by its %d groups" % (n, a["groups"]))
            self.ax[n] = a
        for a in axes:
            if a["at_most"]:
                b = self.ax.get(a["at_most"])
                if b is None or b is a or b["scope"] != a["scope"] or any(
                        x > y for x, y in zip(a["parent"], b["parent"])):
                    raise dl("axis %r: at_most %r invalid" % (a["name"], a["at_most"]))

    def _entry(self, bname, e):
        """An axis name or product A*B: the list of axes it names."""
        parts = e.split("*")
        if len(parts) > 2:  # [E-1.2] [E-3.7]
            raise dl('binding "%s": product "%s" has more than two axes' % (bname, e))
        for x in parts:
            if x not in self.ax:
                raise dl('binding "%s": unknown axis "%s"' % (bname, x))
        if len(parts) == 2:
            if parts[0] == parts[1]:
                raise dl('binding "%s": product "%s" names axis "%s" twice' % (bname, e, parts[0]))
            if self.ax[parts[0]]["scope"] != self.ax[parts[1]]["scope"]:
                raise dl('binding "%s": product "%s" multiplies axes of different scopes' % (bname, e))
        return parts

    # rule 3
    def _bindings(self):
        bs = self.em["bindings"]
        if len(bs) > 65536:  # [E-3.3]
            raise rx("more than 65536 bindings")
        seen = set()
        for b in bs:
            n = b["tensor"]
            if not 1 <= len(n.encode()) <= 4096 or "\0" in n or n in seen or n.count("{L}") > 1:
                raise dl('binding "%s": name invalid or repeated' % n)
            seen.add(n)
            tmpl = "{L}" in n
            if tmpl:
                if self.lc == 0:
                    raise dl('binding "%s": "{L}" but layer_count is 0' % n)
                if find_layer(n.replace("{L}", "0"), self.pattern) != (0, n):
                    raise dl('binding "%s": {L} is not where layer_pattern puts the index' % n)
            elif self.lc:
                f = find_layer(n, self.pattern)
                if f and f[0] < self.lc:
                    raise dl('binding "%s": names a tensor of layer %d; bind it by template' % (n, f[0]))
            if not 1 <= len(b["dims"]) <= 8:
                raise dl('binding "%s": %d dims' % (n, len(b["dims"])))
            if b.get("flat") and len(b["dims"]) != 1:  # [E-2.3]
                raise dl('binding "%s": a flat binding has exactly one dims entry (the tensor\'s elements taken '
                         "flat), not %d" % (n, len(b["dims"])))
            axes_used = []
            for d in b["dims"]:
                if d not in ("-", "+"):
                    axes_used += self._entry(n, d)
            plus = [i for i, d in enumerate(b["dims"]) if d == "+"]
            sdims = [s["dim"] for s in b["segmented"]]
            for sd in b["segmented"]:
                if sd["dim"] >= len(b["dims"]) or b["dims"][sd["dim"]] != "+":
                    raise dl('segmented dim %d is not a dimension marked "+"' % sd["dim"])
                if len(sd["segments"]) > 64:  # [E-3.6]
                    raise rx('binding "%s": more than 64 segments' % n)
                if not sd["segments"]:
                    raise dl('binding "%s": segmented dim %d has no segments' % (n, sd["dim"]))
                for k, s in enumerate(sd["segments"]):
                    if bool(s["axis"]) == bool(s["fixed_elems"]):
                        raise dl("dim %d segment %d must set exactly one of axis and fixed_elems" % (sd["dim"], k))
                    if s["axis"]:
                        axes_used += self._entry(n, s["axis"])
            if sorted(sdims) != plus:
                raise dl('binding "%s": each "+" needs exactly one segmented entry' % n)
            if not axes_used:
                raise dl('binding "%s": binds no axis' % n)
            if not tmpl and any(self.ax[a]["scope"] == 1 for a in axes_used):
                raise dl('binding "%s": per-layer axis on a name without {L}' % n)

    def parent(self, a, layer):
        ax = self.ax[a]
        return ax["parent"][layer] if ax["scope"] == 1 else ax["parent"][0]

    def _span(self, tname, d, e, layer):
        parts = e.split("*")
        for a in parts:
            if self.parent(a, layer) == 0:
                if len(parts) == 2:
                    raise dl('tensor "%s": dimension %d is the product "%s" but this layer lacks axis "%s"'
                             % (tname, d, e, a))
                raise dl('tensor "%s": dimension %d: layer lacks axis "%s"' % (tname, d, a))
        n = 1
        for a in parts:
            n *= self.parent(a, layer) * self.ax[a]["unit_elems"]
        if n >= 1 << 64:
            raise dl('tensor "%s": dimension %d: product "%s" spans more than 2^64 elements' % (tname, d, e))
        return n

    # rule 4
    def _matches(self):
        self.matched = []  # (tensor, binding, layer)
        by_name = {t["name"]: t for t in self.tensors}
        by_tmpl = {}
        if self.lc:
            for t in self.tensors:
                f = find_layer(t["name"], self.pattern)
                if f:
                    by_tmpl.setdefault(f[1], []).append((t, f[0]))
        for b in self.em["bindings"]:
            n = b["tensor"]
            hits = by_tmpl.get(n, []) if "{L}" in n else ([(by_name[n], None)] if n in by_name else [])
            if not hits:  # [E-2.4]
                raise dl('binding "%s" matches no tensor' % n)
            for t, layer in hits:
                self._check_match(t, b, layer)
                self.matched.append((t, b, layer))

    def _check_match(self, t, b, layer):
        tn, shape = t["name"], t["shape"]
        if b.get("flat"):  # [E-1.4] one dimension of all its elements
            if not shape:
                raise dl('tensor "%s": a flat binding on a tensor without dimensions' % tn)
            n = 1
            for d in shape:
                n *= d
            shape = [n]
        if layer is not None and layer >= self.lc:
            raise dl('tensor "%s": layer %d is not below layer_count' % (tn, layer))
        if len(shape) != len(b["dims"]):
            raise dl('tensor "%s": rank %d but the binding has %d dims' % (tn, len(shape), len(b["dims"])))
        segs = {sd["dim"]: sd["segments"] for sd in b["segmented"]}
        for d, e in enumerate(b["dims"]):
            if e == "-":
                continue
            if e == "+":
                total = sum(s["fixed_elems"] if not s["axis"] else self._span(tn, d, s["axis"], layer)
                            for s in segs[d])
                if total != shape[d]:
                    raise dl('tensor "%s": dimension %d is %d but its segments add up to %d' % (tn, d, shape[d], total))
            elif self._span(tn, d, e, layer) != shape[d]:
                raise dl('tensor "%s": dimension %d is %d but "%s" has %d elements there'
                         % (tn, d, shape[d], e, self._span(tn, d, e, layer)))

    # rule 5
    def count(self, bud, a, layer):
        c = bud["_counts"].get(a)
        if c is not None:
            return c[layer] if self.ax[a]["scope"] == 1 else c[0]
        if self.ax[a]["scope"] == 1 and not bud["layer_keep"][layer]:
            return 0
        return self.parent(a, layer)

    def _layers(self, a):
        return range(self.lc) if self.ax[a]["scope"] == 1 else [0]

    def _budgets(self):
        bud = self.em["budgets"]
        if len(bud) > 4096:  # [E-3.4]
            raise rx("more than 4096 budgets")
        if len(bud) * sum(len(a["parent"]) for a in self.em["axes"]) > 1 << 26:  # [E-3.11]
            raise rx("budgets x parent entries exceed 2^26")
        self.budgets = {}
        for b in bud:
            n = b["name"]
            if not 1 <= len(n.encode()) <= 256 or "\0" in n or n in self.budgets:  # [E-3.9]
                raise dl('budget "%s": name invalid or repeated' % n)
            if len(b["layer_keep"]) != self.lc:
                raise dl('budget "%s": layer_keep has %d entries, layer_count is %d' % (n, len(b["layer_keep"]), self.lc))
            if self.lc and not any(b["layer_keep"]):
                raise dl('budget "%s": keeps no layer' % n)
            b["_counts"] = {}
            for s in b["sizes"]:
                a = s["axis"]
                if a not in self.ax or a in b["_counts"]:
                    raise dl('budget "%s": axis "%s" unknown or listed twice' % (n, a))
                if len(s["counts"]) != len(self._layers(a)):
                    raise dl('budget "%s": axis "%s" has %d counts' % (n, a, len(s["counts"])))
                b["_counts"][a] = s["counts"]
            self._budget_counts(b)
            if b["nested_in"]:
                outer = self.budgets.get(b["nested_in"])
                if outer is None:
                    raise dl('budget "%s": nested_in "%s" is not an earlier budget' % (n, b["nested_in"]))
                if any(k and not o for k, o in zip(b["layer_keep"], outer["layer_keep"])):
                    raise dl('budget "%s" keeps a layer "%s" drops' % (n, outer["name"]))
                for a in self.ax:
                    for L in self._layers(a):
                        if self.count(b, a, L) > self.count(outer, a, L):
                            raise dl('budget "%s": axis "%s" in layer %d keeps %d units, more than "%s" (%d), '
                                     "so it is not nested in it" % (n, a, L, self.count(b, a, L), outer["name"],
                                                                   self.count(outer, a, L)))
            self.budgets[n] = b

    def _budget_counts(self, b):
        n = b["name"]
        for a, ax in self.ax.items():
            for L in self._layers(a):
                c, p = self.count(b, a, L), self.parent(a, L)
                dropped = ax["scope"] == 1 and not b["layer_keep"][L]
                if dropped or p == 0:
                    if c:
                        raise dl('budget "%s": axis "%s" in layer %d keeps %d units of a dropped or absent axis'
                                 % (n, a, L, c))
                    continue
                if not 1 <= c <= p:
                    raise dl('budget "%s": axis "%s" in layer %d keeps %d of %d units' % (n, a, L, c, p))
                g = max(ax["groups"], 1)
                if c % g:
                    raise dl('budget "%s": axis "%s" in layer %d keeps %d units, not divisible by its %d groups'
                             % (n, a, L, c, g))
                if c != p and c % ax["granularity"]:
                    raise dl('budget "%s": axis "%s" in layer %d keeps %d units, not a multiple of its '
                             "granularity %d" % (n, a, L, c, ax["granularity"]))
                if ax["at_most"] and c > self.count(b, ax["at_most"], L):
                    raise dl('budget "%s": axis "%s" exceeds its at_most "%s"' % (n, a, ax["at_most"]))

    # rule 6
    def _axis_runs(self, b, a, layer, base):
        ax = self.ax[a]
        p, u, k = self.parent(a, layer), ax["unit_elems"], self.count(b, a, layer)
        g = max(ax["groups"], 1)
        if k == p or g == 1:
            return [(base, base + k * u)]
        G = p // g
        return [(base + i * G * u, base + (i * G + k // g) * u) for i in range(g)]

    def _entry_runs(self, b, e, layer, base):
        parts = e.split("*")
        if len(parts) == 1:
            return self._axis_runs(b, e, layer, base)
        A, B = parts
        uA = self.ax[A]["unit_elems"]
        inner = self.parent(B, layer) * self.ax[B]["unit_elems"]
        runs = []
        for start, end in self._axis_runs(b, A, layer, 0):
            for a in range(start // uA, end // uA):
                for ua in range(uA):
                    runs += self._axis_runs(b, B, layer, base + (a * uA + ua) * inner)
        return runs

    def dim_runs(self, b, bind, d, layer, size):
        """The kept element runs [start, end) of dimension d (elastic.md §1), merged, empty ones dropped."""
        e = bind["dims"][d]
        if e == "-":
            return [(0, size)]
        runs = []
        if e == "+":
            segs = {sd["dim"]: sd["segments"] for sd in bind["segmented"]}
            pos = 0
            for s in segs[d]:
                n = s["fixed_elems"] or self._span("", d, s["axis"], layer)
                runs += [(pos, pos + n)] if not s["axis"] else self._entry_runs(b, s["axis"], layer, pos)
                pos += n
        else:
            runs = self._entry_runs(b, e, layer, 0)
        merged = []
        for r in runs:
            if r[1] <= r[0]:
                continue
            if merged and merged[-1][1] == r[0]:
                merged[-1] = (merged[-1][0], r[1])
            else:
                merged.append(r)
        return merged

    def flat_runs(self, b, bind, layer, t):
        """The kept runs of a flat binding's one dims entry, over the tensor's elements taken flat."""
        n = 1
        for d in t["shape"]:
            n *= d
        return self.dim_runs(b, bind, len(bind["dims"]) - 1, layer, n)

    @staticmethod
    def flat_rows(flat, shape):
        """A flat cut as runs of row 0 when every row keeps the same (outer dimensions whole), else None."""
        inner, rows = shape[-1], 1
        for d in shape[:-1]:
            rows *= d
        per_row = [[] for _ in range(rows)] if rows <= 1 << 20 else None
        if per_row is None:
            return None
        for s, e in flat:
            while s < e:
                r, c = divmod(s, inner)
                n = min(e - s, inner - c)
                per_row[r].append((c, c + n))
                s += n
        return per_row[0] if all(p == per_row[0] for p in per_row) else None

    # rule 9
    def _flat_cuts(self):
        for t, bind, layer in self.matched:
            if not bind.get("flat"):
                continue
            for b in self.em["budgets"]:
                if layer is not None and not b["layer_keep"][layer]:
                    continue
                flat = self.flat_runs(b, bind, layer, t)
                if self.flat_rows(flat, t["shape"]) is None:  # [E-2.9]
                    raise dl('budget "%s": tensor "%s" of flat binding "%s" keeps %d of its elements, which is not '
                             "its outer dimensions whole with the same elements of every row"
                             % (b["name"], t["name"], bind["tensor"], sum(e - s for s, e in flat)))

    def _blocks(self):
        for t, bind, layer in self.matched:
            if bind.get("flat"):
                B = BLOCK.get(t["codec"]["id"])
                for b in self.em["budgets"] if B else []:
                    if layer is not None and not b["layer_keep"][layer]:
                        continue
                    row = self.flat_rows(self.flat_runs(b, bind, layer, t), t["shape"])
                    if row == [(0, t["shape"][-1])]:
                        continue
                    for s0, e0 in row:
                        if s0 % B or e0 % B:  # [E-2.6]
                            raise dl('budget "%s": tensor "%s" keeps elements [%d, %d) of its innermost dimension '
                                     "(flat binding), which splits its codec's blocks of %d elements"
                                     % (b["name"], t["name"], s0, e0, B))
                continue
            B = BLOCK.get(t["codec"]["id"])
            last = len(bind["dims"]) - 1
            if not B or bind["dims"][last] == "-":
                continue
            for b in self.em["budgets"]:
                if layer is not None and not b["layer_keep"][layer]:
                    continue
                merged = self.dim_runs(b, bind, last, layer, t["shape"][last])
                if merged == [(0, t["shape"][-1])]:
                    continue  # not cut: rule 6 constrains only a cut innermost dimension
                for s0, e0 in merged:
                    if s0 % B or e0 % B:  # [E-2.6]
                        raise dl('budget "%s": tensor "%s" keeps elements [%d, %d) of its innermost dimension, '
                                 "which splits its codec's blocks of %d elements" % (b["name"], t["name"], s0, e0, B))

    # rule 7
    def _importance(self):
        seen = set()
        for im in self.em["importance"]:
            a, L = im["axis"], im["layer"]
            if a not in self.ax or (a, L) in seen:
                raise dl('importance: axis "%s" unknown or layer %d repeated' % (a, L))
            seen.add((a, L))
            if L not in self._layers(a):
                raise dl('importance: axis "%s" layer %d out of range' % (a, L))
            p = self.parent(a, L)
            if len(im["scores"]) != p or len(im["order"]) != p or len(set(im["order"])) != p:
                raise dl('importance: axis "%s" layer %d: scores/order do not have %d entries, distinct' % (a, L, p))
            if any((s >> 23) & 0xFF == 0xFF for s in im["scores"]):
                raise dl('importance: axis "%s" layer %d: a score is not finite' % (a, L))


def validate(m):
    """The validated Elastic of the manifest, or None when the file has none."""
    if m["elastic"] is None:
        return None
    e = Elastic(m["elastic"], m["tensors"])
    e.validate()  # [E-2.8]
    return e
