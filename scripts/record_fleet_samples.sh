#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Re-record every fleet sample into fleet_samples/<name>/ (overwrites the committed traces and
# meta.json). Single-threaded (--threads 1) so the recorded original times are comparable with
# `et_replay --threads 1`; record on a quiet machine, the times land in meta.json.
#   scripts/record_fleet_samples.sh [SAMPLE...]   default: mlp resnet18 transformer dlrm lstm
#     conv_adamw gpt ddp2 ddp_mlp2 ddp_mlp4 ddp_transformer2 ddp_transformer4
set -euo pipefail
# one thread means one thread (a pthread OpenBLAS ignores torch.set_num_threads)
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
cd "$(dirname "$0")/.."
PY="${ETB_PYTHON:-/usr/bin/python3}"
if ! "$PY" -c "import torch, torchvision" 2>/dev/null; then
  echo "record_fleet_samples.sh: '$PY' lacks torch/torchvision; install python3-torch python3-torchvision or set ETB_PYTHON." >&2
  exit 2
fi
SAMPLES=("$@")
[ ${#SAMPLES[@]} -gt 0 ] || SAMPLES=(mlp resnet18 transformer dlrm lstm conv_adamw gpt ddp2 ddp_mlp2 ddp_mlp4 ddp_transformer2 ddp_transformer4)
for name in "${SAMPLES[@]}"; do
  echo "== recording $name" >&2
  "$PY" fleet_samples/record.py --model "$name" --threads 1 --warmup 3 --iters 10
done
