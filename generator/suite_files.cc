// SPDX-License-Identifier: MIT
#include "generator/suite_files.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "generator/escape.h"

namespace etb::gen {
namespace {
using nlohmann::json;

json orNull(double v) { return v > 0 ? json(v) : json(); }

json jobsJson(const FleetScan& scan, const std::vector<JobFacts>& facts,
              const std::vector<Group>& groups) {
  json jobs = json::array();
  for (size_t j = 0; j < scan.jobs.size(); ++j) {
    json x = {{"name", scan.jobs[j].name}, {"traces", scan.jobs[j].traces},
              {"kineto", scan.jobs[j].kineto}, {"ranks", facts[j].ranks},
              {"original_iter_ms", orNull(facts[j].original_iter_ms)}, {"device", facts[j].device},
              {"group", json()}};
    if (!facts[j].error.empty()) x["error"] = facts[j].error;
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t m : groups[g].members) {
        if (m == j) x["group"] = g;
      }
    }
    jobs.push_back(std::move(x));
  }
  return jobs;
}

json groupsJson(const FleetScan& scan, const std::vector<JobFacts>& facts,
                const std::vector<Group>& groups, const std::vector<ProgramInfo>& programs) {
  json out = json::array();
  for (size_t g = 0; g < groups.size(); ++g) {
    json members = json::array();
    for (size_t m : groups[g].members) members.push_back(scan.jobs[m].name);
    const size_t rep = groups[g].representative;
    out.push_back({{"id", g},
                   {"program", programs[g].name},
                   {"representative", scan.jobs[rep].name},
                   {"members", members},
                   {"weight", groups[g].weight},
                   {"coverage", groups[g].coverage},
                   {"ranks", facts[rep].ranks},
                   {"device", facts[rep].device},
                   {"ops", programs[g].ops},
                   {"original_iter_ms", orNull(facts[rep].original_iter_ms)}});
  }
  return out;
}

const char* kRunner = R"sh(#!/usr/bin/env bash
# Builds every program of this suite (one CMake build, one shared runtime, in
# parallel), runs each one (multi-rank programs under mpirun) and writes
# suite_report.json and suite_report.html with one weighted score.
# Usage: ./run_suite.sh [program flags, e.g. --iters 10 --warmup 2]
# Environment: JOBS (compile jobs, default nproc), MPIRUN (default mpirun),
# MPIRUN_FLAGS (extra mpirun flags), CMAKE_FLAGS (e.g. -DCMAKE_PREFIX_PATH=...),
# PROGRAM_TIMEOUT (seconds one program may run; default none).
set -euo pipefail
cd "$(dirname "$0")"
jobs="${JOBS:-$(nproc)}"
echo "building $(wc -l < programs.tsv) programs (log: build.log)"
cmake -S . -B build ${CMAKE_FLAGS:-} > build.log 2>&1 || { tail -40 build.log; exit 1; }
cmake --build build -j "$jobs" >> build.log 2>&1 || { tail -40 build.log; exit 1; }
mkdir -p results
status=0
while IFS=$'\t' read -r name ranks; do
  exe="build/programs/$name/bench"
  cmd=("$exe")
  if [ "$ranks" -gt 1 ]; then
    # shellcheck disable=SC2206
    cmd=(${MPIRUN:-mpirun} ${MPIRUN_FLAGS:-} -np "$ranks" "$exe")
  fi
  echo "running $name ($ranks rank(s))"
  # stdin from /dev/null: mpirun would otherwise eat the rest of programs.tsv.
  # shellcheck disable=SC2086
  if ! ${PROGRAM_TIMEOUT:+timeout -k 5 $PROGRAM_TIMEOUT} "${cmd[@]}" --quiet \
       --report-json "results/$name.json" "$@" > "results/$name.log" 2>&1 < /dev/null; then
    echo "  failed: see results/$name.log"
    status=1
  fi
done < programs.tsv
python3 combine_report.py manifest.json results suite_report.json suite_report.html
exit $status
)sh";

const char* kCombiner = R"py(#!/usr/bin/env python3
"""Combines the per-program reports of a suite: each program's replayed
iteration time next to its original, and one score, the weighted geometric
mean of replay/original time ratios (weights from manifest.json; > 1 means
this machine runs the fleet's work slower than where it was recorded)."""
import html
import json
import math
import sys


