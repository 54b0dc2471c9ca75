// SPDX-License-Identifier: MIT
//
// Node kinds and communication info for PyTorch ET: the process-group config
// node, record_param_comms in every positional layout (1.0.1 .. newest) and
// with the 1.1.0 comm attrs, and bare c10d:: collectives (torch 1.13 + gloo
// records no record_param_comms beneath them).
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/pytorch_et/et_comm_util.h"
#include "core/pytorch_et/et_json_detail.h"

namespace etb::trace::detail {
namespace {

constexpr std::string_view kRpc = "record_param_comms";
constexpr std::string_view kBareAllToAll =
    "gloo:all_to_all (torch 1.13's all_to_all_single) records its input only, no output or "
    "split sizes (they differ per rank): counted as a collective, not sized";

bool isRoot(std::string_view name) {
  if (name.rfind("[pytorch|profiler|", 0) != 0) return false;
  return name.size() > 8 && (name.substr(name.size() - 7) == "thread]" ||
                             name.substr(name.size() - 8) == "process]");
}

NodeKind kindOfComm(CommType type) {
  if (type == CommType::kWait) return NodeKind::kWait;
  if (type == CommType::kSend || type == CommType::kRecv) return NodeKind::kPointToPoint;
  return NodeKind::kCollective;
}

class Classifier {
 public:
  Classifier(Trace& t, const ReadOptions& options) : t_(t), options_(options) {}

  void run() {
    bool has_backend = false;
    const StrId backend = t_.strings.find("kernel_backend", &has_backend);
    const StrId triton = t_.strings.find("triton");
    for (Node& n : t_.nodes) {
      const std::string_view name = t_.name(n);
      if (isRoot(name)) {
        n.kind = NodeKind::kRoot;
      } else if (name == kPgInitName) {
        n.kind = NodeKind::kMetadata;
        parseProcessGroups(t_, options_, n, &pg_by_backend_);
      } else if (isProfilerStep(name)) {
        n.kind = NodeKind::kMarker;
      } else if (n.op_schema != 0 && t_.str(n.op_schema).rfind("c10d::", 0) != 0) {
        n.kind = NodeKind::kOperator;
      } else {
        n.kind = NodeKind::kLabel;
        for (const Attr& a : n.attrs) {
          if (has_backend && a.name == backend && a.value.kind == ValueKind::kString &&
              a.value.s == triton && triton != 0) {
            n.kind = NodeKind::kOperator;
          }
        }
      }
    }
    comms();
    pairWaits();
    inferRank(t_, rank_votes_, world_votes_);
  }

 private:
  void comms() {
    // c10d:: nodes that have a record_param_comms below them are labels; the
    // record_param_comms carries the comm.
    std::vector<bool> covered(t_.nodes.size(), false);
    for (size_t i = 0; i < t_.nodes.size(); ++i) {
      if (t_.name(t_.nodes[i]) != kRpc) continue;
      NodeId p = t_.nodes[i].parent;
      for (int depth = 0; depth < 8 && p != 0; ++depth) {
        const size_t k = t_.indexOf(p);
        if (k == t_.nodes.size()) break;
        if (t_.name(t_.nodes[k]).rfind("c10d::", 0) == 0) {
          covered[k] = true;
          break;
        }
        if (t_.nodes[k].parent == p) break;
        p = t_.nodes[k].parent;
      }
    }
    for (size_t i = 0; i < t_.nodes.size(); ++i) {
      Node& n = t_.nodes[i];
      const std::string_view name = t_.name(n);
      CommInfo c;
      if (name == kRpc) {
        c = commFromRecordParamComms(t_, n, pg_by_backend_, &rank_votes_, &world_votes_);
      } else if (name.rfind("c10d::", 0) == 0 && !covered[i]) {
        if (!commFromC10dOp(t_, n, &c)) continue;
      } else if (isBareGlooAllToAll(i)) {
        // Counted as a collective (the replay reports it not replayed),
        // never run: its sizes cannot be told.
        n.kind = NodeKind::kCollective;
        t_.repairs.push_back(Repair{n.id, std::string(kBareAllToAll)});
        continue;
      } else {
        continue;
      }
      n.kind = kindOfComm(c.type);
      n.comm = static_cast<int32_t>(t_.comms.size());
      t_.comms.push_back(std::move(c));
    }
  }

  // torch 1.13 has no c10d op for all_to_all_single (alltoall_base): gloo's
  // profiling label is all the trace holds, with the input and neither the
  // output nor the split sizes, which differ per rank and cannot be inferred.
  bool isBareGlooAllToAll(size_t i) const {
    const Node& n = t_.nodes[i];
    if (t_.name(n) != "gloo:all_to_all" || n.kind != NodeKind::kLabel) return false;
    const auto wrapper = [&](std::string_view name) {
      return name.rfind("c10d::", 0) == 0 || name == kRpc;
    };
    if (i > 0 && wrapper(t_.name(t_.nodes[i - 1]))) return false;
    return t_.findUp(n, [&](const Node& a) { return a.id != n.id && wrapper(t_.name(a)); }) ==
           nullptr;
  }

  // A collective is async when a later wait names its (pg, seq, p2p).
  void pairWaits() {
    std::map<std::tuple<StrId, int64_t, bool>, size_t> by_pg;
    std::map<std::pair<int64_t, bool>, size_t> by_seq;
    for (size_t i = 0; i < t_.comms.size(); ++i) {
      CommInfo& c = t_.comms[i];
      if (c.seq < 0) continue;
      if (c.type != CommType::kWait) {
        by_pg[{c.pg_name, c.seq, c.is_p2p}] = i;
        by_seq[{c.seq, c.is_p2p}] = i;
        continue;
      }
      size_t hit = t_.comms.size();
      if (c.pg_name != 0) {
        auto it = by_pg.find({c.pg_name, c.seq, c.is_p2p});
        if (it != by_pg.end()) hit = it->second;
      } else {
        auto it = by_seq.find({c.seq, c.is_p2p});
        if (it != by_seq.end()) hit = it->second;
      }
      if (hit < t_.comms.size()) t_.comms[hit].is_async = true;
    }
  }

  Trace& t_;
  const ReadOptions& options_;
  std::unordered_map<int64_t, int32_t> pg_by_backend_;
  std::vector<int64_t> rank_votes_;
  std::vector<int64_t> world_votes_;
};

}  // namespace

void classifyNodes(Trace& t, const ReadOptions& options) { Classifier(t, options).run(); }

}  // namespace etb::trace::detail
