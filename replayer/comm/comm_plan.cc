// SPDX-License-Identifier: MIT
#include "replayer/comm/comm_plan.h"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace etb::replay::comm {
namespace {
using trace::CommType;

bool isDecimal(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isdigit(c) != 0;
  });
}

// Process groups are created in this order on every rank; a different order
// on two ranks is the classic multi-group deadlock (see PARAM's pg_sync).
bool groupLess(const GroupSpec& a, const GroupSpec& b) {
  const bool da = isDecimal(a.name), db = isDecimal(b.name);
  if (da && db && a.name.size() != b.name.size()) return a.name.size() < b.name.size();
  if (da != db) return da;
  return a.name < b.name;
}

// Maps a recorded rank (global when the reader mapped it, else group-local)
// to the group-local rank.
int localRank(const trace::Trace& trace, const trace::Node& node,
              const GroupSpec& group, int64_t recorded, const char* what) {
  auto it = std::find(group.ranks.begin(), group.ranks.end(), recorded);
  if (it != group.ranks.end()) return static_cast<int>(it - group.ranks.begin());
  ETB_INPUT_ERROR(locOf(trace, node), what, " ", recorded, " is not a member of process group \"",
                  group.name, "\" (", group.ranks.size(), " ranks)");
}

uint64_t perRank(uint64_t total, int n) { return n > 0 ? total / static_cast<uint64_t>(n) : total; }

void planAllToAllV(const trace::Trace& trace, const trace::Node& node,
                   const trace::CommInfo& info, Message* m) {
  const auto n = static_cast<size_t>(m->group_size);
  const bool have = !info.in_splits.empty() || !info.out_splits.empty();
  if (!have) {  // equal splits: all_to_all_single without split sizes
    m->type = CommType::kAllToAll;
    return;
  }
  std::vector<int64_t> in = info.in_splits, out = info.out_splits;
  if (in.empty()) in = out;
  if (out.empty()) out = in;
  if (in.size() != n || out.size() != n) {
    ETB_INPUT_ERROR(locOf(trace, node), "all_to_allv has ", in.size(), " input and ",
                    out.size(), " output splits for a group of ", n, " ranks");
  }
  const int64_t in_rows = std::accumulate(in.begin(), in.end(), int64_t{0});
  const int64_t out_rows = std::accumulate(out.begin(), out.end(), int64_t{0});
  // Splits count rows along dim 0; a row holds in_elems / rows elements.
  uint64_t row = 1;
  if (in_rows > 0 && info.in_elems > 0) row = info.in_elems / static_cast<uint64_t>(in_rows);
  else if (out_rows > 0 && info.out_elems > 0) row = info.out_elems / static_cast<uint64_t>(out_rows);
  row = std::max<uint64_t>(row, 1);
  uint64_t sd = 0, rd = 0;
  for (size_t i = 0; i < n; ++i) {
    if (in[i] < 0 || out[i] < 0) {
      ETB_INPUT_ERROR(locOf(trace, node), "all_to_allv has a negative split size");
    }
    m->send_counts.push_back(static_cast<uint64_t>(in[i]) * row);
    m->recv_counts.push_back(static_cast<uint64_t>(out[i]) * row);
    m->send_displs.push_back(sd);
    m->recv_displs.push_back(rd);
    sd += m->send_counts.back();
    rd += m->recv_counts.back();
  }
  m->send_elems = sd;
  m->recv_elems = rd;
}

// Element counts and nccl-tests size/factor per collective type.
void planSizes(const trace::Trace& trace, const trace::Node& node,
               const trace::CommInfo& info, Message* m) {
  const int n = m->group_size;
  const double nd = n;
  const double ring = n > 1 ? (nd - 1) / nd : 0;
  uint64_t in = info.in_elems, out = info.out_elems;
  if (in == 0 && out == 0 && info.bytes > 0) in = out = info.bytes / static_cast<uint64_t>(m->elem_size);
  switch (m->type) {
    case CommType::kAllReduce:
    case CommType::kBroadcast:
    case CommType::kReduce:
      m->send_elems = m->recv_elems = std::max(in, out);
      m->in_place = true;
      m->algo_bytes = m->send_elems;
      m->busbw_factor = m->type == CommType::kAllReduce ? 2 * ring : 1;
      break;
    case CommType::kAllGather:
      m->send_elems = in > 0 ? in : perRank(out, n);
      m->recv_elems = m->send_elems * static_cast<uint64_t>(n);
      m->algo_bytes = m->recv_elems;
      m->busbw_factor = ring;
      break;
    case CommType::kReduceScatter:
      m->recv_elems = out > 0 ? out : perRank(in, n);
      m->send_elems = m->recv_elems * static_cast<uint64_t>(n);
      m->algo_bytes = m->send_elems;
      m->busbw_factor = ring;
      break;
    case CommType::kAllToAllV:
      planAllToAllV(trace, node, info, m);
      if (m->type == CommType::kAllToAllV) {
        m->algo_bytes = std::max(m->send_elems, m->recv_elems);
        m->busbw_factor = ring;
        break;
      }
      [[fallthrough]];
    case CommType::kAllToAll:
      m->send_elems = perRank(std::max(in, out), n) * static_cast<uint64_t>(n);
      m->recv_elems = m->send_elems;
      m->algo_bytes = m->send_elems;
      m->busbw_factor = ring;
      break;
    case CommType::kGather:
      m->send_elems = in > 0 ? in : perRank(out, n);
      m->recv_elems = m->my_rank == m->root ? m->send_elems * static_cast<uint64_t>(n) : 0;
      m->algo_bytes = m->send_elems * static_cast<uint64_t>(n);
      m->busbw_factor = ring;
      break;
    case CommType::kScatter:
      m->recv_elems = out > 0 ? out : perRank(in, n);
      m->send_elems = m->my_rank == m->root ? m->recv_elems * static_cast<uint64_t>(n) : 0;
      m->algo_bytes = m->recv_elems * static_cast<uint64_t>(n);
      m->busbw_factor = ring;
      break;
    case CommType::kSend:
      m->send_elems = in > 0 ? in : out;
      m->algo_bytes = m->send_elems;
      m->busbw_factor = 1;
      break;
    case CommType::kRecv:
      m->recv_elems = out > 0 ? out : in;
      m->algo_bytes = m->recv_elems;
      m->busbw_factor = 1;
      break;
    default:
      break;  // barrier, wait, init: no payload
  }
  m->algo_bytes *= static_cast<uint64_t>(m->elem_size);
}
}  // namespace

