// SPDX-License-Identifier: MIT
#include "replayer/executor.h"

#include <c10/core/GradMode.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <string_view>

#include "core/base/log.h"
#include "replayer/cpu_rewrites.h"
#include "replayer/data_rules.h"
#include "replayer/dtype_fallback.h"
#include "replayer/system_metrics.h"

namespace etb::replay::detail {

std::string firstLine(const std::string& text, size_t cap) {
  std::string s = text.substr(0, text.find('\n'));
  return s.size() > cap ? s.substr(0, cap) + "..." : s;
}

std::string shapeText(c10::IntArrayRef xs) {
  std::ostringstream os;
  os << xs;
  return os.str();
}

namespace {
// A float32 fallback result in the dtype the recording gave it.
at::Tensor recordedDtype(const at::Tensor& t, const trace::TensorRef& r) {
  if (!t.defined() || r.dtype == trace::DType::kUnknown) return t;
  const at::ScalarType want = toScalarType(r.dtype);
  return t.scalar_type() == want ? t : t.to(want);
}

// The storage a set_(self, <Storage>) views: the recorded output's own
// extent. Its leaf may share a storage laid out larger for another tensor
// that had the same storage id earlier (the recorder's ids are addresses,
// reused once freed), and set_ takes the whole storage.
c10::Storage storageOf(const at::Tensor& out) {
  const size_t bytes = static_cast<size_t>(out.storage_offset() + out.numel()) * out.element_size();
  if (out.storage().nbytes() == bytes) return out.storage();
  return at::empty({static_cast<int64_t>(bytes)}, out.options().dtype(at::kByte)).storage();
}
}  // namespace

Executor::Executor(const trace::Trace& trace, Plan& plan, Communicator& comm,
                   DeviceSync& sync)
    : trace_(trace), plan_(plan), comm_(comm), sync_(sync),
      comm_counted_(plan.steps.size(), 0) {
  stack_.reserve(32);
}

void Executor::hold(const at::Tensor& t, int delta) {
  if (!t.defined() || !t.has_storage()) return;
  const void* key = t.storage().unsafeGetStorageImpl();
  auto& [count, bytes] = held_[key];
  if (count == 0 && delta > 0) {
    bytes = t.storage().nbytes();
    cur_bytes_ += bytes;
    peak_bytes_ = std::max(peak_bytes_, cur_bytes_);
  }
  count += delta;
  if (count <= 0) {
    cur_bytes_ -= bytes;
    held_.erase(key);
  }
}

int64_t Executor::keepStartState(const PlanOptions& options) {
  std::vector<char> written(plan_.slots.size(), 0);
  const auto mark = [&](int32_t slot) {
    const int32_t leaf = valueLeaf(plan_, slot);
    if (leaf != kNoSlot) written[static_cast<size_t>(leaf)] = 1;
  };
  for (const PlanStep& step : plan_.steps) {
    for (const int32_t slot : step.comm_outputs) mark(slot);
    if (!step.runnable || !step.op) continue;
    const auto& args = step.op->schema().arguments();
    for (size_t i = 0; i < args.size() && i < step.args.size(); ++i) {
      const c10::AliasInfo* alias = args[i].alias_info();
      if (alias == nullptr || !alias->isWrite()) continue;
      for (const int32_t slot : step.args[i].slots) mark(slot);
    }
  }
  int64_t bytes = 0;
  state_slots_.clear();
  for (size_t s = 0; s < written.size(); ++s) {
    const at::Tensor& t = plan_.slots[s];
    if (!written[s] || !t.defined() || t.layout() != at::kStrided || t.numel() == 0) continue;
    state_slots_.push_back(static_cast<int32_t>(s));
    bytes += static_cast<int64_t>(t.numel() * t.element_size());
  }
  state_options_ = options;
  return bytes;
}

void Executor::restoreStartState() {
  if (state_slots_.empty()) return;
  refillLeaves(plan_, *state_options_, state_slots_);
  // A device's draws run on its queue: done before the iteration's clock.
  if (!plan_.device.is_cpu()) sync_.synchronize();
}

void Executor::reserveRecords(size_t n) {
  spare_.reserve(spare_.size() + n);
  const size_t steps = plan_.steps.size();
  for (size_t i = 0; i < n; ++i) {
    IterationRecord rec;
    for (std::vector<double>* v : {&rec.step_us, &rec.step_start, &rec.lead_us, &rec.call_us, &rec.faults}) {
      v->reserve(steps);
    }
    spare_.push_back(std::move(rec));
  }
}

void Executor::recycle(IterationRecord rec) { spare_.push_back(std::move(rec)); }

IterationRecord Executor::runIteration(bool track, ReplayDiagnostics* diag) {
  IterationRecord rec;
  if (!spare_.empty()) {
    rec = std::move(spare_.back());
    spare_.pop_back();
  }
  rec.step_us.resize(plan_.steps.size());
  rec.step_start.resize(plan_.steps.size());
  if (track) {
    held_.clear();
    cur_bytes_ = 0;
    for (size_t s = 0; s < plan_.slots.size(); ++s) {
      if (plan_.is_leaf[s]) hold(plan_.slots[s], 1);
    }
  }
  restoreStartState();
  comm_.resetStats();
  if (device_timing_) sync_.beginTiming(plan_.steps.size());
  const double t0 = nowUs();
  rec.lead_us.resize(plan_.steps.size());
  rec.call_us.assign(plan_.steps.size(), -1.0);
  if (count_faults_) rec.faults.assign(plan_.steps.size(), 0.0);
  double last_end = t0;  // of the previous op call (or step)
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    PlanStep& step = plan_.steps[i];
    if (!host_before_us_.empty()) spinner_.spin(host_before_us_[i]);
    const uint64_t faults0 = count_faults_ ? processMinorFaults() : 0;
    const double start = nowUs();
    call_t0_ = -1;
    // Time blocked on another rank's collective is not the replay's own work
    // between ops (host-time emulation subtracts that work from each gap).
    double waited = 0;
    if ((step.is_comm || step.runnable) && !pending_.empty()) {
      waitForInputs(step);
      waited = nowUs() - start;
    }
    if (step.is_comm) {
      if (step.runnable && comm_enabled_) runComm(step);
    } else if (step.runnable) {
      runOp(step, track, diag);
    } else if (step.synthesise) {
      synthesise(step);
    }
    const double end = nowUs();
    rec.step_start[i] = start - t0;
    rec.step_us[i] = end - start;
    // An op call marks where the replay's own work stops and starts again;
    // any other step (a collective, a no-op) counts as a call as a whole.
    const bool called = call_t0_ >= 0;
    rec.lead_us[i] = called ? std::max(0.0, call_t0_ - last_end - waited) : start - last_end;
    if (called) rec.call_us[i] = call_t1_ - call_t0_;
    last_end = called ? call_t1_ : end;
    for (int32_t slot : step.release) {
      if (track) hold(plan_.slots[static_cast<size_t>(slot)], -1);
      plan_.slots[static_cast<size_t>(slot)].reset();
    }
    if (count_faults_) rec.faults[i] = static_cast<double>(processMinorFaults() - faults0);
  }
  if (!host_before_us_.empty()) spinner_.spin(host_after_us_);
  for (Pending& p : pending_) p.work->wait();
  pending_.clear();
  sync_.synchronize();
  rec.tail_us = nowUs() - last_end;
  rec.wall_us = nowUs() - t0;
  if (device_timing_) rec.device = sync_.endTiming();
  rec.comm = comm_.stats();
  return rec;
}

