// SPDX-License-Identifier: MIT
//
// Autograd's recording in the forward (et_replay --autograd record). The
// original's forward ops ran with grad mode on and parameters that require
// grad, so each of them also built a node of the backward graph (saved
// tensors, version counters, grad_fn): measured with torch 1.13 on one
// thread, an LSTM's forward took 7.2 ms recording and 5.6 ms under no_grad. A
// replay of plain leaves skips that work. With recording on, the forward's
// ops run in grad mode over parameters that require grad, and every other op
// (the backward's, the optimizer's) under no_grad, as the original's did.
#pragma once

#include <cstddef>

#include "core/model/trace.h"
#include "replayer/op_plan.h"

namespace etb::replay::detail {

struct AutogradRecording {
  size_t forward_steps = 0;  // ops run in grad mode
  size_t parameters = 0;     // leaves made to require grad
  // Why nothing was recorded ("" when it was): no backward in the iteration,
  // no parameter found.
  std::string none_because;
};

// Marks the plan's forward steps (PlanStep::grad_mode) and makes its
// parameters require grad. The forward is every compute op before the
// iteration's first backward op (one under an autograd::engine label) that
// is not the optimizer's (under an Optimizer.* label, e.g. zero_grad). A
// parameter is a floating leaf that a forward op reads and an in-place op
// outside the forward updates (argument 0: SGD's add_, Adam's addcdiv_, the
// _foreach_ lists), and no forward op updates in place (a leaf that requires
// grad cannot be). Steps outside the forward run under no_grad.
AutogradRecording planAutogradRecording(const trace::Trace& trace, Plan& plan);

}  // namespace etb::replay::detail
