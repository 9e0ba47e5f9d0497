#!/usr/bin/env bash
# Checks that an installed bolt-pack is usable on its own: installs BUILD_DIR
# into a fresh temporary prefix, builds examples/c and examples/cpp against
# that prefix only (CMake: find_package through CMAKE_PREFIX_PATH; C also
# through pkg-config with PKG_CONFIG_PATH; examples/cpp is the header-only
# wrapper over libboltpack_read), runs all three on BOLT_FILE, then checks
# libboltpack_read with scripts/test_read_library.sh, and fails on any error.
#
#   scripts/test_installed_package.sh BUILD_DIR BOLT_FILE
#
# BUILD_DIR must be configured and built (the script runs the build once more
# to be sure). Set KEEP_PREFIX=1 to keep the temporary folder.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR BOLT_FILE" >&2
  exit 2
fi
src_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=$(cd "$1" && pwd)
bolt_file=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
[[ -f "$bolt_file" ]] || { echo "no such file: $bolt_file" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/boltpack-install-test.XXXXXX")
cleanup() {
  if [[ "${KEEP_PREFIX:-0}" == 1 ]]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
prefix="$work/prefix"
step() { echo "==> $*"; }

step "build $build_dir"
cmake --build "$build_dir" --target boltpack boltpack_read bolt-pack
step "install into $prefix"
cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log"

# What must (and must not) be there.
libdir=$(dirname "$(find "$prefix" -name 'libboltpack.*' -print -quit)")
for f in include/boltpack/boltpack.h include/boltpack/boltpack.hpp include/boltpack/version.h \
         include/boltpack/boltpack_cxx.h include/boltpack/reader.h bin/bolt-pack; do
  [[ -e "$prefix/$f" ]] || { echo "missing from the install: $f" >&2; exit 1; }
done
cfg=$(find "$prefix" -name boltpackConfig.cmake -print -quit)
pc=$(find "$prefix" -name boltpack.pc -print -quit)
[[ -n "$cfg" && -n "$pc" ]] || { echo "boltpackConfig.cmake or boltpack.pc not installed" >&2; exit 1; }
[[ -e "$(dirname "$cfg")/boltpackConfigVersion.cmake" ]] || { echo "no config version file" >&2; exit 1; }
if find "$prefix/include" -type f ! -path "$prefix/include/boltpack/*" | grep -q .; then
  echo "unexpected headers outside include/boltpack:" >&2
  find "$prefix/include" -type f ! -path "$prefix/include/boltpack/*" >&2
  exit 1
fi
if grep -q boltpack_proto "$(dirname "$cfg")"/boltpackTargets*.cmake; then
  echo "boltpack_proto leaked into the exported targets" >&2
  exit 1
fi
echo "installed: $(cd "$prefix" && find . -type f | sort | tr '\n' ' ')"

# Nothing from the source or build tree may be used from here on.
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run() {
  local exe=$1
  step "run $exe $bolt_file"
  "$exe" "$bolt_file" >"$work/out.txt" 2>&1 || { cat "$work/out.txt"; echo "$exe failed" >&2; exit 1; }
  head -n 20 "$work/out.txt"
  local lines; lines=$(wc -l <"$work/out.txt")
  (( lines > 20 )) && echo "... ($lines lines)"
  return 0
}

step "installed CLI loads"
# Its exit status without arguments is its own business; it must at least
# find its shared libraries (through its install RPATH, not LD_LIBRARY_PATH).
if command -v ldd >/dev/null && env -u LD_LIBRARY_PATH ldd "$prefix/bin/bolt-pack" | grep -q "not found"; then
  env -u LD_LIBRARY_PATH ldd "$prefix/bin/bolt-pack" >&2
  echo "installed bolt-pack cannot load its libraries" >&2
  exit 1
fi

for lang in c cpp; do
  step "cmake: examples/$lang against $prefix"
  cmake -S "$src_dir/examples/$lang" -B "$work/build-$lang" -G Ninja \
        -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
        -DCMAKE_BUILD_TYPE=Release >"$work/cfg-$lang.log" 2>&1 \
    || { cat "$work/cfg-$lang.log"; exit 1; }
  cmake --build "$work/build-$lang"
done
run "$work/build-c/read_tensors_c"
run "$work/build-cpp/read_tensors_cpp"

step "pkg-config: examples/c against $prefix"
export PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
echo "pkg-config --cflags --libs boltpack: $(pkg-config --cflags --libs boltpack)"
mkdir -p "$work/build-pc"
make -s -C "$src_dir/examples" BUILD_DIR="$work/build-pc" "$work/build-pc/read_tensors_c"
run "$work/build-pc/read_tensors_c"

# The three must agree on every tensor's name, shape, dtype, codec, stored
# size and sum (the C++ one puts streams and the sum on lines of their own).
summ() { grep -oE '^[^ ]+ \[[^]]*\] dtype=[^ ]+ codec=[^ ]+ stored=[0-9]+|sum=[^ ]+' "$1"; }
"$work/build-c/read_tensors_c" "$bolt_file" >"$work/c.txt"
"$work/build-pc/read_tensors_c" "$bolt_file" >"$work/pc.txt"
"$work/build-cpp/read_tensors_cpp" "$bolt_file" >"$work/cpp.txt"
[[ $(summ "$work/c.txt" | grep -c 'sum=') -gt 0 ]] \
  || { echo "the C example decoded nothing" >&2; exit 1; }
diff <(summ "$work/c.txt") <(summ "$work/pc.txt") >/dev/null \
  || { echo "CMake- and pkg-config-built C examples disagree" >&2; exit 1; }
diff <(summ "$work/c.txt") <(summ "$work/cpp.txt") \
  || { echo "C and C++ examples disagree" >&2; exit 1; }

step "libboltpack_read on its own"
(unset PKG_CONFIG_PATH LD_LIBRARY_PATH; "$src_dir/scripts/test_read_library.sh" "$prefix" "$build_dir" "$bolt_file")

echo "OK: installed package works (CMake and pkg-config consumers)"
