// SPDX-License-Identifier: MIT
#include "core/tools/trace_summary.h"

#include <algorithm>
#include <array>
#include <iomanip>
#include <string_view>
#include <unordered_map>

namespace etb::trace {
namespace {

constexpr size_t kNodeKinds = static_cast<size_t>(NodeKind::kMemory) + 1;
constexpr size_t kCommTypes = static_cast<size_t>(CommType::kInit) + 1;

std::string_view formatName(SourceFormat f) {
  switch (f) {
    case SourceFormat::kPyTorchEtJson: return "pytorch-et-json";
    case SourceFormat::kChakraProtobuf: return "chakra-protobuf";
    default: return "unknown";
  }
}

// A collective's size: what the reader recorded, else elements x dtype size
// of the larger side (all_gather's output, reduce_scatter's input).
uint64_t commBytes(const CommInfo& c) {
  if (c.bytes > 0) return c.bytes;
  return std::max(c.in_elems, c.out_elems) *
         static_cast<uint64_t>(dtypeSize(c.dtype));
}

std::vector<OpStat> collectOps(const Trace& trace, size_t* timed) {
  std::unordered_map<StrId, OpStat> by_name;
  for (const Node& n : trace.nodes) {
    if (n.kind != NodeKind::kOperator) continue;
    OpStat& s = by_name[n.name];
    ++s.count;
    if (n.dur_us >= 0) {
      ++s.timed;
      ++*timed;
      s.total_us += n.dur_us;
    }
    if (n.gpu_dur_us > 0) s.gpu_us += n.gpu_dur_us;
  }
  std::vector<OpStat> ops;
  ops.reserve(by_name.size());
  for (auto& [id, s] : by_name) {
    s.name = std::string(trace.str(id));
    ops.push_back(std::move(s));
  }
  return ops;
}

// The first `n` of `ops` ordered by `key` (descending), ties by name so the
// output is stable across runs.
template <typename Key>
std::vector<OpStat> topBy(std::vector<OpStat> ops, size_t n, Key key) {
  std::sort(ops.begin(), ops.end(), [&](const OpStat& a, const OpStat& b) {
    if (key(a) != key(b)) return key(a) > key(b);
    return a.name < b.name;
  });
  if (ops.size() > n) ops.resize(n);
  return ops;
}

std::vector<CollectiveStat> collectComms(const Trace& trace) {
  std::array<CollectiveStat, kCommTypes> stats{};
  for (const Node& n : trace.nodes) {
    if (n.comm < 0 || static_cast<size_t>(n.comm) >= trace.comms.size()) continue;
    const CommInfo& c = trace.comms[n.comm];
    CollectiveStat& s = stats[static_cast<size_t>(c.type)];
    ++s.count;
    s.bytes += commBytes(c);
  }
  std::vector<CollectiveStat> out;
  for (size_t i = 0; i < kCommTypes; ++i) {
    if (stats[i].count == 0) continue;
    stats[i].type = std::string(commTypeName(static_cast<CommType>(i)));
    out.push_back(stats[i]);
  }
  return out;
}

std::vector<IterationStat> collectIterations(const Trace& trace) {
  std::vector<IterationStat> out;
  for (const Iteration& it : trace.iterations) {
    IterationStat s;
    s.name = it.name;
    s.marker = it.marker;
    s.dur_us = it.dur_us;
    // Nodes are sorted by id, so the range is two binary searches.
    auto lo = std::lower_bound(
        trace.nodes.begin(), trace.nodes.end(), it.begin,
        [](const Node& n, NodeId id) { return n.id < id; });
    auto hi = std::lower_bound(
        lo, trace.nodes.end(), it.end,
        [](const Node& n, NodeId id) { return n.id < id; });
    s.nodes = static_cast<size_t>(hi - lo);
    out.push_back(std::move(s));
  }
  return out;
}

nlohmann::json opsToJson(const std::vector<OpStat>& ops) {
  nlohmann::json out = nlohmann::json::array();
  for (const OpStat& s : ops) {
    nlohmann::json j = {{"name", s.name}, {"count", s.count}};
    if (s.timed > 0) {
      j["timed"] = s.timed;
      j["total_us"] = s.total_us;
      j["gpu_us"] = s.gpu_us;
    }
    out.push_back(std::move(j));
  }
  return out;
}

std::string ranksText(const std::vector<int64_t>& ranks) {
  if (ranks.empty()) return "-";
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i == 8 && ranks.size() > 10) {
      out += ",... (" + std::to_string(ranks.size()) + ")";
      break;
    }
    out += (i ? "," : "") + std::to_string(ranks[i]);
  }
  return out;
}

