# SPDX-License-Identifier: MIT
"""Fidelity table for scripts/fidelity.sh: original (measured now) vs replay, per sample.

usage: fidelity_table.py WORKDIR NAME...   (reads WORKDIR/<name>/<name>.meta.json for the
original and WORKDIR/<name>.json, et_replay's --report-json, for the replay; when WORKDIR holds
round folders r1, r2, ... each is read and the medians over rounds are compared, because the
original and the replay were measured alternately to spread the machine's noise over both)
Exits 1 if a compute-bound sample's replay is more than LIMIT_PCT off, 2 on missing results.
"""
import json
import math
import os
import sys

LIMIT_PCT = 10.0


def dig(doc, dotted):
    for key in dotted.split("."):
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc


def loadRow(workdir, name):
    with open(os.path.join(workdir, name, name + ".meta.json")) as f:
        meta = json.load(f)
    report_path = os.path.join(workdir, name + ".json")
    if not os.path.exists(report_path):
        return meta, None, None, "no replay report (et_replay failed?)"
    with open(report_path) as f:
        report = json.load(f)
    replay = dig(report, "replay.iter_ms.median")
    if not isinstance(replay, (int, float)) or replay <= 0:
        return meta, None, None, "report has no positive replay.iter_ms.median"
    ops, done = dig(report, "coverage.operators"), dig(report, "coverage.replayed")
    coverage = "replayed %s/%s ops" % (done, ops) if ops is not None else ""
    return meta, float(replay), coverage, None


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2.0


def loadRounds(workdir, name):
    """(meta, original median, replay median, coverage, problem) over the round folders."""
    rounds = sorted(d for d in os.listdir(workdir) if d.startswith("r") and d[1:].isdigit())
    dirs = [os.path.join(workdir, d) for d in rounds] or [workdir]
    originals, replays, meta, coverage = [], [], None, ""
    for d in dirs:
        meta, replay, coverage_d, problem = loadRow(d, name)
        if problem:
            return meta, None, None, None, problem
        originals.append(meta["original"]["iter_ms_median"])
        replays.append(replay)
        coverage = coverage_d
    if len(dirs) > 1:
        coverage = ("%s; %d rounds" % (coverage, len(dirs))).lstrip("; ")
    return meta, median(originals), median(replays), coverage, None


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    workdir, names = argv[1], argv[2:]
    rows, errors, ratios, failed, missing = [], [], [], [], []
    for name in names:
        meta, original, replay, coverage, problem = loadRounds(workdir, name)
        if original is None and meta is not None:
            original = meta["original"]["iter_ms_median"]
        bound = bool(meta.get("compute_bound"))
        if problem:
            rows.append((name, original, None, None, bound, problem))
            missing.append(name)
            continue
        err = (replay - original) / original * 100.0
        errors.append(max(abs(err), 0.01))  # geometric mean needs positive values
        ratios.append(replay / original)
        note = coverage
        if bound and abs(err) > LIMIT_PCT:
            failed.append(name)
            note = ("FAIL (> %.0f%%) " % LIMIT_PCT + note).strip()
        rows.append((name, original, replay, err, bound, note))
    print("%-12s | %11s | %9s | %8s | %-13s | %s"
          % ("name", "original ms", "replay ms", "error %", "compute-bound", "note"))
    print("-" * 78)
    for name, original, replay, err, bound, note in rows:
        print("%-12s | %11.1f | %9s | %8s | %-13s | %s"
              % (name, original, "-" if replay is None else "%.1f" % replay,
                 "-" if err is None else "%+.1f" % err, "yes" if bound else "no", note))
    if errors:
        geo_err = math.exp(sum(math.log(e) for e in errors) / len(errors))
        geo_ratio = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print("geometric mean of |error %%|: %.1f%% over %d sample(s); "
              "geometric mean replay/original: %.3f" % (geo_err, len(errors), geo_ratio))
    if missing:
        print("no replay result for: %s" % ", ".join(missing), file=sys.stderr)
        return 2
    if failed:
        print("compute-bound samples off by more than %.0f%%: %s"
              % (LIMIT_PCT, ", ".join(failed)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
