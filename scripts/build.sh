#!/usr/bin/env bash
# scripts/build.sh BUILD_DIR [cmake args...]: configure and build.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$1"; shift
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DBOLTPACK_WERROR=ON "$@" >/dev/null
ninja -C "$BUILD"
