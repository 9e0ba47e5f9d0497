#!/usr/bin/env bash
# Checks an installed libboltpack_read (issue 16 item 3) from its install
# prefix alone:
#   - libboltpack_read.so exports exactly the BP_API functions of
#     boltpack/boltpack.h, and needs no shared zstd when BUILD_DIR found its
#     archive;
#   - boltpack-read.pc and the boltpack-read CMake package name no dependency;
#   - examples/c/read_tensors.c and examples/cpp/read_tensors.cc (the
#     header-only wrapper) build with `$(pkg-config --cflags --libs
#     boltpack-read)` where pkg-config sees only the prefix, include no
#     header of a dependency (checked with -H), and read BOLT_FILE and the
#     GGUF and safetensors files of testdata/ as the full library's C
#     example does;
#   - libboltpack_read.a (Abseil, protobuf and zstd merged in) links the C
#     example with boltpack-read-static.pc and the C++ run time alone, and
#     the program prints what the shared one does.
#
#   scripts/test_read_library.sh PREFIX BUILD_DIR BOLT_FILE
#
# scripts/test_installed_package.sh calls it on its prefix.
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 PREFIX BUILD_DIR BOLT_FILE" >&2
  exit 2
fi
src_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix=$(cd "$1" && pwd)
build_dir=$(cd "$2" && pwd)
bolt_file=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/boltpack-read-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
step() { echo "==> $*"; }
die() { echo "test_read_library: $*" >&2; exit 1; }

lib=$(find "$prefix" -name 'libboltpack_read.so' -print -quit)
[[ -n "$lib" ]] || die "libboltpack_read.so not installed"
libdir=$(dirname "$lib")
pcdir=$(dirname "$(find "$prefix" -name boltpack-read.pc -print -quit)")
[[ -f "$pcdir/boltpack-read.pc" ]] || die "boltpack-read.pc not installed"

step "exports of $lib"
grep -oE '^BP_API [^(]*\bbp_[a-z0-9_]+\(' "$src_dir/include/boltpack/boltpack.h" \
  | grep -oE 'bp_[a-z0-9_]+\(' | tr -d '(' | sort -u >"$work/api.txt"
nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u >"$work/exported.txt"
diff "$work/api.txt" "$work/exported.txt" >"$work/exports.diff" \
  || { cat "$work/exports.diff" >&2; die "exports differ from the BP_API functions (< header only, > library only)"; }
echo "exports: $(wc -l <"$work/exported.txt") symbols, all bp_*; size $(stat -c %s "$(readlink -f "$lib")") bytes"
needed=$(readelf -d "$lib" | grep NEEDED | grep -oE '\[[^]]+\]' | tr -d '[]' | tr '\n' ' ')
echo "needed: $needed"
# zstd is linked in from its archive when there is one; Abseil and protobuf
# stay shared (their Debian archives cannot go into a shared object: see
# cmake/boltpack_read.cmake) and need only their run-time packages.
if grep -qE 'BOLTPACK_ZSTD_ARCHIVE:FILEPATH=.*\.a$' "$build_dir/CMakeCache.txt" && grep -q libzstd <<<"$needed"; then
  die "libzstd.a was found, yet the library needs the shared libzstd"
fi

