#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a page fault costs inside a replay, measured without any model.

  scripts/fault_cost.py [--build build] [--predict-dir DIR] SAMPLE[@DIST]...

Each fleet sample is replayed twice, one after the other: under
`--heap match` (its original's page faults per step, from the metrics
sidecar beside the trace, or DIR/orig_NAME/NAME.metrics.json where
predict_validate.sh --faults original measured one), and on a glibc heap
told never to hand memory back (no trim, no mmap below glibc's 32 MiB
ceiling), which faults next to nothing once warm. Every op is joined by
node id; for the ops that faulted only in the first replay, the time they
gained over the second, divided by their faults, is what a fault cost in
that replay: the kernel's trap and zeroing, the release that handed the
page back, and whatever both took from the op's own caches. It prints that
cost, a least-squares split into a cost per faulting op and per fault, and,
with --predict-dir (predict_validate.sh's PREDICT_VALIDATE_OUT), what
et_predict charged those ops for their fresh pages and releases.
ETB_CORE=N pins both replays to core N."""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from predict_attrib import run_replay, sample_trace  # noqa: E402

# glibc's ceiling for the mmap threshold on 64-bit builds: blocks below it
# come from the heap, which these settings never trim.
KEEP_ENV = {"MALLOC_TRIM_THRESHOLD_": str(1 << 40), "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
            "MALLOC_TOP_PAD_": str(256 << 20)}


def least_squares(points):
    """(a, b) of y = a + b x over (x, y) points; (0, mean y/x) if x never varies."""
    n = len(points)
    sx = sum(x for x, _ in points)
    sy = sum(y for _, y in points)
    sxx = sum(x * x for x, _ in points)
    sxy = sum(x * y for x, y in points)
    det = n * sxx - sx * sx
    if n < 2 or abs(det) < 1e-12:
        return 0.0, (sy / sx if sx else 0.0)
    b = (n * sxy - sx * sy) / det
    return (sy - b * sx) / n, b


def sample(args, entry, work):
    name, dist, trace = sample_trace(entry)
    match = ["--heap", "match"]
    pdir = args.predict_dir
    if pdir and os.path.exists(f"{pdir}/orig_{name}/{name}.metrics.json"):
        match += ["--original-metrics", f"{pdir}/orig_{name}/{name}.metrics.json"]
    m = json.load(open(run_replay(args.build, trace, dist, f"{work}/{name}.match.json", quiet=True,
                                  flags=match)))
    k = json.load(open(run_replay(args.build, trace, dist, f"{work}/{name}.keep.json", quiet=True,
                                  env_extra=KEEP_ENV)))
    kept = {o["node_id"]: o for o in k["ops"]}
    pred = {}
    if pdir and os.path.exists(f"{pdir}/{name}.predict.json"):
        pred = {o["node_id"]: o for o in json.load(open(f"{pdir}/{name}.predict.json"))["ops"]}
    points, others_m, others_k = [], 0.0, 0.0
    charged, charged_faults = 0.0, 0.0
    for o in m["ops"]:
        ko = kept.get(o["node_id"])
        if ko is None:
            continue
        if o["minor_faults"] >= 0.5 and ko["minor_faults"] < 0.5:
            points.append((o["minor_faults"], o["replay_us"] - ko["replay_us"]))
            if o["node_id"] in pred:
                p = pred[o["node_id"]]
                charged += p["first_touch_us"] + p["release_us"] + p.get("episode_us", 0)
                charged_faults += o["minor_faults"]
        elif o["minor_faults"] < 0.5:
            others_m += o["replay_us"]
            others_k += ko["replay_us"]
    faults = sum(x for x, _ in points)
    extra = sum(y for _, y in points)
    a, b = least_squares(points)
    print(f"## {entry}: iteration {m['replay']['iter_ms']['median']:.2f} ms under --heap match, "
          f"{k['replay']['iter_ms']['median']:.2f} ms on a heap kept whole; faults per iteration "
          f"{m['system']['minor_faults_per_iter']:.0f} and {k['system']['minor_faults_per_iter']:.0f}")
    if faults:
        print(f"   {len(points)} ops faulted only under match: {faults:.0f} faults, +{extra / 1e3:.2f} ms, "
              f"{extra / faults:.1f} us a fault ({a:.1f} us an op + {b:.1f} us a fault)")
        if charged_faults:
            print(f"   et_predict charged them {charged / charged_faults:.1f} us a fault "
                  f"(first touch, release and episode, {pdir}/{name}.predict.json)")
    print(f"   the ops that faulted in neither: {others_m / 1e3:.2f} ms under match, "
          f"{others_k / 1e3:.2f} ms kept whole")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--predict-dir", help="predict_validate.sh's output folder (its orig_NAME sidecars "
                    "and NAME.predict.json reports)")
    ap.add_argument("samples", nargs="+")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="etb_fault_cost_") as work:
        for entry in args.samples:
            sample(args, entry, work)


if __name__ == "__main__":
    main()
