#!/usr/bin/env bash
# README command 1: set up, build, and run the main job on the real model
# shipped in testdata/ (TinyStories-656K, Apache-2.0): convert to .bolt,
# inspect, verify, convert back and check every tensor bit for bit; then a
# quantization recipe, lossless bf16 with a draft view, an elastic file cut
# to 75% FFN width and exported to GGUF, checked for llama.cpp and run by
# llama.cpp itself (node-llama-cpp from npm; skipped when npm is offline);
# last, the Python module is installed for Debian's python3 (cmake --install
# into /usr/local/lib/python3.11/dist-packages) and reads the files.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/scripts/setup.sh"
BUILD="$ROOT/build"
echo "== build (Release)"
"$ROOT/scripts/build.sh" "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBOLTPACK_TESTS=OFF \
  -DBOLTPACK_PYTHON=ON -DPython3_EXECUTABLE=/usr/bin/python3 | tail -n 3
BP="$BUILD/bolt-pack"
OUT="$ROOT/out"
mkdir -p "$OUT"
MODEL="$ROOT/testdata/tinystories-656k/model.safetensors"

echo "== convert safetensors -> bolt"
"$BP" convert "$MODEL" -o "$OUT/tinystories.bolt"
echo "== inspect"
"$BP" inspect "$OUT/tinystories.bolt"
echo "== verify"
"$BP" verify "$OUT/tinystories.bolt"
echo "== convert bolt -> bf16 bolt (zstd) and back to safetensors"
"$BP" convert "$MODEL" -o "$OUT/tinystories-bf16.bolt" --codec '*=bf16' --zstd 3
"$BP" verify "$OUT/tinystories-bf16.bolt"
"$BP" convert "$OUT/tinystories.bolt" -o "$OUT/tinystories.roundtrip.safetensors"
if cmp -s "$MODEL" "$OUT/tinystories.roundtrip.safetensors"; then
  echo "round trip: byte-identical to the original safetensors file"
else
  echo "round trip: FILES DIFFER" >&2
  exit 1
fi

GGUF="$ROOT/testdata/tinystories-656k/TinyStories-656K.f16.gguf"
echo "== recipe (recipes/tinystories-656k.textproto) -> .bolt -> GGUF, checked for llama.cpp"
"$BP" convert "$GGUF" -o "$OUT/tinystories-mix.bolt" --recipe "$ROOT/recipes/tinystories-656k.textproto"
"$BP" inspect "$OUT/tinystories-mix.bolt" | sed -n '/^totals/,$p'
"$BP" convert "$OUT/tinystories-mix.bolt" -o "$OUT/tinystories-mix.gguf"
"$BP" verify --target llama.cpp "$OUT/tinystories-mix.gguf"

echo "== lossless bf16: exponent Huffman, and the Cassandra split with a draft view"
"$BP" convert "$MODEL" -o "$OUT/tinystories-bf16.safetensors" --codec '*=bf16'
"$BP" convert "$OUT/tinystories-bf16.safetensors" -o "$OUT/tinystories-huffman.bolt" --codec '*=bf16-huffman'
"$BP" convert "$OUT/tinystories-bf16.safetensors" -o "$OUT/tinystories-spec.bolt" --codec '*=bf16-spec:keep=0.5,mbits=3'
"$BP" convert "$OUT/tinystories-spec.bolt" -o "$OUT/tinystories-draft.safetensors" --view draft
"$BP" convert "$OUT/tinystories-spec.bolt" -o "$OUT/tinystories-spec.roundtrip.safetensors"
cmp "$OUT/tinystories-bf16.safetensors" "$OUT/tinystories-spec.roundtrip.safetensors" && echo "bf16-spec full view: byte-identical"
"$BP" inspect "$OUT/tinystories-spec.bolt" | sed -n '/^views/,/^$/p'
ls -l "$OUT/tinystories-bf16.safetensors" "$OUT/tinystories-huffman.bolt" "$OUT/tinystories-spec.bolt"

echo "== elastic: FFN channels ranked, budgets 75% and 50%; slice ffn75 -> GGUF"
"$BP" convert "$GGUF" -o "$OUT/tinystories-elastic.bolt" --elastic "$ROOT/recipes/tinystories-656k-elastic.json"
"$BP" slice "$OUT/tinystories-elastic.bolt" --list-budgets
"$BP" slice "$OUT/tinystories-elastic.bolt" --budget ffn75 -o "$OUT/tinystories-ffn75.gguf"
"$BP" verify --target llama.cpp "$OUT/tinystories-ffn75.gguf"
ls -l "$MODEL" "$OUT"/tinystories*

echo "== llama.cpp runs the GGUF files bolt-pack wrote (round trips, Q8_0, FFN slices)"
"$ROOT/scripts/llama_cpp_check.sh" "$BP" "$BUILD/llama_cpp"

echo "== Python: import boltpack (installed for /usr/bin/python3), safetensors' API over the .bolt files"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO cmake --install "$BUILD" --component Python | tail -n 1
(cd / && /usr/bin/python3 - "$OUT" "$MODEL" <<'PY'
import sys
import numpy as np
import boltpack
out, model = sys.argv[1], sys.argv[2]
with boltpack.safe_open(f"{out}/tinystories.bolt") as f, boltpack.safe_open(model) as ref:
    same = all(np.array_equal(f.get_tensor(n), ref.get_tensor(n)) for n in ref.keys())
    rows = f.get_slice("lm_head.weight")[0:4, 0:8]
    print(f"boltpack {boltpack.__version__}: {len(f.keys())} tensors, bit-identical to the safetensors file: {same}; "
          f"lm_head.weight[0:4, 0:8] has shape {rows.shape}")
with boltpack.safe_open(f"{out}/tinystories-spec.bolt", framework="pt", view="draft") as f:
    print("draft view of the Cassandra file:", f.views(), f.get_tensor("model.norm.weight").dtype)
with boltpack.safe_open(f"{out}/tinystories-elastic.bolt", budget="ffn50") as f:
    print("budget ffn50:", f.get_slice("blk.0.ffn_up.weight").get_shape(), "of", boltpack.safe_open(
        f"{out}/tinystories-elastic.bolt").get_slice("blk.0.ffn_up.weight").get_shape())
PY
)
