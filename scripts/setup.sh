#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs etbench's build and test dependencies (Debian packages) when any is
# missing, then configures and builds into ${ETB_BUILD_DIR:-build}.
#   scripts/setup.sh [--test]   --test: -Werror, tests, and the CUDA/NCCL code
#                               whenever a CUDA toolkit with NCCL is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake git ca-certificates
  libtorch-dev libopenblas0-pthread
  libopenmpi-dev openmpi-bin libgloo-dev
  libprotobuf-dev protobuf-compiler
  nlohmann-json3-dev libsimdjson-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev
  python3 python3-torch python3-torchvision python3-jsonschema
  ccache time
)

source scripts/apt_packages.sh
installMissing "${PACKAGES[@]}"

BUILD_DIR="${ETB_BUILD_DIR:-build}"
CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release)
# A rebuild (the tests after the sample run, CI after a session) recompiles
# only what changed: libtorch headers make every translation unit slow.
if command -v ccache >/dev/null; then
  CMAKE_ARGS+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
if [ "${1:-}" != "--test" ]; then
  # The tools only: tests and benchmarks build in the test configuration.
  CMAKE_ARGS+=(-DETB_BUILD_TESTS=OFF -DETB_BUILD_BENCHMARKS=OFF)
else
  CMAKE_ARGS+=(-DETB_WERROR=ON -DETB_BUILD_TESTS=ON -DETB_BUILD_BENCHMARKS=ON)
  CUDA_ROOT="${CUDA_HOME:-/usr/local/cuda}"
  if [ -f "$CUDA_ROOT/include/cuda_runtime.h" ] && [ -f "$CUDA_ROOT/include/nccl.h" ]; then
    echo "== CUDA toolkit with NCCL at $CUDA_ROOT: building the GPU code too"
    CMAKE_ARGS+=(-DETB_WITH_CUDA=ON -DETB_WITH_NCCL=ON -DCUDAToolkit_ROOT="$CUDA_ROOT"
                 -DNCCL_HOME="$CUDA_ROOT")
  fi
fi
mkdir -p "$BUILD_DIR"
cmake -S . -B "$BUILD_DIR" "${CMAKE_ARGS[@]}" > "$BUILD_DIR/configure.log" 2>&1 || {
  cat "$BUILD_DIR/configure.log"; exit 1; }
cmake --build "$BUILD_DIR" -j"$(nproc)"