step "packages name no dependency"
grep -E '^(Requires|Libs)' "$pcdir/boltpack-read.pc"
grep -qiE '^Requires' "$pcdir/boltpack-read.pc" && die "boltpack-read.pc has Requires"
cfgdir=$(dirname "$(find "$prefix" -name boltpack-readConfig.cmake -print -quit)")
grep -lE 'absl|protobuf|PkgConfig|zstd|xxhash|find_dependency' "$cfgdir"/*.cmake \
  && die "the boltpack-read CMake package names a dependency"

# pkg-config sees the prefix and nothing else: no dependency's .pc.
export PKG_CONFIG_LIBDIR="$pcdir"
unset PKG_CONFIG_PATH
flags=$(pkg-config --cflags --libs boltpack-read)
echo "link line: cc app.c $flags"
grep -qE -- '-l(absl|protobuf|zstd)' <<<"$flags" && die "pkg-config --libs boltpack-read names a dependency"

# -H lists every header a compile reads; none may be a dependency's.
build() {
  local compiler=$1 std=$2 source=$3 exe=$4
  step "$compiler $std $(basename "$source") \$(pkg-config --cflags --libs boltpack-read)"
  # shellcheck disable=SC2086  # $flags is a list of options
  "$compiler" "$std" -O2 -Wall -Wextra -Werror -H -o "$exe" "$source" $flags 2>"$work/headers.txt" \
    || { cat "$work/headers.txt" >&2; die "$(basename "$source") does not build"; }
  if grep -E '/(absl|google|zstd|xxhash)' "$work/headers.txt"; then
    die "$(basename "$source") reads a dependency's header"
  fi
}
build cc -std=c99 "$src_dir/examples/c/read_tensors.c" "$work/read_c"
build c++ -std=c++20 "$src_dir/examples/cpp/read_tensors.cc" "$work/read_cpp"

# The C and C++ programs on libboltpack_read must agree on every tensor's
# name, shape, dtype, codec, stored size and sum, on .bolt, GGUF and
# safetensors input.
summ() { grep -oE '^[^ ]+ \[[^]]*\] dtype=[^ ]+ codec=[^ ]+ stored=[0-9]+|sum=[^ ]+' "$1"; }
export LD_LIBRARY_PATH="$libdir"
for model in "$bolt_file" "$src_dir/testdata/tinystories-656k/TinyStories-656K.f16.gguf" \
             "$src_dir/testdata/tinystories-656k/model.safetensors"; do
  step "run both on $(basename "$model")"
  "$work/read_c" "$model" >"$work/c.txt" || { cat "$work/c.txt"; die "read_c failed on $model"; }
  "$work/read_cpp" "$model" >"$work/cpp.txt" || { cat "$work/cpp.txt"; die "read_cpp failed on $model"; }
  [[ $(grep -c 'sum=' "$work/c.txt") -gt 0 ]] || die "the C program decoded nothing of $model"
  diff <(summ "$work/c.txt") <(summ "$work/cpp.txt") || die "C and C++ programs disagree on $model"
  echo "$(grep -c 'sum=' "$work/c.txt") tensors decoded alike"
done
# The static archive, where it was built: the C program links it with the
# C++ run time alone and must print what the shared one printed.
if [[ -f "$pcdir/boltpack-read-static.pc" ]]; then
  step "cc -std=c99 read_tensors.c \$(pkg-config --cflags --libs boltpack-read-static)"
  static_flags=$(pkg-config --cflags --libs boltpack-read-static)
  echo "link line: cc app.c $static_flags"
  grep -qE -- '-l(absl|protobuf|zstd)' <<<"$static_flags" && die "pkg-config --libs boltpack-read-static names a dependency"
  # shellcheck disable=SC2086  # $static_flags is a list of options
  cc -std=c99 -O2 -Wall -Wextra -Werror -o "$work/read_c_static" "$src_dir/examples/c/read_tensors.c" $static_flags \
    || die "read_tensors.c does not link with libboltpack_read.a"
  ldd "$work/read_c_static" | grep -E 'absl|protobuf|zstd|boltpack' && die "the static program loads a shared dependency"
  echo "static program: $(stat -c %s "$work/read_c_static") bytes; loads $(ldd "$work/read_c_static" | awk '{print $1}' | tr '\n' ' ')"
  for model in "$bolt_file" "$src_dir/testdata/tinystories-656k/TinyStories-656K.f16.gguf"; do
    "$work/read_c" "$model" >"$work/c.txt"
    LD_LIBRARY_PATH= "$work/read_c_static" "$model" >"$work/cs.txt" || die "the static program failed on $model"
    diff "$work/c.txt" "$work/cs.txt" >/dev/null || die "the static and shared programs disagree on $model"
  done
  echo "static and shared programs agree"
else
  echo "(no libboltpack_read.a: the Abseil, protobuf or zstd archive is missing)"
fi
"$work/read_cpp" /nonexistent.bolt 2>"$work/err.txt" && die "opening a missing file succeeded"
grep -q 'NOT_FOUND' "$work/err.txt" || { cat "$work/err.txt"; die "a missing file is not NOT_FOUND"; }

echo "OK: libboltpack_read works with nothing but its prefix"
