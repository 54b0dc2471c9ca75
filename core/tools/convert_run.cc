// SPDX-License-Identifier: MIT
#include "core/tools/convert_run.h"

#include <filesystem>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/progress.h"
#include "core/chakra/chakra_consumer.h"
#include "core/chakra/chakra_writer.h"
#include "core/kineto/kineto_linker.h"
#include "core/trace_io.h"

namespace etb::tools {
namespace {
namespace fs = std::filesystem;
using trace::Trace;

const char* const kExtensions[] = {".json.gz", ".et.gz", ".json", ".et"};

bool endsWith(const std::string& s, const std::string& e) {
  return s.size() > e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

std::string extensionOf(const std::string& path) {
  for (const char* ext : kExtensions) {
    if (endsWith(path, ext)) return ext;
  }
  return "";
}

bool isChakra(const std::string& path) { return endsWith(path, ".et") || endsWith(path, ".et.gz"); }

// Output path of rank `r` for multi-rank input.
std::string rankOutput(const std::string& out, size_t r) {
  if (out.find("%d") != std::string::npos) return rankFile(out, r);
  const std::string ext = extensionOf(out);
  if (ext.empty()) return out + "." + std::to_string(r) + ".et";
  return out.substr(0, out.size() - ext.size()) + "." + std::to_string(r) + ext;
}

void requireFolder(const std::string& path) {
  const fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !fs::is_directory(dir, ec)) {
    ETB_INPUT_ERROR(SourceLoc{path}, "output folder '", dir.string(),
                    "' does not exist; create it first (et_convert writes files, not folders)");
  }
}

Trace readOne(const std::string& in, const ConvertOptions& o, const std::string& kineto,
              std::ostream& out) {
  trace::ReadOptions options;
  options.strict = o.strict;
  ProgressBar bar = ProgressBar::onTerminal("reading " + in);
  options.progress = bar.callback();
  Trace t = trace::readTrace(in, options);
  bar.finish();
  if (kineto.empty()) return t;
  const trace::LinkStats s = trace::linkKineto(t, kineto);
  const double share = s.operators == 0 ? 0 : static_cast<double>(s.linked_operators) / s.operators;
  std::ostringstream pct;
  pct << std::fixed << std::setprecision(1) << 100 * share << "%";
  // Ids are counters that restart every run: another run's profile hits
  // the same ids on events of other names (the linker leaves those out).
  if (share < o.min_linked_share || s.misnamed * 10 > s.linked_nodes + s.misnamed) {
    ETB_INPUT_ERROR(SourceLoc{kineto}, "profile does not match ", in, " by id: ", s.linked_operators,
                    " of ", s.operators, " operators (", pct.str(), ") link by '", s.key, "', and ",
                    s.misnamed, " ids name an op of another name (a profile of another run, or "
                    "one whose ids do not correspond); not linked");
  }
  out << "linked " << kineto << ": " << s.linked_operators << " of " << s.operators
      << " operators (" << pct.str() << "), " << s.linked_nodes << " nodes timed, " << s.kernels
      << " GPU kernels\n";
  return t;
}

void printReport(const std::string& path, const Trace& t, const trace::ChakraWriteReport& r,
                 std::ostream& out) {
  out << "wrote " << path << " (" << t.nodes.size() << " nodes, " << r.data_deps << " data deps, "
      << r.ready_at_start << " ready at start, " << r.timed_nodes << " with duration_micros, "
      << r.comm_nodes << " comm nodes, " << r.gpu_kernels << " GPU kernels)\n";
  for (const auto& [what, n] : r.remapped) out << "  " << what << ": " << n << " node(s)\n";
  for (const auto& [name, n] : r.dropped) {
    out << "  attr " << name << " not convertible to what simulators read, kept as etb_orig: " << n
        << " node(s)\n";
  }
  if (r.ungrouped > 0) out << "  " << r.ungrouped << " comm node(s) without a recorded group: run on all ranks\n";
}

void writeOut(const Trace& t, const std::string& path, const trace::ChakraWriteOptions& w,
              std::ostream& out) {
  if (!isChakra(path)) {
    trace::writeTrace(t, path);
    out << "wrote " << path << " (" << t.nodes.size() << " nodes)\n";
    return;
  }
  trace::ChakraWriteReport r;
  trace::writeChakra(t, path, w, &r);
  printReport(path, t, r, out);
}
}  // namespace

std::string commGroupPath(const std::string& out) {
  std::string prefix = out;
  const size_t at = prefix.find("%d");
  if (at != std::string::npos) {
    prefix = prefix.substr(0, at);
    while (!prefix.empty() && (prefix.back() == '.' || prefix.back() == '_')) prefix.pop_back();
  } else if (!extensionOf(prefix).empty()) {
    prefix.resize(prefix.size() - extensionOf(prefix).size());
  }
  return prefix + ".comm_group.json";
}

namespace {
// What a per-rank set needs to know before any rank is written: every
// recorded group key (for set-wide ids) and each group's members: the ranks a
// trace records for it, else the ranks (file order = simulator rank) whose
// traces use it.
class GroupTable {
 public:
  void add(const Trace& t, int64_t rank) {
    for (const trace::CommInfo& c : t.comms) {
      const std::string key = trace::chakra::pgKey(t, c);
      keys_.push_back(key);
      if (!key.empty()) used_[key].insert(rank);
    }
    for (const trace::ProcessGroup& pg : t.process_groups) {
      if (!pg.ranks.empty()) recorded_.emplace(pg.name, std::set<int64_t>(pg.ranks.begin(), pg.ranks.end()));
    }
  }
  std::map<std::string, std::string> ids() const { return trace::chakra::assignPgIds(keys_); }
  std::map<std::string, std::set<int64_t>> members() const {
    std::map<std::string, std::set<int64_t>> out = used_;
    for (auto& [key, ranks] : out) {
      const auto it = recorded_.find(key);
      if (it != recorded_.end()) ranks = it->second;
    }
    return out;
  }