SourceLoc locOf(const trace::Trace& trace, const trace::Node& node) {
  SourceLoc loc;
  loc.file = trace.path;
  loc.node_id = node.id;
  loc.node_name = std::string(trace.name(node));
  return loc;
}

bool isDataCall(CommType type) {
  return type != CommType::kUnknown && type != CommType::kWait && type != CommType::kInit;
}

bool isCollective(CommType type) {
  return isDataCall(type) && type != CommType::kSend && type != CommType::kRecv;
}

namespace {
// The ranks a trace's process groups name: one beyond the highest.
int64_t spanOf(const trace::Trace& trace) {
  int64_t span = 0;
  for (const trace::ProcessGroup& pg : trace.process_groups) {
    span = std::max(span, pg.size);
    for (int64_t r : pg.ranks) span = std::max(span, r + 1);
  }
  return span;
}
}  // namespace

std::vector<GroupSpec> groupsOf(const trace::Trace& trace, int world_size) {
  std::vector<GroupSpec> groups;
  for (const trace::ProcessGroup& pg : trace.process_groups) {
    GroupSpec g;
    g.name = pg.name;
    g.ranks = pg.ranks;
    if (g.ranks.empty()) {
      const int64_t size = pg.size > 0 ? pg.size : world_size;
      for (int64_t r = 0; r < size; ++r) g.ranks.push_back(r);
    }
    for (int64_t r : g.ranks) {
      if (r < 0 || r >= world_size) {
        SourceLoc loc;
        loc.file = trace.path;
        ETB_INPUT_ERROR(loc, "process group \"", g.name, "\" names rank ", r, " but the job has ",
                        world_size, " ranks (world size mismatch; its groups span ", spanOf(trace),
                        " ranks: et_replay under mpirun -np ", spanOf(trace), ", et_predict --world-size ",
                        spanOf(trace), ")");
      }
    }
    g.is_world = static_cast<int>(g.ranks.size()) == world_size &&
                 std::is_sorted(g.ranks.begin(), g.ranks.end());
    groups.push_back(std::move(g));
  }
  std::stable_sort(groups.begin(), groups.end(), groupLess);
  return groups;
}

Message planMessage(const trace::Trace& trace, const trace::Node& node,
                    const trace::CommInfo& info, const GroupSpec& group, int rank,
                    trace::DType fallback_dtype) {
  Message m;
  m.type = info.type;
  m.op = info.reduce_op;
  m.dtype = info.dtype != trace::DType::kUnknown ? info.dtype : fallback_dtype;
  if (m.dtype == trace::DType::kUnknown) m.dtype = trace::DType::kFloat;
  m.elem_size = trace::dtypeSize(m.dtype);
  m.group_size = static_cast<int>(group.ranks.size());
  m.my_rank = localRank(trace, node, group, rank, "this rank");
  const bool rooted = m.type == CommType::kBroadcast || m.type == CommType::kReduce ||
                      m.type == CommType::kGather || m.type == CommType::kScatter;
  if (rooted) m.root = info.root >= 0 ? localRank(trace, node, group, info.root, "root") : 0;
  if (m.type == CommType::kSend || m.type == CommType::kRecv) {
    if (info.peer < 0) {
      ETB_INPUT_ERROR(locOf(trace, node), commTypeName(m.type), " without a recorded peer");
    }
    m.peer = localRank(trace, node, group, info.peer, "peer");
  }
  planSizes(trace, node, info, &m);
  return m;
}

}  // namespace etb::replay::comm
