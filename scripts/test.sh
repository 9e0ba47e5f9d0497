#!/usr/bin/env bash
# README command 2: every test. Builds with g++ and clang (-Werror), runs the
# GoogleTest suite through CTest, again under ASan+UBSan, runs each libFuzzer
# target for a while and replays its corpus, builds the examples against
# the installed package, and runs llama.cpp on GGUF files bolt-pack wrote
# (scripts/llama_cpp_check.sh; SKIP when npm's registry cannot be reached).
# The Python module's pytest suite runs in CTest (python_boltpack), and the
# package is installed with pip into a virtual environment and imported.
# First of all it checks the layers of the includes (scripts/check_layers.sh),
# the spec's rule ids (scripts/check_rule_ids.py) and the length of functions
# (scripts/long_functions.py), and that the conformance runner fails wrong
# implementations (scripts/conformance_test.py); the runner then checks
# pyreader (the second reader, pure Python), the g++ and the sanitized
# bolt-pack against the kit (spec/conformance.md).
#   FUZZ_SECONDS (default 60) sets the time per fuzz target.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/scripts/setup.sh"
JOBS=$(nproc)
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
B="$ROOT/build-test"

echo "== layers: no #include goes up or sideways (scripts/check_layers.sh)"
"$ROOT/scripts/check_layers.sh"

echo "== spec rule ids: every id cited in code or vectors is defined (scripts/check_rule_ids.py)"
"$ROOT/scripts/check_rule_ids_test.py"
"$ROOT/scripts/check_rule_ids.py" "$ROOT"

echo "== pyreader: the second reader, written from spec/*.md alone, against spec/vectors"
/usr/bin/python3 "$ROOT/pyreader/selfcheck.py"
/usr/bin/python3 "$ROOT/pyreader/test_codecs.py"
/usr/bin/python3 "$ROOT/pyreader/test_zstd.py"
/usr/bin/python3 "$ROOT/pyreader/test_xxh3.py"

echo "== functions of one job: none over 150 lines without a reason (scripts/long_functions.py)"
"$ROOT/scripts/long_functions_test.py"
"$ROOT/scripts/long_functions.py" "$ROOT"

echo "== conformance runner: it fails wrong implementations (scripts/conformance_test.py)"
/usr/bin/python3 "$ROOT/scripts/conformance_test.py"
echo "== codec vectors recomputed from the spec with numpy (scripts/codec_vectors_check.py)"
/usr/bin/python3 "$ROOT/scripts/codec_vectors_check.py"

echo "== conformance kit (spec/conformance.md) against pyreader, for what it declares (no build needed)"
/usr/bin/python3 "$ROOT/scripts/conformance.py" /usr/bin/python3 "$ROOT/pyreader/bolt_reader.py"

echo "== g++ build + tests"
"$ROOT/scripts/build.sh" "$B/gcc" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=g++ -DCMAKE_C_COMPILER=gcc \
  -DBOLTPACK_PYTHON=ON -DPython3_EXECUTABLE=/usr/bin/python3
(cd "$B/gcc" && ctest --output-on-failure -j"$JOBS")

echo "== conformance kit (spec/conformance.md) against bolt-pack's own adapter; crash corpus up to date"
/usr/bin/python3 "$ROOT/scripts/conformance.py" "$B/gcc/bolt-pack" conformance-impl
/usr/bin/python3 "$ROOT/scripts/make_crash_vectors.py" --check --impl "$B/gcc/bolt-pack conformance-impl"
/usr/bin/python3 "$ROOT/scripts/make_ggml_vectors.py" --check --bolt-pack "$B/gcc/bolt-pack"

echo "== Python: pip install --no-build-isolation ./python into a fresh venv, import boltpack there"
"$ROOT/scripts/test_python_install.sh" "$B/gcc" "$B/venv"

echo "== installed package: examples built against it, libboltpack_read alone (scripts/test_read_library.sh)"
"$ROOT/build-test/gcc/bolt-pack" convert "$ROOT/testdata/tinystories-656k/model.safetensors" -o "$B/example.bolt"
"$ROOT/scripts/test_installed_package.sh" "$B/gcc" "$B/example.bolt"

echo "== Slurm: convert.sbatch's job array of 4 parts and its merge job on a one-node cluster (scripts/slurm_test.sh)"
# slurmctld, slurmd and munged are started as root on localhost, and stopped.
if [ "$(id -u)" = 0 ]; then
  "$ROOT/scripts/slurm_test.sh" "$B/gcc/bolt-pack" "$B/slurm"
else
  echo "SKIP: not root (Slurm's daemons and munge need it)"
fi

echo "== gpu/ (libboltpack_cuda) compiles against libboltpack_read, and its device check's inputs are made"
# No GPU here: the kernels run on the device machine (docs/gpu.md). The
# CUDA toolkit is not a Debian package this project installs, so the step
# is skipped where there is none.
NVCC="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
if [ -x "$NVCC" ]; then
  cmake -S "$ROOT/gpu" -B "$B/gpu" -G Ninja -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DBOLTPACK_READ_LIBRARY="$B/gcc/libboltpack_read.so" >"$B/gpu.cmake.log"
  ninja -C "$B/gpu"
  /usr/bin/python3 "$ROOT/gpu/tests/make_inputs.py" "$B/gcc/bolt-pack" "$B/gpuin"
else
  echo "no nvcc: skipped"
fi

echo "== llama.cpp (node-llama-cpp from npm, CPU) runs the GGUF files bolt-pack writes"
"$ROOT/scripts/llama_cpp_check.sh" "$B/gcc/bolt-pack" "$B/llama_cpp"

echo "== clang + ASan/UBSan build (benchmarks too, so clang compiles every target) + tests"
"$ROOT/scripts/build.sh" "$B/asan" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DBOLTPACK_SANITIZE=ON
(cd "$B/asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure -j"$JOBS")
echo "== conformance kit against the ASan+UBSan bolt-pack (the crash corpus under the sanitizers)"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  /usr/bin/python3 "$ROOT/scripts/conformance.py" --timeout 120 "$B/asan/bolt-pack" conformance-impl

echo "== fuzz targets (libFuzzer, ASan+UBSan): ${FUZZ_SECONDS}s each, then corpus replay"
"$ROOT/scripts/build.sh" "$B/fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DBOLTPACK_FUZZ=ON -DBOLTPACK_TESTS=OFF -DBOLTPACK_BENCH=OFF
"$ROOT/scripts/fuzz.sh" "$B/fuzz" "$FUZZ_SECONDS"
echo "ALL TESTS PASSED"
