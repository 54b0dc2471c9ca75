// SPDX-License-Identifier: MIT
#include "replayer/autograd_record.h"

#include <set>
#include <string_view>

namespace etb::replay::detail {
namespace {

enum class Phase { kForward, kBackward, kOptimizer };

constexpr std::string_view kBackwardLabel = "autograd::engine::evaluate_function";
constexpr std::string_view kOptimizerLabel = "Optimizer.";

// The phase an op ran in, from the nearest such label above it in the call tree.
Phase phaseOf(const trace::Trace& t, const trace::Node& n) {
  const trace::Node* label = t.findUp(n, [&](const trace::Node& p) {
    const std::string_view name = t.str(p.name);
    return name.rfind(kBackwardLabel, 0) == 0 || name.rfind(kOptimizerLabel, 0) == 0;
  });
  if (label == nullptr) return Phase::kForward;
  return t.str(label->name).rfind(kBackwardLabel, 0) == 0 ? Phase::kBackward : Phase::kOptimizer;
}

bool inPlace(const PlanStep& s) { return !s.name.empty() && s.name.back() == '_'; }

const std::vector<int32_t>* firstArgSlots(const PlanStep& s) {
  if (s.args.empty()) return nullptr;
  const ArgSource& a = s.args[0];
  return a.kind == ArgKind::kTensor || a.kind == ArgKind::kTensorList ||
                 a.kind == ArgKind::kOptTensorList
             ? &a.slots
             : nullptr;
}

}  // namespace

AutogradRecording planAutogradRecording(const trace::Trace& trace, Plan& plan) {
  AutogradRecording out;
  // Forward: compute ops before the first backward op, the optimizer's aside.
  std::vector<Phase> phase(plan.steps.size(), Phase::kOptimizer);
  bool backward_seen = false;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& s = plan.steps[i];
    const Phase p = phaseOf(trace, trace.nodes[s.node]);
    backward_seen = backward_seen || p == Phase::kBackward;
    phase[i] = p == Phase::kForward && backward_seen ? Phase::kOptimizer : p;
  }
  if (!backward_seen) {
    out.none_because = "no backward in the iteration";
    return out;
  }
  std::set<int32_t> read_forward, updated_forward, updated_after;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& s = plan.steps[i];
    if (s.is_comm || !s.runnable) continue;
    const std::vector<int32_t>* first = firstArgSlots(s);
    if (phase[i] == Phase::kForward) {
      for (const ArgSource& a : s.args) read_forward.insert(a.slots.begin(), a.slots.end());
      if (inPlace(s) && first) updated_forward.insert(first->begin(), first->end());
    } else if (inPlace(s) && first) {
      updated_after.insert(first->begin(), first->end());
    }
  }
  for (int32_t slot : updated_after) {
    if (slot == kNoSlot || !read_forward.count(slot) || updated_forward.count(slot)) continue;
    const size_t k = static_cast<size_t>(slot);
    if (k >= plan.slots.size() || !plan.is_leaf[k]) continue;
    at::Tensor& t = plan.slots[k];
    if (!t.defined() || !t.is_floating_point() || t.requires_grad()) continue;
    t.requires_grad_(true);
    ++out.parameters;
  }
  if (out.parameters == 0) {
    out.none_because = "no parameter (a leaf the forward reads and the step updates in place)";
    return out;
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    PlanStep& s = plan.steps[i];
    s.grad_mode = phase[i] == Phase::kForward && !s.is_comm && s.overload != "out" ? 1 : 0;
    out.forward_steps += s.grad_mode;
  }
  return out;
}

}  // namespace etb::replay::detail