void Executor::pushArgs(const PlanStep& step) {
  stack_.clear();
  auto slot = [this](int32_t s) {
    return s == kNoSlot ? at::Tensor() : plan_.slots[static_cast<size_t>(s)];
  };
  for (const ArgSource& a : step.args) {
    switch (a.kind) {
      case ArgKind::kConst:
        stack_.push_back(a.value);
        break;
      case ArgKind::kTensor:
        stack_.emplace_back(slot(a.slots[0]));
        break;
      case ArgKind::kTensorList: {
        c10::List<at::Tensor> list;
        list.reserve(a.slots.size());
        for (int32_t s : a.slots) list.push_back(slot(s));
        stack_.emplace_back(std::move(list));
        break;
      }
      case ArgKind::kOptTensorList: {
        c10::List<c10::optional<at::Tensor>> list;
        list.reserve(a.slots.size());
        for (int32_t s : a.slots) {
          if (s == kNoSlot) list.push_back(c10::nullopt);
          else list.push_back(slot(s));
        }
        stack_.emplace_back(std::move(list));
        break;
      }
      case ArgKind::kStorage:
        stack_.emplace_back(storageOf(slot(a.slots[0])));
        break;
    }
  }
  const uint32_t m = maskArgument(step.name);
  if (step.fixed_mask.defined() && stack_.size() > m) {  // index_put_'s list or a mask
    c10::List<c10::optional<at::Tensor>> list;
    list.push_back(step.fixed_mask);
    stack_[m] = stack_[m].isList() ? c10::IValue(std::move(list)) : c10::IValue(step.fixed_mask);
  }
  if (!step.clamp_index) return;
  for (const auto& [arg, size] : step.index_bounds) {
    if (arg < stack_.size() && stack_[arg].isTensor()) {
      stack_[arg] = stack_[arg].toTensor().clamp(0, size - 1);
    }
  }
}

