#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Two predictions of the same replays, paired per round: a model change
(another et_predict build) or another profile (say, one stripped of the
curves a change added) against the current one, on replays that the
machine's load moves far more than the change does.

  scripts/predict_ab.py --hw A.json [--hw-b B.json | --b-without CURVE,...] [--build-b DIR]
                        [--rounds N] SAMPLE[@DIST]...

Each round replays each sample once (--threads 1, pinned to $ETB_CORE when
set) and predicts it with side A (--build, --hw) and side B (--build-b,
--hw-b; each defaults to A's). --b-without gives side B A's profile less
the bandwidth curves named (a name ending in ':' drops every curve it
begins; the model then reads what it read before those curves existed).
Prints per round the replay and both errors,
their medians over rounds, and the op kinds whose predicted time the two
sides differ on most: measured ms, each side's ms and ratio to measured."""
import argparse
import collections
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from predict_attrib import attribute, run_predict, run_replay, sample_trace  # noqa: E402


def replay(build, entry, out, r):
    name, dist, trace = sample_trace(entry)
    rep = os.path.join(out, f"{name}.{dist}.{r}.replay.json")
    return trace, dist, run_replay(build, trace, dist, rep, quiet=True)


def without_curves(hw, names, out):
    doc = json.load(open(hw))
    drop = [n for n in names.split(",") if n]
    doc["bandwidth"] = {k: v for k, v in doc["bandwidth"].items()
                        if not any(k.split("@")[0] == n or (n.endswith(":") and k.startswith(n)) for n in drop)}
    path = os.path.join(out, "hw_b.json")
    json.dump(doc, open(path, "w"))
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("samples", nargs="+", help="fleet sample names, SAMPLE@zipf:1.1 for Zipf indices")
    ap.add_argument("--hw", required=True, help="side A's hardware profile")
    ap.add_argument("--build", default="build-test", help="side A's build (and the replayer's)")
    ap.add_argument("--hw-b", help="side B's profile (default: A's)")
    ap.add_argument("--b-without", help="side B: A's profile less these curves (comma-separated)")
    ap.add_argument("--build-b", help="side B's build (default: A's)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--top", type=int, default=8)
    a = ap.parse_args()
    if a.hw_b and a.b_without:
        ap.error("--hw-b and --b-without exclude each other")
    a.hw = os.path.abspath(a.hw)
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    out = tempfile.mkdtemp(prefix="predict_ab.")
    hw_b = without_curves(a.hw, a.b_without, out) if a.b_without else (a.hw_b or a.hw)
    build_b = a.build_b or a.build
    for entry in a.samples:
        errs, kinds = {"A": [], "B": []}, collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
        for r in range(a.rounds):
            trace, dist, rep = replay(a.build, entry, out, r)
            line = []
            for side, build, hw in (("A", a.build, a.hw), ("B", build_b, hw_b)):
                pre = run_predict(build, hw, trace, dist, rep.replace(".replay.", f".{side}."),
                                  quiet=True)
                per_kind, iter_ms, _, pred_ms, _ = attribute(rep, pre)
                errs[side].append((pred_ms - iter_ms) / iter_ms * 100)
                line.append(f"{side} {pred_ms:8.2f} ms {errs[side][-1]:+6.1f}%")
                for name, k in per_kind.items():
                    row = kinds[name]
                    row[0] = k["count"]
                    if side == "A":  # one replay per round, seen by both sides
                        row[1] += k["meas"] / a.rounds
                    row[2 if side == "A" else 3] += k["pred"] / a.rounds
            print(f"  {entry:<16} round {r}: replay {iter_ms:8.2f} ms   {'   '.join(line)}")
        print(f"## {entry}: median error A {statistics.median(errs['A']):+.1f}%, "
              f"B {statistics.median(errs['B']):+.1f}% over {a.rounds} paired rounds")
        rows = sorted(kinds.items(), key=lambda kv: -abs(kv[1][2] - kv[1][3]))[:a.top]
        for name, (n, meas, pa, pb) in rows:
            if abs(pa - pb) < 1:
                break
            print(f"   {name:<34} {n:>4} meas {meas / 1e3:8.3f} ms  A {pa / 1e3:8.3f} ({pa / meas:5.2f}x)"
                  f"  B {pb / 1e3:8.3f} ({pb / meas:5.2f}x)")
    print(f"# reports in {out}")


if __name__ == "__main__":
    main()
