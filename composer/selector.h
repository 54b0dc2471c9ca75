// SPDX-License-Identifier: MIT
//
// Selection: which part of a trace a composition works on. A selection is a
// list of selectors that must all hold (they intersect); the result keeps
// the selected nodes with their whole subtrees (children run inside their
// parent), plus the non-operator ancestors (labels, ProfilerStep markers,
// roots) so that iterations and scopes survive. Tensors that selected ops
// read but no selected op produces simply become leaves of the new graph,
// which is how et_replay allocates inputs.
#pragma once

#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "core/model/trace.h"

namespace etb::compose {

enum class SelectorKind : uint8_t {
  kOp,       // op:REGEX      operator / collective name (full match)
  kScope,    // scope:REGEX   record_function label or module name (search)
  kPhase,    // phase:forward|backward|optimizer
  kIter,     // iter:N        N-th ProfilerStep (0-based); step:N = ProfilerStep#N
  kStep,
  kIds,      // ids:A-B       node ids in [A, B]
  kCompute,  // compute       operators that are not communication
  kComm,     // comm          collectives, p2p, waits and c10d:: wrappers
};

struct Selector {
  SelectorKind kind = SelectorKind::kOp;
  std::string text;  // as given, for messages
  std::regex pattern;
  int64_t lo = 0, hi = 0;  // iter/step number, or the id range
  std::string phase;
};

// Parses "op:aten::mm", "scope:encoder", "phase:backward", "iter:0",
// "step:13", "ids:100-250", "compute", "comm". Throws InputError naming the
// selector and listing the known kinds.
Selector parseSelector(const std::string& text);

enum class Phase : uint8_t { kNone, kForward, kBackward, kOptimizer };

// The training phase of every node (parallel to t.nodes): from explicit
// "## forward ##" / "## backward ##" / "## optimizer ##" labels when the
// trace has them, else from autograd's "autograd::engine::evaluate_function"
// nodes (backward) and the "Optimizer.step#" / "Optimizer.zero_grad#" labels
// torch.optim records (optimizer); the rest of an iteration is forward.
std::vector<Phase> phasesOf(const trace::Trace& t);

// True for c10d:: ops and record_param_comms, whose subtree is one
// communication call.
bool isCommWrapper(std::string_view name);

// Keeps what the selectors choose (see the file comment). Throws InputError
// when nothing executable is selected, naming the selectors.
trace::Trace selectNodes(const trace::Trace& t, const std::vector<Selector>& selectors);

}  // namespace etb::compose
