# SPDX-License-Identifier: MIT
"""Table for scripts/fidelity_ddp.sh: DDP original (measured now) vs multi-rank replay.

usage: fidelity_ddp_table.py WORKDIR NAME...   WORKDIR holds round folders r1, r2, ... with
<name>/<name>.meta.json (the original: per-rank medians under ranks.<R>.original) and
<name>.json (et_replay --report-json: per-rank replay medians under ranks[].iter_ms).
Each round's figure is the slowest rank's median (DDP ranks wait for each other at every
bucket); the table compares the medians over rounds. Exits 1 if a sample is more than
LIMIT_PCT off, 2 on missing results.
"""
import json
import os
import statistics
import sys

LIMIT_PCT = 15.0


def roundFigures(folder, name):
    """(original ms, replay ms, backend, coverage text) of one round; None where missing."""
    with open(os.path.join(folder, name, name + ".meta.json")) as f:
        meta = json.load(f)
    original = max(r["original"]["iter_ms_median"] for r in meta["ranks"].values())
    path = os.path.join(folder, name + ".json")
    if not os.path.exists(path):
        return original, None, None, None
    with open(path) as f:
        report = json.load(f)
    replay = max(r["iter_ms"]["median"] for r in report["ranks"])
    cov = report["coverage"]
    text = "ops %s/%s, comms %s/%s" % (cov["replayed"], cov["operators"], cov["comms_replayed"],
                                       cov["comms"])
    return original, replay, report["run"]["comm_backend"], text


def main():
    workdir, names = sys.argv[1], sys.argv[2:]
    rounds = sorted((d for d in os.listdir(workdir) if d.startswith("r") and d[1:].isdigit()),
                    key=lambda d: int(d[1:]))
    status = 0
    print("| sample | ranks | original ms | replay ms | error % | backend | coverage |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        figs = [roundFigures(os.path.join(workdir, r), name) for r in rounds]
        originals = [f[0] for f in figs]
        replays = [f[1] for f in figs if f[1] is not None]
        with open(os.path.join(workdir, rounds[0], name, name + ".meta.json")) as f:
            ranks = json.load(f)["world_size"]
        if not replays:
            print("| %s | %d | %.1f | - | - | - | replay failed |" % (name, ranks,
                                                                     statistics.median(originals)))
            status = max(status, 2)
            continue
        o, p = statistics.median(originals), statistics.median(replays)
        err = (p - o) / o * 100.0
        backend, cov = figs[-1][2] or figs[0][2], figs[-1][3] or figs[0][3]
        mark = "" if abs(err) <= LIMIT_PCT else " (over %.0f%%)" % LIMIT_PCT
        print("| %s | %d | %.1f | %.1f | %+.1f%s | %s | %s |" % (name, ranks, o, p, err, mark,
                                                              backend, cov))
        print("  rounds: original %s, replay %s" % ([round(x, 1) for x in originals],
                                                    [round(x, 1) for x in replays]),
              file=sys.stderr)
        if abs(err) > LIMIT_PCT:
            status = max(status, 1)
    load = os.getloadavg()
    print("load average at the end: %.1f %.1f %.1f on %d CPUs" % (load + (os.cpu_count(),)))
    return status


if __name__ == "__main__":
    sys.exit(main())