bool Executor::call(PlanStep& step, std::string* error) {
  bool ok = true;
  // The device events bracket the dispatcher call alone, outside its host
  // time (those iterations' host times are not reported anyway).
  const size_t idx = static_cast<size_t>(&step - plan_.steps.data());
  if (device_timing_) sync_.beforeCall(idx);
  call_t0_ = nowUs();
  try {
    std::optional<c10::AutoGradMode> grad;
    if (step.grad_mode >= 0) grad.emplace(step.grad_mode == 1);
    const AutocastScope autocast(step.autocast, plan_.device);
    if (step.fp32) callInFloat32(*step.op, stack_);
    else step.op->callBoxed(stack_);
  } catch (const std::exception& e) {
    *error = e.what();
    ok = false;
  }
  call_t1_ = nowUs();
  if (device_timing_) sync_.afterCall(idx);
  return ok;
}

// An op with no CPU kernel for its recorded Half/BFloat16 runs in float32
// from then on, listed in the coverage with the error that sent it there.
bool Executor::tryFloat32(PlanStep& step, const std::string& error) {
  if (step.fp32 || !plan_.device.is_cpu()) return false;
  pushArgs(step);
  if (!hasReducedFloat(*step.op, stack_)) return false;
  step.fp32 = true;
  std::string ignored;
  if (!call(step, &ignored)) {
    step.fp32 = false;
    return false;
  }
  const trace::Node& n = trace_.nodes[step.node];
  ++plan_.coverage.fallback_fp32;
  plan_.coverage.fallback_ops.push_back({n.id, step.name, firstLine(error)});
  ETB_LOG(kDebug) << "node " << n.id << " " << step.name << ": float32 fallback after "
                  << firstLine(error);
  return true;
}

void Executor::runOp(PlanStep& step, bool track, ReplayDiagnostics* diag) {
  if (step.noop) return;
  pushArgs(step);
  std::string error;
  if (!call(step, &error) && !tryClampIndices(step, error) && !tryFixMask(step, error) &&
      !tryFloat32(step, error)) {
    markFailed(step, error);
    synthesise(step);
    return;
  }
  for (const OutBinding& o : step.outs) {
    if (o.ret >= stack_.size()) continue;
    const c10::IValue& r = stack_[o.ret];
    at::Tensor t;
    if (o.item < 0 && r.isTensor()) t = r.toTensor();
    if (o.item >= 0 && r.isTensorList()) {
      auto list = r.toTensorList();
      if (static_cast<size_t>(o.item) < list.size()) t = list.get(static_cast<size_t>(o.item));
    }
    if (step.fp32) t = recordedDtype(t, trace_.tensors[o.tensor]);
    if (step.pin_shapes) t = pinned(step, o, std::move(t));
    if (step.sparse_nnz >= 0) t = pinnedNnz(step, std::move(t));
    if (track) hold(t, 1);
    plan_.slots[static_cast<size_t>(o.slot)] = std::move(t);
  }
  if (diag != nullptr) verify(step, diag);
  if (track) checkNan(step);
}

