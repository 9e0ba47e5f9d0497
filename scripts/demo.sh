#!/usr/bin/env bash
# README command 1: set up, build, and run the main job on the real model
# shipped in testdata/ (TinyStories-656K, Apache-2.0): convert to .bolt,
# inspect, verify, convert back and check every tensor bit for bit.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/scripts/setup.sh"
BUILD="$ROOT/build"
echo "== build (Release)"
"$ROOT/scripts/build.sh" "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBOLTPACK_TESTS=OFF | tail -n 3
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
ls -l "$MODEL" "$OUT"/tinystories*
