#!/usr/bin/env bash
# scripts/build_static_bench.sh [BUILD_DIR]: out/decode_verify_bench, a
# decode_verify_bench that needs nothing but glibc (libc, libm, libpthread,
# ld-linux), for a machine without this one's Debian libraries: the bench's
# object and BUILD_DIR's (default build/) library objects, linked with the
# static Abseil, protobuf, zstd and xxhash archives, libstdc++ and libgcc.
# Builds what Debian lacks as archives (below) from sources given by path.
#
# Google Benchmark ships here as a shared library only (libbenchmark.a is
# absent on Debian 12), so where there is no archive it is compiled from a
# google/benchmark checkout or git directory (BENCHMARK_SRC, default
# /work/.mirror/google+benchmark/repo) at the tag of the installed headers
# (BENCHMARK_TAG, default v1.7.1), into out/benchmark/.
#
# On the other machine:
#   ./decode_verify_bench --benchmark_repetitions=8 --benchmark_enable_random_interleaving=true \
#     --benchmark_report_aggregates_only=true
# (the _min rows are the figures: decode_verify_bench.cc says why).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" && pwd)"
OUT="$ROOT/out"
LIB=/usr/lib/x86_64-linux-gnu
CXX="${CXX:-g++}"
mkdir -p "$OUT"

ninja -C "$BUILD" decode_verify_bench >/dev/null
BENCH_OBJ="$BUILD/bench/CMakeFiles/decode_verify_bench.dir/decode_verify_bench.cc.o"
mapfile -t LIB_OBJS < <(find "$BUILD/CMakeFiles/boltpack_objects.dir" "$BUILD/CMakeFiles/boltpack_proto.dir" \
                          -name '*.o' | sort)
[ -f "$BENCH_OBJ" ] && [ "${#LIB_OBJS[@]}" -gt 0 ] || { echo "no objects under $BUILD" >&2; exit 1; }

benchmark_archive() {
  if [ -f "$LIB/libbenchmark.a" ]; then echo "$LIB/libbenchmark.a"; return; fi
  local src="${BENCHMARK_SRC:-/work/.mirror/google+benchmark/repo}" tag="${BENCHMARK_TAG:-v1.7.1}"
  local dir="$OUT/benchmark" a="$OUT/benchmark/libbenchmark.a"
  if [ -f "$a" ] && [ "$(cat "$dir/TAG" 2>/dev/null)" = "$tag" ]; then echo "$a"; return; fi
  rm -rf "$dir" && mkdir -p "$dir/src"
  if [ -d "$src/src" ]; then
    cp -r "$src/src" "$src/include" "$dir/src/"
  else  # a bare git directory (fetch's mirror)
    git --git-dir="$src" archive "$tag" src include | tar -x -C "$dir/src"
  fi
  local objs=()
  for f in "$dir"/src/src/*.cc; do
    [ "$(basename "$f")" = benchmark_main.cc ] && continue
    "$CXX" -O2 -std=c++17 -DHAVE_STD_REGEX -DBENCHMARK_STATIC_DEFINE -I"$dir/src/include" -I"$dir/src/src" \
      -c "$f" -o "${f%.cc}.o" >&2
    objs+=("${f%.cc}.o")
  done
  ar rcs "$a" "${objs[@]}"
  echo "$tag" >"$dir/TAG"
  echo "$a"
}
BENCHMARK_A="$(benchmark_archive)"

# Debian's libxxhash.a lacks the x86 dispatcher its shared library has (the
# AVX2/AVX-512 XXH3 common/xxh3.cc calls): compiled from xxHash's source at
# the installed version (XXHASH_SRC, default /work/.mirror/Cyan4973+xxHash/repo).
xxhash_dispatch() {
  local src="${XXHASH_SRC:-/work/.mirror/Cyan4973+xxHash/repo}"
  local tag="v$(pkg-config --modversion libxxhash)" dir="$OUT/xxhash"
  local o="$dir/xxh_x86dispatch.o"
  if [ -f "$o" ] && [ "$(cat "$dir/TAG" 2>/dev/null)" = "$tag" ]; then echo "$o"; return; fi
  rm -rf "$dir" && mkdir -p "$dir"
  if [ -f "$src/xxh_x86dispatch.c" ]; then
    cp "$src/xxh_x86dispatch.c" "$src/xxh_x86dispatch.h" "$src/xxhash.h" "$dir/"
  else  # a bare git directory (fetch's mirror)
    git --git-dir="$src" archive "$tag" xxh_x86dispatch.c xxh_x86dispatch.h xxhash.h | tar -x -C "$dir"
  fi
  "${CC:-gcc}" -O3 -I"$dir" -c "$dir/xxh_x86dispatch.c" -o "$o" >&2
  echo "$tag" >"$dir/TAG"
  echo "$o"
}
XXHASH_DISPATCH_O="$(xxhash_dispatch)"

# FULLY_STATIC=1 links glibc in too, for a machine whose glibc is older
# than this one's (the default binary needs GLIBC_2.36: arc4random).
"$CXX" -o "$OUT/decode_verify_bench" "$BENCH_OBJ" "${LIB_OBJS[@]}" "$XXHASH_DISPATCH_O" \
  -Wl,--start-group "$LIB"/libabsl_*.a "$LIB/libprotobuf.a" "$LIB/libzstd.a" "$LIB/libxxhash.a" "$BENCHMARK_A" \
  -Wl,--end-group -static-libstdc++ -static-libgcc -pthread ${FULLY_STATIC:+-static}
# 49 -> 8 MB: small enough to carry to the device machine (64 MiB at most).
strip --strip-debug "$OUT/decode_verify_bench"
if [ -n "${FULLY_STATIC:-}" ]; then
  file "$OUT/decode_verify_bench"
  echo "$OUT/decode_verify_bench"
  exit 0
fi

# Only glibc may remain.
if ldd "$OUT/decode_verify_bench" | grep -vE 'linux-vdso|libc\.so|libm\.so|libpthread\.so|ld-linux' | grep -q .; then
  echo "out/decode_verify_bench still needs:" >&2
  ldd "$OUT/decode_verify_bench" >&2
  exit 1
fi
ldd "$OUT/decode_verify_bench"
echo "$OUT/decode_verify_bench"