void Executor::markFailed(PlanStep& step, const std::string& what) {
  const std::string reason = "error at run: " + firstLine(what);
  const trace::Node& n = trace_.nodes[step.node];
  ETB_LOG(kDebug) << "node " << n.id << " " << step.name << ": " << reason;
  step.runnable = false;
  step.synthesise = true;
  Coverage& c = plan_.coverage;
  c.skipped_by_reason[reason]++;
  c.skipped_ops.push_back({n.id, step.name, reason});
  ++c.skipped;
  --c.replayed;
}

// Outputs of an op that failed at run time, shaped as recorded, zero-filled
// (zero is a valid index and offset for whatever reads them).
void Executor::synthesise(const PlanStep& step) {
  for (const OutBinding& o : step.outs) {
    const trace::TensorRef& r = trace_.tensors[o.tensor];
    plan_.slots[static_cast<size_t>(o.slot)] =
        at::empty_strided(trace_.list(r.shape), recordedStrides(trace_, r),
                          at::TensorOptions()
                              .dtype(toScalarType(r.dtype))
                              .device(plan_.device))
            .zero_();
  }
}

void Executor::runComm(PlanStep& step) {
  const trace::Node& node = trace_.nodes[step.node];
  CommCall call;
  call.trace = &trace_;
  call.node = &node;
  call.info = &trace_.comms[static_cast<size_t>(node.comm)];
  for (int32_t s : step.comm_inputs) call.inputs.push_back(plan_.slots[static_cast<size_t>(s)]);
  for (int32_t s : step.comm_outputs) call.outputs.push_back(plan_.slots[static_cast<size_t>(s)]);
  std::shared_ptr<Work> work = comm_.run(call);
  const trace::CommInfo& info = *call.info;
  if (work) {
    std::vector<int32_t> slots = step.comm_inputs;
    slots.insert(slots.end(), step.comm_outputs.begin(), step.comm_outputs.end());
    pending_.push_back({info.pg, info.seq, std::move(work), std::move(slots), node.id,
                        info.type == trace::CommType::kSend});
  }
  if (info.type == trace::CommType::kWait || node.kind == trace::NodeKind::kWait) {
    // A wait completes the async op with its (group, seq); with no seq
    // recorded, everything still in flight.
    for (size_t i = 0; i < pending_.size();) {
      if (info.seq < 0 || (pending_[i].pg == info.pg && pending_[i].seq == info.seq)) {
        pending_[i].work->wait();
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }
  const size_t idx = static_cast<size_t>(&step - plan_.steps.data());
  if (!comm_counted_[idx]) {
    comm_counted_[idx] = 1;
    ++plan_.coverage.comms_replayed;
  }
}

// An async call completes at its wait node, or before the first step that
// uses one of its tensors or depends on its node, whichever comes first:
// torch 1.13's DDP records no wait (the reducer waits inside the autograd
// engine right before copying the bucket back into the gradients, which the
// trace does show); Chakra's p2p nodes have dependents instead of waits. A
// send does not hold its dependents back: in the graph a send is done once
// posted (the simulators' semantics), and waiting for its peer's receive
// would deadlock a ring whose every rank sends before it receives.
void Executor::waitForInputs(const PlanStep& step) {
  const std::vector<trace::NodeId>& deps = trace_.nodes[step.node].data_deps;
  for (size_t i = 0; i < pending_.size();) {
    const std::vector<int32_t>& mine = pending_[i].slots;
    const auto uses = [&](int32_t s) {
      return s != kNoSlot && std::find(mine.begin(), mine.end(), s) != mine.end();
    };
    bool reads = !pending_[i].send &&
                 std::find(deps.begin(), deps.end(), pending_[i].node) != deps.end();
    for (const ArgSource& a : step.args) {
      for (int32_t s : a.slots) reads = reads || uses(s);
    }
    for (int32_t s : step.comm_inputs) reads = reads || uses(s);
    for (int32_t s : step.comm_outputs) reads = reads || uses(s);
    if (reads) {
      pending_[i].work->wait();
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
}

namespace {
bool holdsNan(const at::Tensor& t) {
  return t.defined() && t.layout() == at::kStrided && t.is_floating_point() && t.numel() > 0 &&
         t.isnan().any().item<bool>();
}

bool allFinite(const at::Tensor& t) {
  return !t.defined() || t.layout() != at::kStrided || !t.is_floating_point() || t.numel() == 0 ||
         t.isfinite().all().item<bool>();
}
}  // namespace

void Executor::checkNan(const PlanStep& step) {
  // Uninitialised memory is whatever it was (a public DLRM trace's
  // aten::empty held NaN in some runs and not in others).
  const std::string_view name = step.name;
  if (name.rfind("aten::empty", 0) == 0 || name.rfind("aten::new_empty", 0) == 0 ||
      name == "aten::resize_" || name == "aten::resize_as_" || name == "aten::set_") {
    return;
  }
  for (const OutBinding& o : step.outs) {
    if (!holdsNan(plan_.slots[static_cast<size_t>(o.slot)])) continue;
    for (const ArgSource& a : step.args) {
      for (const int32_t s : a.slots) {
        if (s != kNoSlot && !allFinite(plan_.slots[static_cast<size_t>(s)])) return;
      }
    }
    Coverage& c = plan_.coverage;
    ++c.nan_outputs;
    c.nan_ops.push_back({trace_.nodes[step.node].id, step.name,
                         "output " + std::to_string(o.ret) + " holds NaN, its inputs are finite"});
    return;
  }
}

void Executor::verify(const PlanStep& step, ReplayDiagnostics* diag) const {
  const trace::Node& n = trace_.nodes[step.node];
  for (const OutBinding& o : step.outs) {
    const at::Tensor& t = plan_.slots[static_cast<size_t>(o.slot)];
    const trace::TensorRef& r = trace_.tensors[o.tensor];
    ++diag->outputs_checked;
    std::string what;
    const auto& shape = trace_.list(r.shape);
    if (!t.defined()) {
      what = "output is undefined";
    } else if (t.sizes() != c10::IntArrayRef(shape)) {
      what = "shape " + shapeText(t.sizes()) + " != recorded " + shapeText(shape);
    } else if (r.dtype != trace::DType::kUnknown && t.scalar_type() != toScalarType(r.dtype)) {
      what = std::string("dtype ") + c10::toString(t.scalar_type()) + " != recorded " +
             std::string(trace::dtypeName(r.dtype));
    } else if (r.has_strides && t.layout() == at::kStrided) {
      // Strides of size-1 (and empty) dims carry no meaning; kernels differ.
      const auto& strides = trace_.list(r.strides);
      for (size_t d = 0; d < shape.size() && d < strides.size() && t.numel() > 0; ++d) {
        if (shape[d] > 1 && t.stride(static_cast<int64_t>(d)) != strides[d]) {
          what = "strides " + shapeText(t.strides()) + " != recorded " + shapeText(strides);
          break;
        }
      }
    }
    if (what.empty()) continue;
    const std::string line = "node " + std::to_string(n.id) + " " + step.name + " output " +
                             std::to_string(o.ret) + ": " + what;
    const std::string recorded(r.has_device ? trace_.str(r.device) : "");
    const bool other_device = !recorded.empty() && t.defined() &&
                              recorded.rfind(t.device().is_cuda() ? "cuda" : "cpu", 0) != 0;
    if (other_device && deviceDependentOutput(step.name, o.ret)) {
      diag->device_dependent.push_back(line + " (recorded on " + recorded + ")");
    } else {
      diag->output_mismatches.push_back(line);
    }
  }
}

}  // namespace etb::replay::detail
