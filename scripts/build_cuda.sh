#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds etbench against the CUDA libtorch inside a python torch (pip's torch >= 2.0 with CUDA),
# with the CUDA timing, NVML and NCCL code, into ${ETB_BUILD_DIR:-build-cuda}:
#   scripts/build_cuda.sh [--test]     --test: the test suites too (ctest in the build dir)
# Environment:
#   ETB_PYTHON   the python whose torch to build against (default: python3)
#   CUDA_HOME    the CUDA toolkit torch was built for (default /usr/local/cuda); nvcc must be there
#   ETB_CMAKE_ARGS  extra CMake arguments, split on spaces (dependencies outside the usual prefixes)
#   NCCL_HOME    NCCL's prefix (default: the toolkit's when it has nccl.h, else the nvidia-nccl wheel
#                that torch itself loads, so that one libnccl serves both)
# The other dependencies (MPI, protobuf, simdjson, nlohmann-json, CLI11, zlib, GoogleTest) come from
# the distribution: on Debian/Ubuntu they are installed with apt-get when missing (ETB_NO_APT=1: not
# tried, as on an offline machine or one whose packages come from elsewhere). gloo stays off:
# pip's libtorch carries its own gloo inside, whose headers it does not ship.
# Tried on an H200 (Ubuntu 24.04, torch 2.11.0+cu130, CUDA 13.0): README, "On a GPU".
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${ETB_PYTHON:-python3}"
CUDA_ROOT="${CUDA_HOME:-/usr/local/cuda}"
BUILD_DIR="${ETB_BUILD_DIR:-build-cuda}"

read -r TORCH_VERSION TORCH_CUDA TORCH_CMAKE TORCH_DIR < <("$PY" -c \
  'import os, torch; print(torch.__version__, torch.version.cuda, torch.utils.cmake_prefix_path, os.path.dirname(torch.__file__))') || {
  echo "build_cuda.sh: '$PY' cannot import torch (set ETB_PYTHON)" >&2; exit 2; }
if [ "$TORCH_CUDA" = "None" ]; then
  echo "build_cuda.sh: torch $TORCH_VERSION at $TORCH_DIR has no CUDA; scripts/setup.sh builds the CPU tools" >&2
  exit 2
fi
if [ ! -x "$CUDA_ROOT/bin/nvcc" ]; then
  echo "build_cuda.sh: no nvcc under $CUDA_ROOT (set CUDA_HOME to the CUDA $TORCH_CUDA toolkit)" >&2
  exit 2
fi
echo "== torch $TORCH_VERSION (CUDA $TORCH_CUDA) at $TORCH_DIR; toolkit $CUDA_ROOT"

PACKAGES=(cmake libopenmpi-dev openmpi-bin libprotobuf-dev protobuf-compiler nlohmann-json3-dev
          libsimdjson-dev libcli11-dev libgtest-dev zlib1g-dev)
if [ -z "${ETB_NO_APT:-}" ] && command -v dpkg-query >/dev/null && command -v apt-get >/dev/null; then
  source scripts/apt_packages.sh
  # Offline or not Debian's names: say so and let CMake name what is really missing.
  installMissing "${PACKAGES[@]}" ||
    echo "== could not install the missing packages with apt-get; trying with what is installed" >&2
fi

# NCCL: the toolkit's, else the wheel's (libnccl.so.2 only: CMake looks for libnccl.so).
NCCL="${NCCL_HOME:-}"
if [ -z "$NCCL" ] && [ -f "$CUDA_ROOT/include/nccl.h" ]; then NCCL="$CUDA_ROOT"; fi
if [ -z "$NCCL" ]; then
  header=$("$PY" -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "include", "nccl.h"))' 2>/dev/null || true)
  if [ -n "$header" ] && [ -f "$header" ]; then
    wheel=$(dirname "$(dirname "$header")")
    NCCL="$PWD/$BUILD_DIR/nccl"
    mkdir -p "$NCCL/lib"
    ln -sfn "$wheel/include" "$NCCL/include"
    ln -sf "$(ls "$wheel"/lib/libnccl.so* | head -1)" "$NCCL/lib/libnccl.so"
  fi
fi
CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$TORCH_CMAKE" -DETB_WITH_CUDA=ON
            -DCUDAToolkit_ROOT="$CUDA_ROOT" -DETB_WITH_GLOO=OFF -DETB_BUILD_BENCHMARKS=OFF)
if [ -n "$NCCL" ]; then
  echo "== NCCL at $NCCL"
  CMAKE_ARGS+=(-DETB_WITH_NCCL=ON -DNCCL_HOME="$NCCL")
else
  echo "== no NCCL found (toolkit or nvidia-nccl wheel): collectives on MPI only"
fi
# Extra CMake arguments, e.g. the prefixes of dependencies installed outside /usr.
if [ -n "${ETB_CMAKE_ARGS:-}" ]; then read -ra EXTRA <<< "$ETB_CMAKE_ARGS"; CMAKE_ARGS+=("${EXTRA[@]}"); fi
if [ "${1:-}" = "--test" ]; then CMAKE_ARGS+=(-DETB_BUILD_TESTS=ON); else CMAKE_ARGS+=(-DETB_BUILD_TESTS=OFF); fi
command -v ninja >/dev/null && CMAKE_ARGS+=(-G Ninja)
mkdir -p "$BUILD_DIR"
PATH="$CUDA_ROOT/bin:$PATH" cmake -S . -B "$BUILD_DIR" "${CMAKE_ARGS[@]}" > "$BUILD_DIR/configure.log" 2>&1 || {
  cat "$BUILD_DIR/configure.log"; exit 1; }
cmake --build "$BUILD_DIR" -j"$(nproc)"
echo "== built: $BUILD_DIR/replayer/et_replay (run with LD_LIBRARY_PATH=$TORCH_DIR/lib if the loader does not find libtorch)"
