# SPDX-License-Identifier: MIT
"""record.py --threads 1 runs its original on one core, as et_replay --threads 1 replays it.

Usage: recorder_threads_check.py SOURCE_DIR WORK_DIR
A pthread OpenBLAS (Debian's libopenblas0-pthread) ignores torch.set_num_threads and runs
GEMMs on every core, so a recorder that only called torch's setting timed a --threads 1
original on all cores. Checks, where that can be seen (OpenBLAS loaded, two cores or more):
  - metrics.setThreads(torch, 1) leaves OpenBLAS's own count (openblas_get_num_threads) at 1,
    where it was the core count before;
  - a --metrics-only recording of mlp at --threads 1 (GEMM-bound) measures at most 130% CPU.
Exit 77 (skipped) without torch, without OpenBLAS or on one core.
"""
import ctypes
import json
import os
import subprocess
import sys

src, work = sys.argv[1], sys.argv[2]
try:
    import torch
except ImportError:
    print("SKIP: no torch (python3-torch) to record with")
    sys.exit(77)
sys.path.insert(0, os.path.join(src, "fleet_samples"))
import metrics  # noqa: E402


def openblas():
    with open("/proc/self/maps") as f:
        libs = sorted({l.split()[-1] for l in f if "openblas" in l and ".so" in l})
    for lib in libs:
        try:
            return ctypes.CDLL(lib).openblas_get_num_threads
        except (OSError, AttributeError):
            pass
    return None


torch.mm(torch.ones(64, 64), torch.ones(64, 64))  # BLAS loaded and initialised
get = openblas()
cores = len(os.sched_getaffinity(0))
if get is None or cores < 2:
    print("SKIP: %s" % ("torch's BLAS is not OpenBLAS" if get is None else "one core"))
    sys.exit(77)
before = get()
print("OpenBLAS threads before: %d (cores %d)" % (before, cores))
if before < 2:
    print("SKIP: OpenBLAS already limited to one thread (OPENBLAS_NUM_THREADS?)")
    sys.exit(77)
metrics.setThreads(torch, 1)
failures = []
if get() != 1:
    failures.append("metrics.setThreads(torch, 1) left OpenBLAS at %d threads" % get())

env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
out = os.path.join(work, "mlp")
subprocess.run([sys.executable, os.path.join(src, "fleet_samples", "record.py"), "--model", "mlp",
                "--threads", "1", "--warmup", "2", "--iters", "5", "--metrics-only",
                "--out-dir", out], check=True, env=env, stdout=subprocess.DEVNULL)
m = json.load(open(os.path.join(out, "mlp.metrics.json")))
print("record.py --threads 1 (mlp): %.0f%% CPU over the timed steps" % m["cpu_util_pct"])
if m["cpu_util_pct"] > 130:
    failures.append("record.py --threads 1 used %.0f%% CPU (one core is 100%%)" % m["cpu_util_pct"])
for f in failures:
    print("FAIL: " + f)
sys.exit(1 if failures else 0)