def program_row(group, results):
    row = {"program": group["program"], "members": group["members"],
           "weight": group["weight"], "ranks": group["ranks"],
           "original_iter_ms": group["original_iter_ms"]}
    try:
        with open(f"{results}/{group['program']}.json", encoding="utf-8") as f:
            rep = json.load(f)
    except (OSError, ValueError) as e:
        row["error"] = str(e)
        return row
    row["replay_iter_ms"] = rep["replay"]["iter_ms"]["median"]
    orig = rep.get("original") or {}
    if orig.get("iter_ms"):
        row["original_iter_ms"] = orig["iter_ms"]["median"]
    row["ratio"] = orig.get("ratio")
    cov = rep["coverage"]
    row["replayed"], row["operators"] = cov["replayed"], cov["operators"]
    return row


def score(rows):
    num = den = 0.0
    for r in rows:
        if r.get("ratio") and r["ratio"] > 0:
            num += r["weight"] * math.log(r["ratio"])
            den += r["weight"]
    return (math.exp(num / den) if den > 0 else None), den


def write_html(path, rows, value, scored):
    cells = []
    for r in rows:
        fmt = lambda v: "" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))
        cells.append("<tr>" + "".join(f"<td>{html.escape(fmt(r.get(k)))}</td>" for k in (
            "program", "weight", "ranks", "replay_iter_ms", "original_iter_ms", "ratio",
            "replayed", "operators", "error")) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("program", "weight", "ranks", "replay ms",
                                              "original ms", "ratio", "replayed", "ops", "error"))
    text = "n/a" if value is None else f"{value:.3f}"
    with open(path, "w", encoding="utf-8") as f:
        f.write("<!doctype html><meta charset='utf-8'><title>suite report</title>"
                "<style>body{font-family:sans-serif}td,th{padding:2px 8px;text-align:right}</style>"
                f"<h1>Weighted score: {text}</h1><p>weighted geometric mean of replay/original"
                f" iteration-time ratios over {scored:.0%} of the fleet's weight</p>"
                f"<table><tr>{head}</tr>{''.join(cells)}</table>")


def main():
    manifest, results, out_json, out_html = sys.argv[1:5]
    with open(manifest, encoding="utf-8") as f:
        m = json.load(f)
    rows = [program_row(g, results) for g in m["groups"]]
    value, scored = score(rows)
    with open(out_json, "w", encoding="utf-8") as f:
        json.dump({"weight_basis": m["weight_basis"], "score": value, "scored_weight": scored,
                   "programs": rows}, f, indent=2)
    write_html(out_html, rows, value, scored)
    for r in rows:
        ratio = "n/a" if not r.get("ratio") else f"{r['ratio']:.3f}"
        print(f"{r['program']:40s} weight {r['weight']:.3f}  ratio {ratio}"
              + (f"  ERROR {r['error']}" if "error" in r else ""))
    print("weighted score:", "n/a" if value is None else f"{value:.4f}",
          f"(replay/original, geometric mean, {scored:.0%} of the weight scored)")


if __name__ == "__main__":
    main()
)py";
}  // namespace

void writeSuiteFiles(const std::string& out_dir, const FleetScan& scan,
                     const std::vector<JobFacts>& facts, const std::vector<Group>& groups,
                     const std::string& weight_basis, const std::vector<ProgramInfo>& programs) {
  double op_coverage = 0;
  size_t grouped = 0;
  for (const Group& g : groups) {
    op_coverage += g.weight * g.coverage;
    grouped += g.members.size();
  }
  const json manifest = {
      {"weight_basis", weight_basis},
      {"groups", groupsJson(scan, facts, groups, programs)},
      {"jobs", jobsJson(scan, facts, groups)},
      {"ignored_files", scan.ignored},
      {"coverage",
       {{"jobs", scan.jobs.size()}, {"jobs_grouped", grouped}, {"weighted_op_coverage", op_coverage}}}};
  writeTextFile(out_dir + "/manifest.json",
                manifest.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  std::string cmake = "# Generated by et_generate --suite: every program, one shared runtime.\n"
                      "cmake_minimum_required(VERSION 3.18)\nproject(etb_suite LANGUAGES C CXX)\n";
  std::string tsv;
  for (const ProgramInfo& p : programs) {
    cmake += "add_subdirectory(programs/" + p.name + ")\n";
    tsv += p.name + "\t" + std::to_string(p.ranks) + "\n";
  }
  writeTextFile(out_dir + "/CMakeLists.txt", cmake);
  writeTextFile(out_dir + "/programs.tsv", tsv);
  writeTextFile(out_dir + "/run_suite.sh", kRunner);
  writeTextFile(out_dir + "/combine_report.py", kCombiner);
  namespace fs = std::filesystem;
  fs::permissions(out_dir + "/run_suite.sh", fs::perms::owner_exec | fs::perms::group_exec |
                                                 fs::perms::others_exec, fs::perm_options::add);
}

}  // namespace etb::gen
