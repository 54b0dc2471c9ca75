// SPDX-License-Identifier: MIT
#include "generator/generate.h"

#include <cctype>
#include <filesystem>
#include <regex>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/kineto/kineto_linker.h"
#include "core/trace_io.h"
#include "core/base/file_io.h"
#include "replayer/original_meta.h"
#include "replayer/original_metrics.h"

namespace etb::gen {

std::vector<trace::Trace> readRanks(const std::string& pattern, const std::string& kineto) {
  const std::vector<std::string> paths = trace::expandRankPaths(pattern);
  if (paths.empty()) ETB_INPUT_ERROR(SourceLoc{pattern}, "no trace files found");
  std::vector<std::string> kpaths;
  if (!kineto.empty()) {
    kpaths = trace::expandRankPaths(kineto);
    if (kpaths.size() != 1 && kpaths.size() != paths.size()) {
      ETB_INPUT_ERROR(SourceLoc{kineto}, kpaths.size(), " Kineto traces for ", paths.size(),
                      " ranks");
    }
  }
  return readTraceFiles(paths, kpaths);
}

std::vector<trace::Trace> readTraceFiles(const std::vector<std::string>& paths,
                                         const std::vector<std::string>& kpaths) {
  std::vector<trace::Trace> ranks;
  for (size_t r = 0; r < paths.size(); ++r) {
    ranks.push_back(trace::readTrace(paths[r]));
    if (ranks.back().nodes.empty()) ETB_INPUT_ERROR(SourceLoc{paths[r]}, "the trace has no nodes");
    if (!kpaths.empty()) trace::linkKineto(ranks.back(), kpaths[kpaths.size() == 1 ? 0 : r]);
  }
  return ranks;
}

std::string benchName(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  static const std::regex suffix(R"((\.gz|\.json|\.et|\.pb|\.chakra|_et|\.rank%?d|\.%d|\.[0-9]+|\.rank[0-9]+)$)");
  for (std::string prev; prev != name;) {
    prev = name;
    name = std::regex_replace(name, suffix, "");
  }
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return out.empty() ? "bench" : out;
}

void attachOriginalMeta(const std::string& meta_path, int ranks, ProgramInfo& info) {
  info.original_meta = meta_path;
  info.original_ms.clear();
  for (int r = 0; r < ranks; ++r) {
    replay::ReplayOptions o;
    replay::useOriginalMeta(meta_path, o, r);
    info.original_ms.push_back(o.original_ms);
    info.threads = o.threads;
  }
}

void attachOriginalMetrics(const std::vector<trace::Trace>& ranks, const std::string& pattern,
                           ProgramInfo& info) {
  info.original_metrics.clear();
  for (size_t r = 0; r < ranks.size(); ++r) {
    std::string path = rankFile(pattern, r);
    if (path.empty()) path = replay::metricsBesideTrace(ranks[r].path);
    if (path.empty()) {
      info.original_metrics.clear();  // all ranks or none
      return;
    }
    std::string text = readFileMaybeGzip(path);
    replay::parseOriginalMetrics(text, path);  // refused now, not when the program runs
    info.original_metrics.emplace_back(std::move(text), path);
  }
}

std::string metaBeside(const std::string& trace_path, const std::string& job_name) {
  const std::filesystem::path p = std::filesystem::path(trace_path).parent_path() / (job_name + ".meta.json");
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) ? p.string() : "";
}

ProgramInfo generateProgram(const GenerateOptions& options) {
  const std::vector<trace::Trace> ranks = readRanks(options.trace, options.kineto);
  ProgramInfo info;
  info.name = benchName(options.trace);
  info.source = options.trace;
  info.iteration = options.iteration;
  info.kineto = !options.kineto.empty();
  if (!options.original_meta.empty()) {
    attachOriginalMeta(options.original_meta, static_cast<int>(ranks.size()), info);
  }
  attachOriginalMetrics(ranks, options.original_metrics, info);
  info = writeProgram(ranks, info, options.out_dir, options.emit);
  ETB_LOG(kInfo) << "wrote " << options.out_dir << ": " << info.ranks << " rank(s), " << info.ops
                 << " nodes in " << info.files << " translation units";
  return info;
}

}  // namespace etb::gen
