// SPDX-License-Identifier: MIT
#include "replayer/comm/preflight.h"

#include <sstream>
#include <string>

#include "core/base/error.h"

namespace etb::replay::comm {
namespace {
using trace::CommType;

// One collective as every rank sees it; node_id only names it in messages.
struct Entry {
  uint64_t group = 0;  // index into groups + 1; 0 = world
  uint64_t node_id = 0;
  uint64_t type = 0;
  uint64_t dtype = 0;
  uint64_t elems = 0;  // the size every member must agree on
  uint64_t root = 0;   // group-local root + 1; 0 = none
};
constexpr size_t kWords = 6;

uint64_t hashGroups(const std::vector<GroupSpec>& groups) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over names and ranks
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (const GroupSpec& g : groups) {
    for (char c : g.name) mix(static_cast<unsigned char>(c));
    mix(g.ranks.size());
    for (int64_t r : g.ranks) mix(static_cast<uint64_t>(r));
  }
  return h;
}

// all_to_allv sizes legitimately differ per rank, so only the ones that
// must agree are compared.
uint64_t agreedElems(const Message& m) {
  switch (m.type) {
    case CommType::kAllToAllV:
    case CommType::kBarrier:
      return 0;
    case CommType::kReduceScatter:
    case CommType::kScatter:
      return m.recv_elems;
    default:
      return m.send_elems;
  }
}

std::vector<Entry> entriesOf(const trace::Trace& trace, const std::vector<GroupSpec>& groups,
                             const GroupSpec& world, int rank) {
  std::vector<Entry> out;
  std::vector<bool> seen(trace.comms.size(), false);
  for (const trace::Node& node : trace.nodes) {
    if (node.comm < 0 || static_cast<size_t>(node.comm) >= trace.comms.size()) continue;
    if (seen[static_cast<size_t>(node.comm)]) continue;
    seen[static_cast<size_t>(node.comm)] = true;
    const trace::CommInfo& info = trace.comms[static_cast<size_t>(node.comm)];
    if (!isCollective(info.type)) continue;
    const GroupSpec& g = groupOfCall(trace, info, groups, world);
    const Message m = planMessage(trace, node, info, g, rank, trace::DType::kUnknown);
    Entry e;
    e.group = &g == &world ? 0 : static_cast<uint64_t>(&g - groups.data()) + 1;
    e.node_id = node.id;
    e.type = static_cast<uint64_t>(m.type);
    e.dtype = static_cast<uint64_t>(m.dtype);
    e.elems = agreedElems(m);
    e.root = m.root >= 0 ? static_cast<uint64_t>(m.root) + 1 : 0;
    out.push_back(e);
  }
  return out;
}

// Payload: [status, groups hash, n, entries...] or [status=1, chars...].
std::vector<uint64_t> encodeOk(uint64_t groups_hash, const std::vector<Entry>& entries) {
  std::vector<uint64_t> w = {0, groups_hash, entries.size()};
  for (const Entry& e : entries) {
    w.insert(w.end(), {e.group, e.node_id, e.type, e.dtype, e.elems, e.root});
  }
  return w;
}

std::vector<uint64_t> encodeError(const std::string& msg) {
  std::vector<uint64_t> w = {1};
  for (char c : msg) w.push_back(static_cast<unsigned char>(c));
  return w;
}

std::string describe(const Entry& e) {
  std::ostringstream os;
  os << "node " << e.node_id << " " << trace::commTypeName(static_cast<CommType>(e.type));
  if (e.elems > 0) os << " of " << e.elems << " x " << trace::dtypeName(static_cast<trace::DType>(e.dtype));
  if (e.root > 0) os << " root " << e.root - 1;
  return os.str();
}

std::vector<Entry> sequence(const std::vector<uint64_t>& w, uint64_t group) {
  std::vector<Entry> seq;
  for (size_t i = 0; i < w[2]; ++i) {
    const uint64_t* p = &w[3 + i * kWords];
    if (p[0] == group) seq.push_back(Entry{p[0], p[1], p[2], p[3], p[4], p[5]});
  }
  return seq;
}

bool sameOp(const Entry& a, const Entry& b) {
  return a.type == b.type && a.dtype == b.dtype && a.elems == b.elems && a.root == b.root;
}

// torch 1.13's c10d ops record their process group as an opaque
// "<Object>": with sub-groups in the trace, such a collective is taken as
// the world's, and sub-group calls part the ranks' world sequences.
std::string unrecordedGroupHint(const trace::Trace& trace) {
  if (trace.process_groups.size() < 2) return "";
  for (const trace::CommInfo& c : trace.comms) {
    if (c.pg < 0 && isCollective(c.type)) {
      return " (the trace does not record which process group each collective ran on, as "
             "torch 1.13's c10d ops write it as <Object>, so each is taken as the world's; "
             "a trace with sub-groups needs a recording that names them)";
    }
  }
  return "";
}

void compareGroup(const trace::Trace& trace, const GroupSpec& g, uint64_t key,
                  const std::vector<std::vector<uint64_t>>& all) {
  const int64_t first = g.ranks.front();
  const std::vector<Entry> ref = sequence(all[static_cast<size_t>(first)], key);
  for (size_t k = 1; k < g.ranks.size(); ++k) {
    const int64_t r = g.ranks[k];
    const std::vector<Entry> seq = sequence(all[static_cast<size_t>(r)], key);
    for (size_t i = 0; i < std::max(ref.size(), seq.size()); ++i) {
      if (i < ref.size() && i < seq.size() && sameOp(ref[i], seq[i])) continue;
      SourceLoc loc;
      loc.file = trace.path;
      if (i < seq.size()) loc.node_id = seq[i].node_id;
      ETB_INPUT_ERROR(loc, "pre-flight: process group \"", g.name, "\" collective #", i,
                      " differs: rank ", first, " has ",
                      i < ref.size() ? describe(ref[i]) : "no collective", ", rank ", r,
                      " has ", i < seq.size() ? describe(seq[i]) : "no collective",
                      "; replaying would deadlock", unrecordedGroupHint(trace));
    }
  }
}
}  // namespace

