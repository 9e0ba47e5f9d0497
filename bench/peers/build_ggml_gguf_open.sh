#!/usr/bin/env bash
# Builds the peer of bench/million_tensors.py: ggml's own GGUF reader
# (src/gguf.cpp, as llama.cpp's loader calls it) in a program that opens a
# file and prints its counts. ggml's source is not in this tree: pass a
# checkout (the measured one: ggml-org/ggml d99724f).
#
#   bench/peers/build_ggml_gguf_open.sh GGML_SRC OUT_BINARY
set -euo pipefail
src=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rev=${GGML_REV:-$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)}
defs=(-DGGML_VERSION="\"$rev\"" -DGGML_COMMIT="\"$rev\"")
gcc -O2 -std=gnu11 -I"$src/include" -I"$src/src" "${defs[@]}" -c "$src/src/ggml.c" -o "$work/ggml_c.o"
gcc -O2 -std=gnu11 -I"$src/include" -I"$src/src" -c "$src/src/ggml-quants.c" -o "$work/quants.o"
for f in gguf ggml ggml-threading; do
  g++ -O2 -std=c++17 -I"$src/include" -I"$src/src" "${defs[@]}" -c "$src/src/$f.cpp" -o "$work/${f}_cpp.o"
done
g++ -O2 -std=c++17 -I"$src/include" -c "$here/ggml_gguf_open.cpp" -o "$work/main.o"
gcc -O2 -c "$here/ggml_backend_stubs.c" -o "$work/stubs.o"
g++ -static-libstdc++ -static-libgcc "$work"/*.o -o "$out" -lm -pthread
echo "built $out (ggml $rev)"
