// SPDX-License-Identifier: MIT
#include "generator/suite.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/trace_io.h"
#include "generator/emit_project.h"
#include "generator/generate.h"
#include "generator/suite_files.h"
#include "replayer/replay_result.h"

namespace etb::gen {
namespace fs = std::filesystem;
namespace {

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool maybeTraceName(const std::string& name) {
  for (const char* ext : {".json", ".json.gz", ".et", ".et.gz"}) {
    // Sidecars of a recording (its unprofiled timing and system metrics) are
    // not traces.
    if (endsWith(name, ext)) return !endsWith(name, ".meta.json") && !endsWith(name, ".metrics.json");
  }
  return false;
}

struct Candidate {
  std::string path;
  int rank = -1;
};

trace::FileKind sniff(const std::string& path) {
  try {
    const trace::FileKind k = trace::detectFileKind(path);
    const bool et_name = endsWith(path, ".et") || endsWith(path, ".et.gz");
    if (k == trace::FileKind::kChakra && !et_name) return trace::FileKind::kUnknown;
    return k;
  } catch (const std::exception&) {
    return trace::FileKind::kUnknown;
  }
}

// The fleet sample's meta.json beside the job's first trace, read into
// `info`; false when there is none or it is not a fleet meta.json (a warning:
// the job keeps its profiled original rather than dropping out of the suite).
bool originalFromMeta(const FleetJob& job, int ranks, ProgramInfo& info) {
  const std::string meta = metaBeside(job.traces.front(), job.stem.empty() ? job.name : job.stem);
  if (meta.empty()) return false;
  try {
    attachOriginalMeta(meta, ranks, info);
    return true;
  } catch (const InputError& e) {
    ETB_LOG(kWarn) << "ignoring " << meta << " beside " << job.traces.front() << ": " << e.what();
    info.original_meta.clear();
    info.original_ms.clear();
    return false;
  }
}

std::vector<std::string> byRank(std::vector<Candidate> c) {
  std::stable_sort(c.begin(), c.end(),
                   [](const Candidate& a, const Candidate& b) { return a.rank < b.rank; });
  std::vector<std::string> out;
  for (const Candidate& x : c) out.push_back(x.path);
  return out;
}

}  // namespace

JobFacts readJobFacts(const FleetJob& job) {
  JobFacts f;
  try {
    const std::vector<trace::Trace> ranks = readTraceFiles(job.traces, job.kineto);
    f.ranks = static_cast<int>(ranks.size());
    const trace::Trace& first = ranks.front();
    const auto on_gpu = [&](const trace::TensorRef& r) {
      return r.has_device && first.str(r.device).rfind("cuda", 0) == 0;
    };
    const bool gpu = std::any_of(first.tensors.begin(), first.tensors.end(), on_gpu);
    f.device = gpu ? "cuda" : "cpu";
    for (const trace::Trace& t : ranks) {
      for (const auto& [op, n] : opSignature(t, 0)) f.signature[op] += n;
    }
    std::vector<double> ms;
    for (const trace::Iteration& it : ranks.front().iterations) {
      if (it.dur_us > 0) ms.push_back(it.dur_us / 1e3);
    }
    if (!ms.empty()) {
      std::sort(ms.begin(), ms.end());
      f.original_iter_ms = ms[ms.size() / 2];
    }
    // A fleet sample's unprofiled steps beat the profiled step (which carries
    // the profiler's own cost), as in the program written for it.
    if (ProgramInfo info; originalFromMeta(job, 1, info)) {
      f.original_iter_ms = replay::summarize(info.original_ms.front()).median;
    }
    if (f.signature.empty()) f.error = "no operators to replay";
  } catch (const std::exception& e) {
    f.error = e.what();
  }
  return f;
}

std::string fileStem(const std::string& file_name, int* rank) {
  static const std::regex fmt(R"((\.gz|\.json|\.et)$)");
  static const std::regex profiler(R"([._](kineto|trace|chrome_legacy|profile)$)");
  static const std::regex et(R"(_et$)");
  static const std::regex ranked(R"([._]rank([0-9]+)$|\.([0-9]+)$)");
  std::string s = file_name;
  *rank = -1;
  for (std::string prev; prev != s;) {
    prev = s;
    s = std::regex_replace(s, fmt, "");
    s = std::regex_replace(s, profiler, "");
    s = std::regex_replace(s, et, "");
    std::smatch m;
    if (std::regex_search(s, m, ranked)) {
      *rank = std::stoi(m[1].matched ? m[1].str() : m[2].str());
      s = s.substr(0, static_cast<size_t>(m.position(0)));
    }
  }
  return s;
}

FleetScan scanFleet(const std::string& dir) {
  if (!fs::is_directory(dir)) ETB_INPUT_ERROR(SourceLoc{dir}, "--suite needs a folder of traces");
  std::vector<std::string> files;
  // Fleet folders are often assembled from links to where traces live.
  for (const auto& e : fs::recursive_directory_iterator(
           dir, fs::directory_options::follow_directory_symlink)) {
    if (e.is_regular_file()) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  FleetScan scan;
  std::map<std::string, std::vector<Candidate>> ets, kinetos;  // key: folder/stem
  std::map<std::string, std::string> folders;                  // key -> folder under dir
  for (const std::string& path : files) {
    const fs::path p(path);
    const std::string name = p.filename().string();
    const trace::FileKind kind = maybeTraceName(name) ? sniff(path) : trace::FileKind::kUnknown;
    Candidate c{path, -1};
    const std::string key = p.parent_path().string() + "/" + fileStem(name, &c.rank);
    if (kind == trace::FileKind::kPyTorchEt || kind == trace::FileKind::kChakra) {
      ets[key].push_back(c);
      folders[key] = fs::path(p.parent_path()).lexically_relative(dir).generic_string();
    } else if (kind == trace::FileKind::kKineto) {
      // Prefer the Kineto trace over a legacy Chrome export of the same run.
      auto& v = kinetos[key];
      const bool dup = std::any_of(v.begin(), v.end(), [&](const Candidate& x) { return x.rank == c.rank; });
      if (!dup) v.push_back(c);
      else if (name.find("kineto") != std::string::npos) {
        for (Candidate& x : v) if (x.rank == c.rank) x = c;
      }
    } else {
      scan.ignored.push_back(path);
    }
  }
  for (auto& [key, c] : ets) {
    FleetJob job;
    job.name = job.stem = benchName(key);
    job.folder = folders[key];
    job.traces = byRank(c);
    if (auto it = kinetos.find(key); it != kinetos.end() && it->second.size() == c.size()) {
      job.kineto = byRank(it->second);
    }
    scan.jobs.push_back(std::move(job));
  }
  return scan;
}

void uniqueJobNames(std::vector<FleetJob>& jobs) {
  std::map<std::string, int> count;
  for (const FleetJob& j : jobs) ++count[j.name];
  std::map<std::string, int> taken;
  for (FleetJob& j : jobs) {
    if (count[j.name] < 2) continue;
    // The folders above the job's own ("gpu_h200" of gpu_h200/gpt/gpt.et.json.gz).
    fs::path above = fs::path(j.folder);
    if (above.filename() == j.stem) above = above.parent_path();
    std::string prefix;
    for (const fs::path& part : above) {
      if (part != "." && !part.empty()) prefix += part.string() + "_";
    }
    std::string name = benchName(prefix + j.stem);
    // The same folders in two fleet folders: numbered in scan order.
    if (const int n = taken[name]++; n > 0) name += "_" + std::to_string(n + 1);
    j.name = name;
  }
}

std::vector<Group> groupJobs(const std::vector<JobFacts>& facts, double threshold) {
  std::vector<Group> groups;
  for (size_t j = 0; j < facts.size(); ++j) {
    if (!facts[j].error.empty()) continue;
    auto same = [&](const Group& g) {
      const JobFacts& first = facts[g.members.front()];
      return first.ranks == facts[j].ranks && first.device == facts[j].device &&
             similarity(first.signature, facts[j].signature) >= threshold;
    };
    auto it = std::find_if(groups.begin(), groups.end(), same);
    if (it == groups.end()) {
      groups.emplace_back();
      it = groups.end() - 1;
    }
    it->members.push_back(j);
  }
  for (Group& g : groups) {
    double best = -1;
    OpSignature all;
    for (size_t m : g.members) {
      double sum = 0;
      for (size_t o : g.members) sum += similarity(facts[m].signature, facts[o].signature);
      if (sum > best) best = sum, g.representative = m;
      for (const auto& [op, n] : facts[m].signature) all[op] += n;
    }
    g.coverage = coverage(facts[g.representative].signature, all);
  }
  return groups;
}

std::string assignWeights(std::vector<Group>& groups, const std::vector<JobFacts>& facts) {
  bool timed = !groups.empty();
  for (const Group& g : groups) {
    for (size_t m : g.members) timed = timed && facts[m].original_iter_ms > 0;
  }
  double total = 0;
  for (Group& g : groups) {
    g.weight = 0;
    for (size_t m : g.members) g.weight += timed ? facts[m].original_iter_ms : 1.0;
    total += g.weight;
  }
  for (Group& g : groups) g.weight = total > 0 ? g.weight / total : 0;
  return timed ? "recorded_time" : "count";
}

SuiteSummary generateSuite(const std::vector<std::string>& fleet_dirs, const std::string& out_dir,
                           const EmitOptions& options) {
  FleetScan scan;
  for (const std::string& dir : fleet_dirs) {
    FleetScan one = scanFleet(dir);
    if (one.jobs.empty()) ETB_INPUT_ERROR(SourceLoc{dir}, "no traces found in the folder");
    for (FleetJob& j : one.jobs) scan.jobs.push_back(std::move(j));
    scan.ignored.insert(scan.ignored.end(), one.ignored.begin(), one.ignored.end());
  }
  uniqueJobNames(scan.jobs);
  const std::string fleet_dir = fleet_dirs.empty() ? std::string("--suite") : fleet_dirs.front();
  std::vector<JobFacts> facts;
  for (const FleetJob& job : scan.jobs) {
    ETB_LOG(kInfo) << "reading " << job.traces.front() << (job.traces.size() > 1 ? " (+ranks)" : "");
    facts.push_back(readJobFacts(job));
    if (!facts.back().error.empty()) {
      ETB_LOG(kWarn) << job.traces.front() << ": " << facts.back().error;
    }
  }
  std::vector<Group> groups = groupJobs(facts);
  if (groups.empty()) ETB_INPUT_ERROR(SourceLoc{fleet_dir}, "none of the traces can be replayed");
  const std::string basis = assignWeights(groups, facts);
  prepareOutputDir(out_dir);
  writeTextFile(out_dir + "/" + kStampFile, "et_generate suite\n");
  std::vector<ProgramInfo> programs;
  for (size_t g = 0; g < groups.size(); ++g) {
    const FleetJob& job = scan.jobs[groups[g].representative];
    ProgramInfo info;
    info.name = "g" + std::to_string(g) + "-" + job.name;
    info.source = job.traces.front();
    info.kineto = !job.kineto.empty();
    // A fleet sample's own unprofiled original, where it has one.
    originalFromMeta(job, static_cast<int>(job.traces.size()), info);
    const std::vector<trace::Trace> ranks = readTraceFiles(job.traces, job.kineto);
    try {  // the recorder's metrics sidecars, where the sample has them
      attachOriginalMetrics(ranks, "", info);
    } catch (const InputError& e) {
      ETB_LOG(kWarn) << "ignoring the metrics sidecar of " << job.traces.front() << ": " << e.what();
      info.original_metrics.clear();
    }
    programs.push_back(writeProgram(ranks, info, out_dir + "/programs/" + info.name, options));
  }
  writeSuiteFiles(out_dir, scan, facts, groups, basis, programs);
  SuiteSummary s;
  s.traces = scan.jobs.size();
  s.groups = groups.size();
  s.programs = programs.size();
  for (const JobFacts& f : facts) s.unreadable += f.error.empty() ? 0 : 1;
  return s;
}

}  // namespace etb::gen
