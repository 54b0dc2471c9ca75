# SPDX-License-Identifier: MIT
"""Table for scripts/fidelity_ddp.sh: DDP original (measured now) vs multi-rank replay.

usage: fidelity_ddp_table.py WORKDIR NAME...   WORKDIR holds round folders r1, r2, ... with
<name>/<name>.meta.json (the original: per-rank medians under ranks.<R>.original) and
<name>.json (et_replay --report-json: per-rank medians under ranks[].iter_ms, and with
--host-time emulate ranks[].with_host_ms).
Each round's figure is the slowest rank's median (DDP ranks wait for each other at every
bucket). Errors are paired per round (replay vs the original measured in the same round) and the
table shows their median and spread. Exits 1 if a sample is more than LIMIT_PCT off with host
time (ops only where the replay emulated none), 2 on missing results.
"""
import json
import os
import statistics
import sys

LIMIT_PCT = 15.0


def roundFigures(folder, name):
    """dict of one round: original, ops, host (ms; None where missing), backend, coverage."""
    with open(os.path.join(folder, name, name + ".meta.json")) as f:
        meta = json.load(f)
    out = {"original": max(r["original"]["iter_ms_median"] for r in meta["ranks"].values()),
           "ops": None, "host": None, "backend": None, "coverage": None}
    path = os.path.join(folder, name + ".json")
    if not os.path.exists(path):
        return out
    with open(path) as f:
        report = json.load(f)
    out["ops"] = max(r["iter_ms"]["median"] for r in report["ranks"])
    hosts = [r.get("with_host_ms") for r in report["ranks"]]
    if all(h is not None for h in hosts):
        out["host"] = max(hosts)
    cov = report["coverage"]
    out["coverage"] = "ops %s/%s, comms %s/%s" % (cov["replayed"], cov["operators"],
                                                  cov["comms_replayed"], cov["comms"])
    out["backend"] = report["run"]["comm_backend"]
    return out


def paired(figs, key):
    errs = [(f[key] - f["original"]) / f["original"] * 100.0 for f in figs if f[key] is not None]
    return errs or None


def cell(errs):
    if errs is None:
        return "-", ""
    return "%+.1f" % statistics.median(errs), "%+.0f..%+.0f" % (min(errs), max(errs))


def main():
    workdir, names = sys.argv[1], sys.argv[2:]
    rounds = sorted((d for d in os.listdir(workdir) if d.startswith("r") and d[1:].isdigit()),
                    key=lambda d: int(d[1:]))
    status = 0
    print("| sample | ranks | original ms | ops only ms | err % | with host ms | err % | backend "
          "| coverage, per-round spread (ops; host) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        figs = [roundFigures(os.path.join(workdir, r), name) for r in rounds]
        with open(os.path.join(workdir, rounds[0], name, name + ".meta.json")) as f:
            ranks = json.load(f)["world_size"]
        original = statistics.median(f["original"] for f in figs)
        done = [f for f in figs if f["ops"] is not None]
        if not done:
            print("| %s | %d | %.1f | - | - | - | - | - | replay failed |" % (name, ranks, original))
            status = max(status, 2)
            continue
        e_ops, e_host = paired(done, "ops"), paired(done, "host")
        ops_ms = statistics.median(f["ops"] for f in done)
        hosts = [f["host"] for f in done if f["host"] is not None]
        host_ms = "%.1f" % statistics.median(hosts) if hosts else "-"
        (ops_err, ops_spread), (host_err, host_spread) = cell(e_ops), cell(e_host)
        judged = e_host if e_host is not None else e_ops
        over = abs(statistics.median(judged)) > LIMIT_PCT
        mark = " (over %.0f%%)" % LIMIT_PCT if over else ""
        print("| %s | %d | %.1f | %.1f | %s | %s | %s%s | %s | %s, %d rounds (%s; %s) |"
              % (name, ranks, original, ops_ms, ops_err, host_ms, host_err, mark,
                 done[-1]["backend"], done[-1]["coverage"], len(done), ops_spread,
                 host_spread or "-"))
        if over:
            status = max(status, 1)
    load = os.getloadavg()
    print("load average at the end: %.1f %.1f %.1f on %d CPUs" % (load + (os.cpu_count(),)))
    return status


if __name__ == "__main__":
    sys.exit(main())
