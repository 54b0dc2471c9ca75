// SPDX-License-Identifier: MIT
#include "replayer/op_selection.h"

#include <algorithm>
#include <string_view>

#include "core/base/error.h"

namespace etb::replay {
namespace {

bool isCommKind(trace::NodeKind k) {
  return k == trace::NodeKind::kCollective ||
         k == trace::NodeKind::kPointToPoint || k == trace::NodeKind::kWait;
}

// Operators below these run as part of a collective the communicator
// replays; running them again would double the communication.
bool isCommWrapper(std::string_view name) {
  return name.rfind("c10d::", 0) == 0 || name == "record_param_comms";
}

class Selector {
 public:
  Selector(const trace::Trace& t, const trace::Iteration& it)
      : t_(t), it_(it), children_(t.children()) {}

  std::vector<SelectedNode> run() {
    // Iterative DFS: traces can nest thousands deep.
    std::vector<std::pair<uint32_t, bool>> stack;  // (index, under comm)
    for (size_t i = t_.nodes.size(); i-- > 0;) {
      if (isRoot(t_.nodes[i])) stack.emplace_back(static_cast<uint32_t>(i), false);
    }
    while (!stack.empty()) {
      auto [i, under_comm] = stack.back();
      stack.pop_back();
      const trace::Node& n = t_.nodes[i];
      const bool in_range = n.id >= it_.begin && n.id < it_.end;
      if (isCommKind(n.kind)) {
        if (in_range) out_.push_back({i, true});
        // A collective nested in another is a call of its own. Below a
        // c10d:: op that is the collective itself (torch 1.13 + gloo, no
        // record_param_comms), operators are later calls: gloo's record
        // function ends on a worker thread and leaves the op on the calling
        // thread's stack, so what ran next was recorded as its child, on
        // some ranks and not others.
        const bool later_calls = t_.name(n).rfind("c10d::", 0) == 0;
        const auto& kids = children_[i];
        for (size_t k = kids.size(); k-- > 0;) stack.emplace_back(kids[k], !later_calls);
        continue;
      }
      if (n.kind == trace::NodeKind::kOperator && !under_comm &&
          !isCommWrapper(t_.name(n))) {
        if (in_range) {
          out_.push_back({i, false});
          continue;
        }
      }
      if (n.kind == trace::NodeKind::kKernel ||
          n.kind == trace::NodeKind::kMemory) {
        continue;
      }
      const bool comm_below = under_comm || isCommWrapper(t_.name(n));
      const auto& kids = children_[i];
      for (size_t k = kids.size(); k-- > 0;) stack.emplace_back(kids[k], comm_below);
    }
    std::sort(out_.begin(), out_.end(),
              [](const SelectedNode& a, const SelectedNode& b) { return a.index < b.index; });
    return std::move(out_);
  }

 private:
  bool isRoot(const trace::Node& n) const {
    return n.parent == 0 || n.parent == n.id || t_.find(n.parent) == nullptr;
  }

  const trace::Trace& t_;
  const trace::Iteration& it_;
  std::vector<std::vector<uint32_t>> children_;
  std::vector<SelectedNode> out_;
};
}  // namespace

trace::Iteration chooseIteration(const trace::Trace& trace, int k) {
  if (trace.iterations.empty()) {
    if (k != 0) {
      ETB_INPUT_ERROR(SourceLoc{trace.path}, "iteration ", k,
                      " requested but the trace has no ProfilerStep markers");
    }
    trace::Iteration whole;
    whole.begin = 0;
    whole.end = ~trace::NodeId{0};
    whole.name = "whole trace";
    return whole;
  }
  if (k < 0 || static_cast<size_t>(k) >= trace.iterations.size()) {
    ETB_INPUT_ERROR(SourceLoc{trace.path}, "iteration ", k, " out of range: the trace has ",
                    trace.iterations.size(), " iterations");
  }
  return trace.iterations[static_cast<size_t>(k)];
}

std::vector<SelectedNode> selectNodes(const trace::Trace& trace,
                                      const trace::Iteration& it) {
  return Selector(trace, it).run();
}

}  // namespace etb::replay
