#!/usr/bin/env python3
"""Regenerates recipes/tinystories-656k-elastic.json (spec/elastic.md).

FFN channels of TinyStories-656K are ranked per layer by an activation-free
score, |up row| * |down column| (L2 norms of the F16 weights of llama.cpp's
GGUF), and two nested budgets keep 75% and 50% of the 384 channels. Query
heads are ranked inside their GQA group (spec/elastic.md `groups`) and
`heads50` keeps one head of each group's two.

    bolt-pack convert testdata/tinystories-656k/TinyStories-656K.f16.gguf -o /tmp/ts.safetensors
    python3 recipes/tinystories-656k-elastic.py /tmp/ts.safetensors recipes/tinystories-656k-elastic.json
"""
import json
import math
import struct
import sys

src, dst = sys.argv[1], sys.argv[2]
f = open(src, 'rb')
n = struct.unpack('<Q', f.read(8))[0]
header = json.loads(f.read(n))
base = 8 + n


def load(name):
    t = header[name]
    a, b = t['data_offsets']
    f.seek(base + a)
    fmt, size = {'F16': ('e', 2), 'F32': ('f', 4)}[t['dtype']]
    return struct.unpack('<%d%s' % ((b - a) // size, fmt), f.read(b - a)), t['shape']


scores = {}
for layer in range(2):
    up, (ffn, dim) = load(f'blk.{layer}.ffn_up.weight')
    down, _ = load(f'blk.{layer}.ffn_down.weight')  # [dim, ffn]
    s = []
    for i in range(ffn):
        nu = math.sqrt(sum(x * x for x in up[i * dim:(i + 1) * dim]))
        nd = math.sqrt(sum(down[r * ffn + i] ** 2 for r in range(dim)))
        s.append(float('%.6g' % (nu * nd)))
    scores[str(layer)] = s

# Query heads: 8 heads of 16 rows, in 4 groups of 2 sharing a KV head (GQA);
# a head is ranked inside its group by |q rows| * |output columns|, so a
# budget keeps the best head of each group and the KV heads stay whole.
HEADS, HEAD_DIM = 8, 16
head_scores = {}
for layer in range(2):
    q, (rows, dim) = load(f'blk.{layer}.attn_q.weight')  # [heads*16, dim]
    o, _ = load(f'blk.{layer}.attn_output.weight')       # [dim, heads*16]
    s = []
    for h in range(HEADS):
        nq = math.sqrt(sum(x * x for x in q[h * HEAD_DIM * dim:(h + 1) * HEAD_DIM * dim]))
        no = math.sqrt(sum(o[r * rows + c] ** 2 for r in range(dim) for c in range(h * HEAD_DIM, (h + 1) * HEAD_DIM)))
        s.append(float('%.6g' % (nq * no)))
    head_scores[str(layer)] = s

lines = [
    '{',
    ' "version": 1,',
    ' "layers": {"count": 2, "name_pattern": "blk.{L}."},',
    ' "axes": {',
    '  "ffn": {"scope": "layer", "granularity": 32, "metadata_key": "feed_forward_length"},',
    '  "heads": {"scope": "layer", "unit_elems": 16, "groups": 4, "metadata_key": "attention.head_count"}',
    ' },',
    ' "bindings": [',
    '  {"tensor": "blk.{L}.ffn_gate.weight", "dims": ["ffn", "-"]},',
    '  {"tensor": "blk.{L}.ffn_up.weight", "dims": ["ffn", "-"]},',
    '  {"tensor": "blk.{L}.ffn_down.weight", "dims": ["-", "ffn"]},',
    '  {"tensor": "blk.{L}.attn_q.weight", "dims": ["heads", "-"]},',
    '  {"tensor": "blk.{L}.attn_output.weight", "dims": ["-", "heads"]}',
    ' ],',
    ' "importance_method": "activation-free weight norms: ffn |up row| * |down column|; heads |q rows| * |output columns|",',
    ' "importance": {',
    ' "ffn": {',
    ',\n'.join('  %s: %s' % (json.dumps(k), json.dumps(v)) for k, v in scores.items()),
    ' },',
    ' "heads": {',
    ',\n'.join('  %s: %s' % (json.dumps(k), json.dumps(v)) for k, v in head_scores.items()),
    ' }},',
    ' "budgets": [',
    '  {"name": "ffn75", "per_layer": {"ffn": [288, 288]}},',
    '  {"name": "ffn50", "per_layer": {"ffn": [192, 192]}, "nested_in": "ffn75"},',
    '  {"name": "heads50", "per_layer": {"heads": [4, 4]}},',
    '  {"name": "ffn50-heads50", "per_layer": {"ffn": [192, 192], "heads": [4, 4]}, "nested_in": "ffn50"}',
    ' ]',
    '}',
]
open(dst, 'w').write('\n'.join(lines) + '\n')
