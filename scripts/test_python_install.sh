#!/usr/bin/env bash
# scripts/test_python_install.sh BUILD_DIR VENV: installs the Python package
# with pip from the source tree (`pip install --no-build-isolation ./python`,
# as docs/python.md says) into a new virtual environment that sees Debian's
# numpy and torch, reusing BUILD_DIR's objects (configured with
# -DBOLTPACK_PYTHON=ON), then imports it there, away from the source tree,
# and reads a model with it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$(cd "$1" && pwd)"; VENV="$2"
rm -rf "$VENV"
/usr/bin/python3 -m venv --system-site-packages "$VENV"
BOLTPACK_BUILD_DIR="$BUILD" "$VENV/bin/pip" install --no-build-isolation --no-index --quiet "$ROOT/python"
cd /
"$VENV/bin/python" - "$ROOT/testdata/tinystories-656k/model.safetensors" <<'PY'
import sys
import boltpack
assert "site-packages" in boltpack.__file__, boltpack.__file__
with boltpack.safe_open(sys.argv[1], framework="pt") as f:
    names = f.keys()
    total = sum(f.get_tensor(n).numel() for n in names)
print(f"pip-installed boltpack {boltpack.__version__} ({boltpack.__file__}): {len(names)} tensors, {total} weights")
PY
rm -rf "$ROOT/python/build" "$ROOT/python/boltpack.egg-info"