void printOps(const std::vector<OpStat>& ops, bool timed, std::ostream& os) {
  for (const OpStat& s : ops) {
    os << "  " << std::setw(8) << s.count;
    if (timed) {
      os << std::setw(14) << std::fixed << std::setprecision(1) << s.total_us
         << " us";
    }
    os << "  " << s.name << "\n";
  }
}

void printHeader(const TraceSummary& s, std::ostream& os) {
  auto known = [](int64_t v) { return v < 0 ? std::string("?") : std::to_string(v); };
  os << "file:       " << s.path << "\n"
     << "format:     " << s.format << "\n"
     << "schema:     " << (s.schema.empty() ? "-" : s.schema) << "\n"
     << "rank:       " << known(s.rank) << " of " << known(s.world_size) << "\n"
     << "nodes:      " << s.nodes << " (";
  for (size_t i = 0; i < s.nodes_by_kind.size(); ++i) {
    os << (i ? ", " : "") << s.nodes_by_kind[i].first << " " << s.nodes_by_kind[i].second;
  }
  os << ")\n"
     << "operators:  " << s.operators << " calls, " << s.distinct_operators
     << " distinct\n";
  if (s.timed_operators > 0) {
    os << "linked:     " << s.timed_operators << " of " << s.operators
       << " operators timed (" << std::fixed << std::setprecision(1)
       << s.linkedPercent() << "%), " << s.kernels << " GPU kernels";
    if (s.kernels > 0) os << " (" << std::setprecision(1) << s.kernel_us << " us)";
    os << "\n";
  }
}

// Collectives, process groups and iterations.
void printGroups(const TraceSummary& s, std::ostream& os) {
  os << "\n# collectives\n";
  if (s.collectives.empty()) os << "  none\n";
  for (const CollectiveStat& c : s.collectives) {
    os << "  " << std::left << std::setw(16) << c.type << std::right << std::setw(8)
       << c.count << " calls " << std::setw(14) << c.bytes << " bytes\n";
  }
  os << "\n# process groups\n";
  if (s.process_groups.empty()) os << "  none\n";
  for (const ProcessGroup& pg : s.process_groups) {
    os << "  " << pg.name << "  " << (pg.desc.empty() ? "-" : pg.desc) << "  size "
       << pg.size << "  ranks " << ranksText(pg.ranks) << "\n";
  }
  os << "\n# iterations\n";
  if (s.iterations.empty()) os << "  none marked\n";
  // A long capture has hundreds of steps: the text lists the first few, the
  // JSON all of them.
  constexpr size_t kMaxIterations = 10;
  for (size_t i = 0; i < s.iterations.size(); ++i) {
    const IterationStat& it = s.iterations[i];
    if (i == kMaxIterations) {
      os << "  ... " << (s.iterations.size() - i) << " more\n";
      break;
    }
    os << "  " << (it.name.empty() ? "-" : it.name) << "  " << it.nodes << " nodes";
    if (it.dur_us >= 0) os << "  " << std::fixed << std::setprecision(1) << it.dur_us << " us";
    os << "\n";
  }
}

void printRepairs(const TraceSummary& s, std::ostream& os) {
  os << "\n# repairs: " << s.repair_count << "\n";
  for (const Repair& r : s.first_repairs) {
    os << "  ";
    if (r.node_id != 0) os << "node " << r.node_id << ": ";
    os << r.what << "\n";
  }
  if (s.repair_count > s.first_repairs.size()) {
    os << "  ... " << (s.repair_count - s.first_repairs.size()) << " more\n";
  }
}
}  // namespace

double TraceSummary::linkedPercent() const {
  return operators == 0 ? 0.0 : 100.0 * timed_operators / operators;
}

