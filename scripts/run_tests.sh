#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what is missing, builds the test configuration, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
export ETB_BUILD_DIR="${ETB_BUILD_DIR:-build-test}"
scripts/setup.sh --test
# mpirun as root (CI, containers) needs these; the tests oversubscribe 2 cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
cd "$ETB_BUILD_DIR"
ctest --output-on-failure --timeout 900 -j"$(nproc)" "$@"