 private:
  std::vector<std::string> keys_;
  std::map<std::string, std::set<int64_t>> used_;
  std::map<std::string, std::set<int64_t>> recorded_;
};

std::string groupJson(const std::map<std::string, std::string>& ids,
                      const std::map<std::string, std::set<int64_t>>& members) {
  std::map<int64_t, std::string> by_id;
  for (const auto& [key, id] : ids) {
    std::string ranks;
    for (int64_t r : members.at(key)) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    by_id[std::stoll(id)] = "\"" + id + "\": [" + ranks + "]";
  }
  std::string json = "{";
  for (const auto& [id, entry] : by_id) json += (json.size() > 1 ? ",\n " : "\n ") + entry;
  return json + "\n}\n";
}

void handOff(const ConvertOptions& o, size_t ranks, const std::string& groups, std::ostream& out) {
  const std::string first = rankOutput(o.out, 0);
  out << "ASTRA-sim hand-off: " << ranks << " ranks, files " << first << " .. "
      << rankOutput(o.out, ranks - 1) << "\n";
  if (!endsWith(first, ".0.et")) {
    out << "  note: ASTRA-sim reads <prefix>.<rank>.et (plain, not gzip); give a prefix as output\n";
    return;
  }
  out << "  --workload-configuration=" << first.substr(0, first.size() - 5)
      << " --comm-group-configuration=" << (groups.empty() ? "empty" : groups) << "\n"
      << "  the network configuration's npus_count must multiply to " << ranks << "\n";
  if (ranks < 2) out << "  note: ASTRA-sim refuses a 1-rank simulation\n";
}

int convertSet(const ConvertOptions& o, const std::vector<std::string>& inputs, std::ostream& out) {
  if (!o.kineto.empty() && o.kineto.find("%d") == std::string::npos) {
    ETB_INPUT_ERROR(SourceLoc{o.kineto}, "--kineto for several ranks needs a pattern with %d");
  }
  // Group ids must agree across ranks, so every rank is read before any is
  // written; traces are kept for the second pass while they fit the budget,
  // later ones are read again.
  std::vector<Trace> kept;
  GroupTable groups_seen;
  size_t held = 0;
  auto kinetoOf = [&](size_t r) { return o.kineto.empty() ? std::string() : rankFile(o.kineto, r); };
  for (size_t r = 0; r < inputs.size(); ++r) {
    Trace t = readOne(inputs[r], o, kinetoOf(r), out);
    groups_seen.add(t, static_cast<int64_t>(r));
    held += t.memoryBytes();
    if (held <= o.keep_bytes) kept.push_back(std::move(t));
  }
  trace::ChakraWriteOptions w;
  w.pg_ids = groups_seen.ids();
  for (size_t r = 0; r < inputs.size(); ++r) {
    if (r < kept.size()) {
      writeOut(kept[r], rankOutput(o.out, r), w, out);
      kept[r] = Trace();
    } else {
      std::ostringstream quiet;  // the link was reported in the first pass
      writeOut(readOne(inputs[r], o, kinetoOf(r), quiet), rankOutput(o.out, r), w, out);
    }
  }
  out << "converted " << inputs.size() << " rank(s)\n";
  if (!isChakra(rankOutput(o.out, 0))) return 0;
  std::string groups;
  if (!w.pg_ids.empty()) {
    groups = commGroupPath(o.out);
    writeFileMaybeGzip(groups, groupJson(w.pg_ids, groups_seen.members()));
    out << "wrote " << groups << " (" << w.pg_ids.size() << " communicator group(s))\n";
  }
  handOff(o, inputs.size(), groups, out);
  return 0;
}
}  // namespace

int runConvert(const ConvertOptions& o, std::ostream& out) {
  std::error_code ec;
  const bool multi = o.in.find("%d") != std::string::npos || fs::is_directory(o.in, ec);
  if (extensionOf(o.out).empty() && (!multi || o.out.find("%d") != std::string::npos)) {
    ETB_INPUT_ERROR(SourceLoc{o.out}, "output must end in .json, .json.gz, .et or .et.gz (it picks the format)");
  }
  requireFolder(multi ? rankOutput(o.out, 0) : o.out);
  if (!multi) {
    const Trace t = readOne(o.in, o, o.kineto, out);
    writeOut(t, o.out, {}, out);
    return 0;
  }
  const std::vector<std::string> inputs = trace::expandRankPaths(o.in);
  if (inputs.empty()) ETB_INPUT_ERROR(SourceLoc{o.in}, "no per-rank trace files found");
  return convertSet(o, inputs, out);
}

}  // namespace etb::tools