TraceSummary summarizeTrace(const Trace& trace, size_t top_n,
                            size_t max_repairs) {
  TraceSummary s;
  s.path = trace.path;
  s.format = std::string(formatName(trace.format));
  s.schema = trace.schema;
  s.rank = trace.rank;
  s.world_size = trace.world_size;
  s.nodes = trace.nodes.size();
  std::array<size_t, kNodeKinds> kinds{};
  for (const Node& n : trace.nodes) ++kinds[static_cast<size_t>(n.kind)];
  for (size_t k = 0; k < kNodeKinds; ++k) {
    if (kinds[k] == 0) continue;
    s.nodes_by_kind.emplace_back(
        std::string(nodeKindName(static_cast<NodeKind>(k))), kinds[k]);
  }
  s.operators = kinds[static_cast<size_t>(NodeKind::kOperator)];
  std::vector<OpStat> ops = collectOps(trace, &s.timed_operators);
  s.distinct_operators = ops.size();
  s.kernels = trace.kernels.size();
  for (const KernelEvent& k : trace.kernels) s.kernel_us += k.dur_us;
  for (const Node& n : trace.nodes) s.node_gpu_us += n.gpu_dur_us > 0 ? n.gpu_dur_us : 0;
  if (s.timed_operators > 0) {
    s.top_by_time = topBy(ops, top_n, [](const OpStat& o) { return o.total_us; });
  }
  s.top_by_count = topBy(std::move(ops), top_n,
                         [](const OpStat& o) { return static_cast<double>(o.count); });
  s.collectives = collectComms(trace);
  s.process_groups = trace.process_groups;
  s.iterations = collectIterations(trace);
  s.repair_count = trace.repairs.size();
  const size_t shown = std::min(max_repairs, trace.repairs.size());
  s.first_repairs.assign(trace.repairs.begin(), trace.repairs.begin() + shown);
  return s;
}

nlohmann::json summaryToJson(const TraceSummary& s) {
  nlohmann::json j;
  j["path"] = s.path;
  j["format"] = s.format;
  j["schema"] = s.schema;
  j["rank"] = s.rank;
  j["world_size"] = s.world_size;
  j["nodes"] = s.nodes;
  j["nodes_by_kind"] = nlohmann::json::object();
  for (const auto& [kind, count] : s.nodes_by_kind) j["nodes_by_kind"][kind] = count;
  j["operators"] = s.operators;
  j["distinct_operators"] = s.distinct_operators;
  j["timed_operators"] = s.timed_operators;
  j["linked_percent"] = s.linkedPercent();
  j["kernels"] = s.kernels;
  j["kernel_us"] = s.kernel_us;
  j["node_gpu_us"] = s.node_gpu_us;
  j["top_operators_by_count"] = opsToJson(s.top_by_count);
  j["top_operators_by_time"] = opsToJson(s.top_by_time);
  j["collectives"] = nlohmann::json::array();
  for (const CollectiveStat& c : s.collectives) {
    j["collectives"].push_back({{"type", c.type}, {"count", c.count}, {"bytes", c.bytes}});
  }
  j["process_groups"] = nlohmann::json::array();
  for (const ProcessGroup& pg : s.process_groups) {
    j["process_groups"].push_back({{"name", pg.name}, {"desc", pg.desc},
                                   {"backend", pg.backend}, {"size", pg.size},
                                   {"ranks", pg.ranks}});
  }
  j["iterations"] = nlohmann::json::array();
  for (const IterationStat& it : s.iterations) {
    nlohmann::json ij = {{"name", it.name}, {"marker", it.marker}, {"nodes", it.nodes}};
    if (it.dur_us >= 0) ij["dur_us"] = it.dur_us;
    j["iterations"].push_back(std::move(ij));
  }
  j["repairs"] = {{"count", s.repair_count}, {"first", nlohmann::json::array()}};
  for (const Repair& r : s.first_repairs) {
    j["repairs"]["first"].push_back({{"node_id", r.node_id}, {"what", r.what}});
  }
  return j;
}

void printSummary(const TraceSummary& s, std::ostream& os) {
  printHeader(s, os);
  os << "\n# top operators by count\n";
  printOps(s.top_by_count, false, os);
  if (!s.top_by_time.empty()) {
    os << "\n# top operators by time (inclusive)\n";
    printOps(s.top_by_time, true, os);
  }
  printGroups(s, os);
  printRepairs(s, os);
}

}  // namespace etb::trace
