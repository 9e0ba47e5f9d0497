#!/usr/bin/env bash
# scripts/check_layers.sh [ROOT]: fails on a project #include that goes up
# or sideways in the library's layers (issue 16), each folder depending only
# on those below it:
#
#   common  <-  codecs  <-  format  <-  io  <-  tools, capi  <-  gpu
#
# gpu/ (the CUDA library, issue 18) sits on the C API alone (boltpack.h) and
# the codecs' constant tables; boltpack/cuda.h is its public header.
# tools and capi are peers: neither includes the other. The public headers
# (include/boltpack/) belong to the layer of what they declare (the table
# below); the generated manifest schema (boltpack_proto/) to format. Tests,
# benchmarks, fuzz targets, examples, the Python module (python/, over tools
# and capi) and spec/ sit above everything and are not checked; includes of other libraries (<...>, absl/, google/) are not
# either.
#
# scripts/layers.allow lists the includes that still break the rule
# ("FILE INCLUDED" per line, the debt issue 16 moves away). Anything else
# that breaks it fails; so does an allowed line that no longer occurs, so the
# list can only shrink.
set -euo pipefail
ROOT="$(cd "${1:-$(dirname "$0")/..}" && pwd)"
cd "$ROOT"

awk -v allow_file="scripts/layers.allow" '
  function public_rank(h) {
    if (h ~ /^boltpack\/(types|version|piece_source|tensor_info)\.h$/) return 0
    if (h ~ /^boltpack\/(codec|codec_registry|kv_split)\.h$/) return 1
    if (h ~ /^boltpack\/(reader|writer|elastic|budget_view|tensor_list|boltpack_cxx)\.h$/) return 2
    if (h ~ /^boltpack\/(boltpack\.h|boltpack\.hpp)$/) return 4
    if (h == "boltpack/cuda.h") return 5
    return -1
  }
  # The layer of an included path ("format/reader_impl.h", "boltpack/codec.h").
  function rank_of(path,   top) {
    top = path; sub(/\/.*/, "", top)
    if (top == "boltpack") return public_rank(path)
    if (top == "boltpack_proto") return 2
    return (top in RANK) ? RANK[top] : -2
  }
  # The folder an include lands in, to tell tools from capi at one rank.
  function folder_of(path,   top) {
    top = path; sub(/\/.*/, "", top)
    if (top == "boltpack") return public_rank(path) == 4 ? "capi" : "include"
    return top
  }
  BEGIN {
    RANK["common"] = 0; RANK["codecs"] = 1; RANK["format"] = 2; RANK["io"] = 3; RANK["tools"] = 4; RANK["capi"] = 4; RANK["gpu"] = 5
    while ((getline line < allow_file) > 0) {
      if (line ~ /^[ \t]*(#|$)/) continue
      ALLOWED[line] = 1
    }
  }
  FNR == 1 {
    file = FILENAME
    if (file ~ /^include\//) {
      self = file; sub(/^include\//, "", self)
      from = public_rank(self); from_folder = from == 4 ? "capi" : "include"
      if (from < 0) { printf "%s: a public header in no layer (add it to scripts/check_layers.sh)\n", file; bad++ }
    } else {
      from_folder = file; sub(/\/.*/, "", from_folder); from = RANK[from_folder]
    }
  }
  /^#include "/ {
    inc = $0; sub(/^#include "/, "", inc); sub(/".*/, "", inc)
    to = rank_of(inc)
    if (to == -2) next                       # another library, or a path the build adds
    to_folder = folder_of(inc)
    up = to > from || (to == from && to == 4 && to_folder != from_folder && to_folder != "include")
    if (to == -1) up = 1                     # a public header in no layer
    key = file " " inc
    if (!up) next
    if (key in ALLOWED) { SEEN[key] = 1; next }
    printf "%s:%d: includes %s, a layer above or beside it (%s -> %s)\n", file, FNR, inc, from_folder, to_folder
    bad++
  }
  END {
    for (k in ALLOWED) if (!(k in SEEN)) { printf "scripts/layers.allow: \"%s\" no longer occurs: remove the line\n", k; bad++ }
    n = 0; for (k in SEEN) n++
    printf "check_layers: %d upward or sideways includes outside scripts/layers.allow, %d allowed\n", bad + 0, n
    exit bad > 0
  }
' $(git ls-files 'common/*' 'codecs/*' 'format/*' 'io/*' 'tools/*' 'capi/*' 'include/*' 'gpu/*' | grep -E '\.(h|hpp|cc|c|cu|cuh)$')