const GroupSpec& groupOfCall(const trace::Trace& trace, const trace::CommInfo& info,
                             const std::vector<GroupSpec>& groups, const GroupSpec& world) {
  if (info.pg < 0 || static_cast<size_t>(info.pg) >= trace.process_groups.size()) return world;
  const std::string& name = trace.process_groups[static_cast<size_t>(info.pg)].name;
  for (const GroupSpec& g : groups) {
    if (g.name == name) return g;
  }
  return world;
}

std::vector<GroupSpec> runPreflight(const trace::Trace& trace, const GroupSpec& world, int rank,
                                    const AllGatherFn& all_gather) {
  std::vector<uint64_t> mine;
  std::vector<GroupSpec> groups;
  try {
    groups = groupsOf(trace, static_cast<int>(world.ranks.size()));
    mine = encodeOk(hashGroups(groups), entriesOf(trace, groups, world, rank));
  } catch (const InputError& e) {
    mine = encodeError(e.what());
  }
  const std::vector<std::vector<uint64_t>> all = all_gather(mine);
  SourceLoc loc;
  loc.file = trace.path;
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r][0] == 0) continue;
    if (static_cast<int>(r) == rank) ETB_INPUT_ERROR(loc, "pre-flight on rank ", r, ": ",
                                                     std::string(mine.begin() + 1, mine.end()));
    std::string msg(all[r].begin() + 1, all[r].end());
    ETB_INPUT_ERROR(loc, "pre-flight failed on rank ", r, ": ", msg);
  }
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r][1] != all[0][1]) {
      ETB_INPUT_ERROR(loc, "pre-flight: rank ", r,
                      " recorded different process groups than rank 0");
    }
  }
  compareGroup(trace, world, 0, all);
  for (size_t i = 0; i < groups.size(); ++i) compareGroup(trace, groups[i], i + 1, all);
  return groups;
}

}  // namespace etb::replay::comm
