#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where a prediction's error comes from: et_predict's per-op times against
et_replay's measured per-op times (joined by node id), summed per op kind.

  scripts/predict_attrib.py --hw HW.json [--build build-test] SAMPLE[@DIST]...
  scripts/predict_attrib.py --replay R.json --predict P.json

The first form replays (--threads 1, pinned to $ETB_CORE when set) and
predicts each fleet sample; the second compares two existing reports. For
each sample it prints the iteration (replayed, sum of measured ops,
predicted), then the op kinds carrying most of the difference: count,
measured ms, predicted ms, missing ms (measured - predicted) and the model
family et_predict used. 'unaccounted' is the replay's iteration less the
sum of its ops (the replayer's own per-op work between timed calls).
With the profile known (--hw) it also sets the page faults et_replay counted
per kind (its warm-up after the first) beside the fresh pages et_predict's
heap model charged: a count, free of timing noise."""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile


def pinned(cmd):
    core = os.environ.get("ETB_CORE")
    return (["taskset", "-c", core] if core else []) + cmd


def sample_trace(entry):
    """NAME[@DIST] -> (name, index distribution, the fleet sample's trace)."""
    name, _, dist = entry.partition("@")
    trace = f"fleet_samples/{name}/{name}.et.json.gz"
    if not os.path.exists(trace):
        sys.exit(f"{trace}: not a single-rank fleet sample")
    return name, dist or "uniform", trace


def run_replay(build, trace, dist, rep, quiet=False, flags=(), env_extra=None):
    """et_replay's report (one thread, pinned to ETB_CORE) written to `rep`;
    `flags` are further et_replay flags, `env_extra` further environment."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", **(env_extra or {}))
    subprocess.run(pinned([f"{build}/replayer/et_replay", trace, "--threads", "1", "--warmup", "2",
                           "--iters", "5", "--quiet", "--index-dist", dist, "--report-json", rep,
                           *flags]),
                   check=True, env=env, stderr=subprocess.DEVNULL if quiet else None)
    return rep


def run_predict(build, hw, trace, dist, pre, quiet=False):
    """et_predict's report written to `pre`."""
    subprocess.run([f"{build}/predictor/et_predict", trace, "--hw", hw, "--quiet", "--index-dist",
                    dist, "--report-json", pre], check=True,
                   stderr=subprocess.DEVNULL if quiet else None)
    return pre


def run_sample(build, hw, entry, out):
    name, dist, trace = sample_trace(entry)
    rep = run_replay(build, trace, dist, os.path.join(out, f"{name}.{dist}.replay.json"))
    return rep, run_predict(build, hw, trace, dist, os.path.join(out, f"{name}.{dist}.predict.json"))


def attribute(replay_path, predict_path, hw=None):
    """Rows (kind, count, measured_us, predicted_us, model, faults) and totals."""
    rep = json.load(open(replay_path))
    pre = json.load(open(predict_path))
    fault_us = json.load(open(hw))["memory"]["fault_us_per_page"] if hw else 0
    predicted = {o["node_id"]: o for o in pre["ops"]}
    kinds = collections.OrderedDict()
    # Ops the replay saw fault: their time less what the prediction gives
    # them besides page costs, per fault counted (the page costs' rate).
    faulting = {"faults": 0.0, "rest_us": 0.0, "charged_us": 0.0}
    for op in rep["ops"]:
        if op.get("is_comm") or not op.get("replayed", True):
            continue
        p = predicted.get(op["node_id"])
        if p is None:
            continue
        k = kinds.setdefault(op["name"], {"count": 0, "meas": 0.0, "pred": 0.0, "model": set(),
                                          "faults": 0.0, "pages": 0.0})
        k["count"] += 1
        k["meas"] += op["replay_us"]
        k["pred"] += p["us"]
        k["faults"] += op.get("minor_faults", 0)
        if "fresh_pages" in p:
            k["pages"] += p["fresh_pages"]
        elif fault_us > 0:  # reports before the count: the first touch at the profile's cost
            k["pages"] += p.get("first_touch_us", 0) / fault_us
        k["model"].add(p["model"])
        if op.get("minor_faults", 0) > 0:
            pages_us = p.get("first_touch_us", 0) + p.get("release_us", 0) + p.get("episode_us", 0)
            faulting["faults"] += op["minor_faults"]
            faulting["rest_us"] += op["replay_us"] - (p["us"] - pages_us)
            faulting["charged_us"] += pages_us
    iter_ms = rep["replay"]["iter_ms"]["median"]
    sum_ops = sum(k["meas"] for k in kinds.values()) / 1e3
    return kinds, iter_ms, sum_ops, pre["predicted"]["iter_ms"], faulting


def report(label, kinds, iter_ms, sum_ops, pred_ms, faulting, top, faults=False):
    print(f"## {label}: replay {iter_ms:.2f} ms (ops {sum_ops:.2f}, unaccounted "
          f"{iter_ms - sum_ops:+.2f}), predicted {pred_ms:.2f} ms, error "
          f"{(pred_ms - iter_ms) / iter_ms * 100:+.1f}%")
    if faulting["faults"] > 0:
        n = faulting["faults"]
        print(f"   ops that faulted: {n:.0f} faults, {faulting['rest_us'] / n:.1f} us a fault beyond "
              f"their predicted compute (predicted first touch + release {faulting['charged_us'] / n:.1f})")
    if faults:
        print(f"   page faults per iteration: counted {sum(k['faults'] for k in kinds.values()):.0f}, "
              f"predicted {sum(k['pages'] for k in kinds.values()):.0f}")
    extra = f" {'faults':>7} {'pages':>7}" if faults else ""
    print(f"   {'op kind':<36} {'n':>5} {'meas_ms':>9} {'pred_ms':>9} {'miss_ms':>9} {'ratio':>6}{extra}  model")
    rows = sorted(kinds.items(), key=lambda kv: -abs(kv[1]["meas"] - kv[1]["pred"]))
    for name, k in rows[:top]:
        ratio = k["pred"] / k["meas"] if k["meas"] > 0 else float("inf")
        extra = f" {k['faults']:>7.0f} {k['pages']:>7.0f}" if faults else ""
        print(f"   {name:<36} {k['count']:>5} {k['meas'] / 1e3:>9.2f} {k['pred'] / 1e3:>9.2f} "
              f"{(k['meas'] - k['pred']) / 1e3:>+9.2f} {ratio:>6.2f}{extra}  {','.join(sorted(k['model']))}")
    rest = rows[top:]
    if rest:
        miss = sum(k["meas"] - k["pred"] for _, k in rest) / 1e3
        print(f"   ({len(rest)} more kinds: {miss:+.2f} ms missing)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("samples", nargs="*", help="fleet sample names, SAMPLE@zipf:1.1 for Zipf indices")
    ap.add_argument("--hw", help="hardware profile (et_profile_hw; with --replay/--predict: "
                    "for the fault columns)")
    ap.add_argument("--build", default="build-test")
    ap.add_argument("--replay", help="an existing et_replay --report-json")
    ap.add_argument("--predict", help="an existing et_predict --report-json")
    ap.add_argument("--top", type=int, default=12, help="op kinds to list (default 12)")
    a = ap.parse_args()
    if a.replay or a.predict:
        if not (a.replay and a.predict) or a.samples:
            ap.error("--replay and --predict go together, without samples")
        report(a.replay, *attribute(a.replay, a.predict, a.hw), a.top, faults=bool(a.hw))
        return
    if not a.hw or not a.samples:
        ap.error("give --hw and samples, or --replay and --predict")
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    out = tempfile.mkdtemp(prefix="predict_attrib.")
    for entry in a.samples:
        report(entry, *attribute(*run_sample(a.build, a.hw, entry, out), a.hw), a.top, faults=True)
    print(f"# reports in {out}")


if __name__ == "__main__":
    main()
