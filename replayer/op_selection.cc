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

// What a node lies below, for its descendants: nothing selected; a
// collective wrapper (its operators are the communicator's); or a selected
// operator (its operators run inside it). Collectives are selected under
// any of them: torch 1.13's gloo record functions end on a worker thread and
// leave the op on the calling thread's stack, so a later collective (and the
// ops after it) can be recorded as the child of an earlier collective or of
// any op, on some ranks and not others. Below a c10d:: op that is the
// collective itself (no record_param_comms), operators are such later calls.
enum class Below : uint8_t { kNothing, kComm, kOp };

class Selector {
 public:
  Selector(const trace::Trace& t, const trace::Iteration& it)
      : t_(t), it_(it), children_(t.children()) {}

  std::vector<SelectedNode> run() {
    // Iterative DFS: traces can nest thousands deep.
    std::vector<std::pair<uint32_t, Below>> stack;
    for (size_t i = t_.nodes.size(); i-- > 0;) {
      if (isRoot(t_.nodes[i])) stack.emplace_back(static_cast<uint32_t>(i), Below::kNothing);
    }
    while (!stack.empty()) {
      auto [i, below] = stack.back();
      stack.pop_back();
      const trace::Node& n = t_.nodes[i];
      const bool in_range = n.id >= it_.begin && n.id < it_.end;
      Below next = below;
      if (isCommKind(n.kind)) {
        if (in_range) out_.push_back({i, true});
        const bool c10d = t_.name(n).rfind("c10d::", 0) == 0;
        next = c10d && below != Below::kOp ? Below::kNothing : std::max(below, Below::kComm);
      } else if (n.kind == trace::NodeKind::kOperator && below == Below::kNothing &&
                 !isCommWrapper(t_.name(n)) && in_range) {
        out_.push_back({i, false});
        next = Below::kOp;
      } else if (n.kind == trace::NodeKind::kKernel || n.kind == trace::NodeKind::kMemory) {
        continue;
      } else if (isCommWrapper(t_.name(n))) {
        next = std::max(below, Below::kComm);
      }
      const auto& kids = children_[i];
      for (size_t k = kids.size(); k-- > 0;) stack.emplace_back(kids[k], next);
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
