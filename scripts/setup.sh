#!/usr/bin/env bash
# Installs the Debian packages bolt-pack builds with (needs root or sudo).
set -euo pipefail
PACKAGES=(cmake ninja-build g++ clang libclang-rt-14-dev pkg-config
          libzstd-dev libabsl-dev libprotobuf-dev protobuf-compiler
          libgtest-dev libgmock-dev libcli11-dev libxxhash-dev libbenchmark-dev
          pybind11-dev python3-dev python3-numpy python3-pytest python3-torch
          python3-pip python3-setuptools python3-venv zstd
          slurm-wlm munge)  # scripts/slurm_test.sh: a one-node Slurm for convert.sbatch
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
