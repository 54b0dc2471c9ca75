// SPDX-License-Identifier: MIT
//
// et_generate --suite FLEET_DIR -o SUITE: groups a fleet's traces by workload
// (normalised operator signature), picks a representative per group, weights
// groups by their share of the fleet, and writes one benchmark program per
// representative, manifest.json and run_suite.sh.
#pragma once

#include <string>
#include <vector>

#include "generator/emit_trace.h"
#include "generator/signature.h"

namespace etb::gen {

// One recorded job: its per-rank trace files (rank order) and, when found
// beside them, the matching profiler traces.
struct FleetJob {
  std::string name;                      // "ddp2", "resnet_et", ...; unique in a suite
  std::string stem;                      // the files' stem: <stem>.meta.json lies beside them
  std::string folder;                    // the job's folder, relative to its fleet folder
  std::vector<std::string> traces;       // one per rank
  std::vector<std::string> kineto;       // empty or one per rank
};

struct FleetScan {
  std::vector<FleetJob> jobs;
  std::vector<std::string> ignored;  // files that are not traces (listed in the manifest)
};

// Walks `dir` recursively. Files "x.rank0.et.json.gz", "x.1.et" of one
// folder form one job; "x.kineto.json.gz" / "x_kineto.json.gz" /
// "x_trace.json.gz" pair with it by name and rank.
FleetScan scanFleet(const std::string& dir);

// Jobs of two folders with one stem (fleet_samples/gpt/gpt and
// fleet_samples/gpu_h200/gpt/gpt) are named by their folders too
// ("gpu_h200_gpt"), so that the manifest and the programs tell them apart.
void uniqueJobNames(std::vector<FleetJob>& jobs);

// The file stem that ties ranks and profiler traces of one job together;
// `rank` is set to the rank number in the name, or -1.
std::string fileStem(const std::string& file_name, int* rank);

struct JobFacts {
  int ranks = 1;
  OpSignature signature;          // summed over ranks
  double original_iter_ms = -1;   // rank 0, when Kineto times are known
  // "cuda" when the recording's tensors lived on a GPU, else "cpu": a GPU
  // job and a CPU job are never one group (their originals ran on different
  // hardware, so one representative's ratio cannot stand for both).
  std::string device = "cpu";
  std::string error;              // non-empty: unreadable, not grouped
};

// Reads one job and computes its facts; a read failure goes to `error`.
JobFacts readJobFacts(const FleetJob& job);

struct Group {
  std::vector<size_t> members;  // indices into the jobs
  size_t representative = 0;
  double weight = 0;
  double coverage = 1;  // of the group's op executions by the representative's ops
};

// Greedy clustering: a job joins the first group whose first member has its
// ranks and device and is at least `threshold` similar, else starts a new
// one. The representative is the member most similar to the others.
std::vector<Group> groupJobs(const std::vector<JobFacts>& facts, double threshold = 0.8);

// Weights sum to 1: by recorded time when every grouped job has one, else by
// count. Returns the basis ("recorded_time" or "count").
std::string assignWeights(std::vector<Group>& groups, const std::vector<JobFacts>& facts);

struct SuiteSummary {
  size_t traces = 0, groups = 0, programs = 0, unreadable = 0;
};

// One suite over every trace in `fleet_dirs` (fleet samples and public
// traces side by side: `--suite fleet_samples --suite ../shared/traces`).
SuiteSummary generateSuite(const std::vector<std::string>& fleet_dirs, const std::string& out_dir,
                           const EmitOptions& options);

}  // namespace etb::gen
