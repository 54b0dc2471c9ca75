# SPDX-License-Identifier: MIT
"""Fidelity table for scripts/fidelity.sh: the original (measured now, unprofiled) against the
replay of ops only and the replay with the original's host time emulated, per sample.

usage: fidelity_table.py WORKDIR NAME...
Reads, per round folder WORKDIR/r<k> (or WORKDIR itself): <name>/<name>.metrics.json (the
recorder's original_iter_ms_median) and <name>.json (et_replay --report-json; replay.iter_ms
and host_time.with_host_iter_ms). Each round's replay is compared with the original measured
right before it (the machine drifts between rounds: a neighbour's load, frequency), and the
error shown is the median over rounds of those paired errors; the spread over rounds is in the
note. The times shown are medians over rounds.
Exits 1 when a target of issue 9 is missed, 2 on missing results.
"""
import json
import math
import os
import sys

LIMIT_PCT = 10.0        # each compute-bound sample (ops only), every sample (with host time)
GEOMEAN_LIMIT_PCT = 5.0  # geometric mean over the compute-bound five (ops only)
# The compute-bound five of issue 9 (dlrm included there as "DLRM-like").
COMPUTE_BOUND = ("mlp", "resnet18", "transformer", "dlrm", "conv_adamw")


def dig(doc, dotted):
    for key in dotted.split("."):
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2.0


def loadRound(workdir, name):
    """(original ms, ops-only ms, with-host ms, host ms, coverage text, (original, replay)
    minor page faults per iteration) or a problem string."""
    metrics_path = os.path.join(workdir, name, name + ".metrics.json")
    if not os.path.exists(metrics_path):
        return "no original measured (%s missing)" % metrics_path
    with open(metrics_path) as f:
        metrics = json.load(f)
    original = metrics.get("original_iter_ms_median")
    report_path = os.path.join(workdir, name + ".json")
    if not os.path.exists(report_path):
        return "no replay report (et_replay failed?)"
    with open(report_path) as f:
        report = json.load(f)
    ops = dig(report, "replay.iter_ms.median")
    host = dig(report, "host_time.with_host_iter_ms.median")
    if not isinstance(ops, (int, float)) or ops <= 0 or not original:
        return "report has no positive replay.iter_ms.median"
    covered = "%s/%s ops" % (dig(report, "coverage.replayed"), dig(report, "coverage.operators"))
    host_ms = dig(report, "host_time.original_host_ms")
    if host_ms is None:  # reports before the replay's own between-op time was taken out
        host_ms = dig(report, "host_time.emulated_ms")
    faults = (metrics.get("minor_faults_per_step"), dig(report, "system.minor_faults_per_iter"))
    return (float(original), float(ops), host, host_ms, covered, faults)


def loadSample(workdir, name):
    rounds = sorted(d for d in os.listdir(workdir) if d.startswith("r") and d[1:].isdigit())
    rows = []
    for d in [os.path.join(workdir, d) for d in rounds] or [workdir]:
        row = loadRound(d, name)
        if isinstance(row, str):
            return row
        rows.append(row)
    pick = lambda i: median([r[i] for r in rows]) if all(r[i] is not None for r in rows) else None
    paired = lambda i: ([err(r[i], r[0]) for r in rows]
                        if all(r[i] is not None for r in rows) else None)
    return {"original": pick(0), "ops": pick(1), "host": pick(2), "host_ms": pick(3),
            "coverage": rows[-1][4], "rounds": len(rows),
            "faults": [median([r[5][k] for r in rows]) if all(r[5][k] is not None for r in rows)
                       else None for k in (0, 1)],
            "errs_ops": paired(1), "errs_host": paired(2)}


def err(replay, original):
    return None if replay is None else (replay - original) / original * 100.0


def spread(errors):
    """The paired errors' range over rounds, e.g. '-3..+5%'."""
    return "%+.0f..%+.0f%%" % (min(errors), max(errors))


def geomean(values):
    values = [max(abs(v), 0.01) for v in values if v is not None]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def isComputeBound(name):
    """A sized variant (MODEL@KEY=VALUE,...) counts as its model does."""
    return name.split("@")[0] in COMPUTE_BOUND


def fmt(v, spec):
    return "-" if v is None else spec % v


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    workdir, names = argv[1], argv[2:]
    width = max([12] + [len(n) for n in names])
    print("%-*s | %9s | %9s | %7s | %9s | %7s | %6s | %s"
          % (width, "sample", "original", "ops only", "err %", "with host", "err %", "host %", "note"))
    print("-" * (84 + width))
    results, missing, failed = {}, [], []
    for name in names:
        s = loadSample(workdir, name)
        if isinstance(s, str):
            missing.append(name)
            print("%-*s | %s" % (width, name, s))
            continue
        results[name] = s
        s["err_ops"] = median(s["errs_ops"])
        s["err_host"] = None if s["errs_host"] is None else median(s["errs_host"])
        share = None if s["host_ms"] is None else 100.0 * s["host_ms"] / s["original"]
        notes = [s["coverage"], "%d rounds" % s["rounds"], "ops %s" % spread(s["errs_ops"])]
        if s["errs_host"] is not None:
            notes.append("host %s" % spread(s["errs_host"]))
        if None not in s["faults"]:  # heap behaviour: first touches of pages per iteration
            notes.append("faults/iter %.0f vs %.0f" % tuple(s["faults"]))
        if isComputeBound(name):
            notes.insert(0, "compute-bound")
            if abs(s["err_ops"]) > LIMIT_PCT:
                failed.append("%s ops only %+.1f%%" % (name, s["err_ops"]))
        if s["err_host"] is None or abs(s["err_host"]) > LIMIT_PCT:
            failed.append("%s with host %s" % (name, fmt(s["err_host"], "%+.1f%%")))
        print("%-*s | %6.1f ms | %6.1f ms | %+7.1f | %9s | %7s | %6s | %s"
              % (width, name, s["original"], s["ops"], s["err_ops"], fmt(s["host"], "%6.1f ms"),
                 fmt(s["err_host"], "%+7.1f"), fmt(share, "%5.1f"), "; ".join(notes)))
    bound = [r["err_ops"] for n, r in results.items() if isComputeBound(n)]
    g_bound = geomean(bound)
    g_ops = geomean([r["err_ops"] for r in results.values()])
    g_host = geomean([r["err_host"] for r in results.values()])
    print("geometric mean of |error %%|: compute-bound ops only %s over %d; all ops only %s, "
          "all with host %s over %d"
          % (fmt(g_bound, "%.1f%%"), len(bound), fmt(g_ops, "%.1f%%"), fmt(g_host, "%.1f%%"),
             len(results)))
    if g_bound is not None and g_bound > GEOMEAN_LIMIT_PCT:
        failed.append("compute-bound geometric mean %.1f%% > %.0f%%" % (g_bound, GEOMEAN_LIMIT_PCT))
    if missing:
        print("no result for: %s" % ", ".join(missing), file=sys.stderr)
        return 2
    if failed:
        print("targets missed: %s" % "; ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
