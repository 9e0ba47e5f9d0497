#!/usr/bin/env bash
# The Python module on a machine without Debian's -dev packages (the device
# machine: Python 3.12, pybind11 from pip, no Abseil or protobuf): built
# read-only (BOLTPACK_PY_READ_ONLY) against libboltpack_read.so, carried
# with the shared libraries it needs.
#
#   here:   scripts/python_device.sh bundle BUILD_DIR OUT   (BUILD_DIR has libboltpack_read.so)
#   there:  scripts/python_device.sh build OUT              (then PYTHONPATH=OUT/py)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:?bundle or build}"
case "$mode" in
  bundle)
    build="${2:?BUILD_DIR}"; out="${3:?OUT}"
    mkdir -p "$out/lib"
    cp -L "$build/libboltpack_read.so.0" "$out/lib/"
    ln -sf libboltpack_read.so.0 "$out/lib/libboltpack_read.so"
    # Every library it loads that is not the C and C++ run time (which the
    # other machine has, newer).
    ldd "$build/libboltpack_read.so.0" | awk '/=> \// {print $3}' |
      grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux[^/]*|libpthread|libdl|librt)\.so' |
      while read -r lib; do cp -L "$lib" "$out/lib/"; done
    echo "bundled into $out/lib:"; ls "$out/lib"
    ;;
  build)
    out="${2:?OUT}"
    py="${PYTHON:-python3}"
    dest="$out/py/boltpack"
    mkdir -p "$dest"
    cp "$ROOT"/python/boltpack/*.py "$ROOT"/python/boltpack/*.pyi "$dest/"
    suffix="$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
    # The module finds libboltpack_read in OUT/lib, and so does what it loads
    # (DT_RPATH, which applies to the libraries loaded for it, not RUNPATH).
    ${CXX:-g++} -O2 -std=c++20 -shared -fPIC -fvisibility=hidden -DBOLTPACK_PY_READ_ONLY \
      -I"$ROOT" -I"$ROOT/include" $("$py" -m pybind11 --includes) \
      "$ROOT"/python/{module,reader,errors,metadata}.cc "$ROOT/common/buffer_pool.cc" \
      -L"$out/lib" -lboltpack_read -Wl,--disable-new-dtags,-rpath,"\$ORIGIN/../../lib" -o "$dest/_boltpack$suffix"
    "$py" -c "import sys; sys.path.insert(0, '$out/py'); import boltpack; print('boltpack', boltpack.__version__, 'read-only' if not boltpack._boltpack.has_writer else '')"
    ;;
  *) echo "usage: $0 bundle BUILD_DIR OUT | build OUT" >&2; exit 2 ;;
esac
