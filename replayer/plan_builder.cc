// SPDX-License-Identifier: MIT
// buildPlan(): operator resolution, argument decoding and slot assignment.
#include <unordered_map>

#include "core/base/error.h"
#include "replayer/arg_decoder.h"
#include "replayer/compat_ops.h"
#include "replayer/cpu_rewrites.h"
#include "replayer/data_rules.h"
#include "replayer/dtype_fallback.h"
#include "replayer/index_rules.h"
#include "replayer/op_plan.h"
#include "replayer/packed_params.h"

namespace etb::replay::detail {
namespace {

// A recorded tensor's replay identity. tensor_id alone is not enough: the
// observer reuses ids when TensorImpl addresses are reused, so the storage
// placement, shape and strides are part of it.
struct TensorKey {
  uint64_t tensor_id, storage_id, offset;
  trace::ListId shape, strides;
  trace::DType dtype;
  bool operator==(const TensorKey& o) const {
    return tensor_id == o.tensor_id && storage_id == o.storage_id && offset == o.offset &&
           shape == o.shape && strides == o.strides && dtype == o.dtype;
  }
};
struct KeyHash {
  size_t operator()(const TensorKey& k) const {
    size_t h = std::hash<uint64_t>()(k.tensor_id);
    h = h * 31 + std::hash<uint64_t>()(k.storage_id);
    h = h * 31 + std::hash<uint64_t>()(k.offset);
    return h * 31 + k.shape * 7 + k.strides;
  }
};

// " (needs fbgemm)" for an op of a library this build does not load, so a
// reader sees which ops a richer build would replay.
std::string libraryNote(const std::string& name) {
  const std::string ns = name.substr(0, name.find("::"));
  if (ns == name || ns == "aten" || ns == "prim") return "";
  return " (needs " + ns + ")";
}

class PlanBuilder {
 public:
  PlanBuilder(const trace::Trace& t, const PlanOptions& o)
      : t_(t), o_(o), children_(t.children()) {}

  Plan build(const std::vector<SelectedNode>& nodes) {
    for (const SelectedNode& s : nodes) {
      PlanStep step;
      step.node = s.index;
      step.is_comm = s.is_comm;
      step.name = std::string(t_.name(t_.nodes[s.index]));
      if (s.is_comm) {
        addComm(step);
      } else {
        addOp(step);
      }
      plan_.steps.push_back(std::move(step));
    }
    computeReleases();
    return std::move(plan_);
  }

 private:
  TensorKey keyOf(uint32_t tensor) const {
    const trace::TensorRef& r = t_.tensors[tensor];
    return {r.tensor_id, r.storage_id, r.offset, r.shape, r.strides, r.dtype};
  }

  int32_t newSlot(uint32_t tensor, bool leaf) {
    plan_.slots.emplace_back();
    plan_.is_leaf.push_back(leaf ? 1 : 0);
    plan_.slot_tensor.push_back(tensor);
    return static_cast<int32_t>(plan_.slots.size() - 1);
  }

  // An input is the latest output with its identity, else a leaf.
  int32_t inputSlot(uint32_t tensor) {
    const TensorKey key = keyOf(tensor);
    if (auto it = produced_.find(key); it != produced_.end()) return it->second;
    if (auto it = leaves_.find(key); it != leaves_.end()) return it->second;
    const int32_t slot = newSlot(tensor, true);
    leaves_.emplace(key, slot);
    return slot;
  }

  void addComm(PlanStep& step) {
    const trace::Node& n = t_.nodes[step.node];
    step.runnable = n.comm >= 0;
    ++plan_.coverage.comms;
    // Collective outputs are bound like inputs: the communicator writes into
    // the tensors that later ops read.
    auto bind = [&](const std::vector<trace::Value>& values, std::vector<int32_t>* out) {
      for (const trace::Value& v : values) {
        if (v.kind == trace::ValueKind::kTensor && !isUndefinedTensor(t_, v)) {
          out->push_back(inputSlot(v.tensor));
        }
        for (const trace::Value& item : v.items) {
          if (item.kind == trace::ValueKind::kTensor) out->push_back(inputSlot(item.tensor));
        }
      }
    };
    bind(n.inputs, &step.comm_inputs);
    bind(n.outputs, &step.comm_outputs);
  }

  void skip(PlanStep& step, const std::string& reason) {
    plan_.coverage.skipped_by_reason[reason]++;
    plan_.coverage.skipped_ops.push_back({t_.nodes[step.node].id, step.name, reason});
    step.args.clear();
  }

  bool resolve(PlanStep& step, std::string* why) {
    const trace::Node& n = t_.nodes[step.node];
    const trace::Attr* backend = t_.attr(n, "kernel_backend");
    if (backend != nullptr && backend->value.kind == trace::ValueKind::kString &&
        t_.str(backend->value.s) == "triton") {
      *why = "triton kernel (needs the Inductor runtime)";
      return false;
    }
    std::string name;
    if (!parseSchemaName(t_.str(n.op_schema), &name, &step.overload)) {
      *why = "no op schema recorded";
      return false;
    }
    if (o_.device.is_cpu() && rewriteForCpu(&name, &step.overload, n.inputs, &rewritten_)) {
      inputs_ = &rewritten_;
    }
    step.name = name;
    step.op = c10::Dispatcher::singleton().findSchema({name, step.overload});
    std::string stand_in;
    if (!step.op) step.op = compatOp(name, step.overload, &stand_in);
    if (!step.op) {
      *why = "op not in this libtorch" + libraryNote(name);
      return false;
    }
    if (!stand_in.empty()) {
      ++plan_.coverage.adapted;
      plan_.coverage.adapted_ops.push_back({n.id, name, stand_in});
    }
    return true;
  }

  bool decode(PlanStep& step, std::string* why) {
    const std::vector<trace::Value>& inputs = *inputs_;
    const auto& args = step.op->schema().arguments();
    if (inputs.size() > args.size()) {
      *why = "recorded arguments do not match this libtorch's schema";
      return false;
    }
    DecodeContext ctx{&t_, o_.device, [this](uint32_t t) { return inputSlot(t); },
                      [this, &step] { return outputStorageSlot(step); }};
    step.args.resize(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      if (i < inputs.size() && inputs[i].kind == trace::ValueKind::kOpaque &&
          isPackedLinearParams(args[i].type())) {
        if (!packedParams(step, &step.args[i], why)) return false;
      } else if (i < inputs.size()) {
        if (!decodeArg(ctx, inputs[i], args[i], &step.args[i], why)) return false;
      } else if (args[i].default_value()) {  // cut off by the observer
        step.args[i].value = *args[i].default_value();
      } else {
        *why = "argument '" + args[i].name() + "' missing from the recording";
        return false;
      }
    }
    return true;
  }

  // Quantized Linear weights, prepacked into an object the trace cannot
  // hold: a stand-in of the recorded size, listed as adapted.
  bool packedParams(PlanStep& step, ArgSource* arg, std::string* why) {
    const trace::Node& n = t_.nodes[step.node];
    if (!makePackedLinearParams(t_, n, step.name, &arg->value, why)) return false;
    arg->kind = ArgKind::kConst;
    ++plan_.coverage.adapted;
    plan_.coverage.adapted_ops.push_back(
        {n.id, step.name, "packed weights not recorded: random ones of the recorded size packed"});
    return true;
  }

  void bindOutputs(PlanStep& step) {
    const trace::Node& n = t_.nodes[step.node];
    const size_t rets = std::min(n.outputs.size(), step.op->schema().returns().size());
    auto bind = [&](uint32_t ret, int32_t item, const trace::Value& v) {
      if (v.kind != trace::ValueKind::kTensor || isUndefinedTensor(t_, v)) return;
      const int32_t slot = newSlot(v.tensor, false);
      produced_[keyOf(v.tensor)] = slot;
      step.outs.push_back({ret, item, slot, v.tensor});
    };
    for (uint32_t r = 0; r < rets; ++r) {
      const trace::Value& v = n.outputs[r];
      bind(r, -1, v);
      for (size_t k = 0; k < v.items.size(); ++k) bind(r, static_cast<int32_t>(k), v.items[k]);
    }
  }

  // set_(self, <Storage>, ...) makes self a view of the storage its
  // recorded output lives in: a leaf shaped like that output provides it.
  int32_t outputStorageSlot(const PlanStep& step) {
    for (const trace::Value& v : t_.nodes[step.node].outputs) {
      if (v.kind == trace::ValueKind::kTensor && !isUndefinedTensor(t_, v)) {
        return inputSlot(v.tensor);
      }
    }
    return kNoSlot;
  }

  // Ops that only tell a GPU allocator or stream something have nothing to
  // do on CPU; they count as replayed and are listed as no-ops.
  bool addNoop(PlanStep& step) {
    if (!o_.device.is_cpu() || step.name != "aten::record_stream") return false;
    step.runnable = step.noop = true;
    ++plan_.coverage.noop;
    plan_.coverage.noop_ops.push_back(
        {t_.nodes[step.node].id, step.name, "CUDA stream bookkeeping: nothing to do on cpu"});
    return true;
  }

  // A CPU kernel that runs but cannot be trusted with the recorded
  // Half/BFloat16 is never called: the op runs in float32 from the first
  // call, listed with the other float32 fallbacks.
  void markFloat32(PlanStep& step, const trace::Node& n) {
    const std::string why = reducedFloatDefect(t_, n, *step.op, step.args);
    if (why.empty()) return;
    step.fp32 = true;
    ++plan_.coverage.fallback_fp32;
    plan_.coverage.fallback_ops.push_back({n.id, step.name, why});
  }

  void addOp(PlanStep& step) {
    ++plan_.coverage.operators;
    if (addNoop(step)) return;
    inputs_ = &t_.nodes[step.node].inputs;
    std::string why;
    if (!resolve(step, &why) || !decode(step, &why)) {
      // Outputs stay unproduced: consumers read leaves allocated from the
      // recorded shapes, dtypes and strides, so later ops still run.
      skip(step, why);
      return;
    }
    step.runnable = true;
    const trace::Node& n = t_.nodes[step.node];
    applyIndexRules(t_, n, step, plan_);
    initWeights(t_, step, plan_);
    markWrappedNumbers(t_, n, step, plan_);
    step.pin_shapes = hasDataDependentShape(step.name) ||
                      (step.name == "aten::where" && step.overload.empty());  // where(cond)
    step.index_bounds = indexBounds(t_, n, step);
    step.mask_count = recordedMaskCount(t_, n, step.name);
    step.sparse_nnz = recordedSparseNnz(t_, step.node, step.name);
    step.autocast = autocastDtype(t_, n, children_[step.node]);
    if (o_.device.is_cpu()) markFloat32(step, n);
    bindOutputs(step);
    traceValueSources(step, plan_);
  }

  // Each intermediate dies after its last reader (or at once when nothing
  // reads it), so peak memory follows the original's, not the sum.
  void computeReleases() {
    std::vector<int32_t> last(plan_.slots.size(), -1);
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
      const PlanStep& st = plan_.steps[s];
      auto use = [&](int32_t slot) {
        if (slot != kNoSlot) last[static_cast<size_t>(slot)] = static_cast<int32_t>(s);
      };
      for (const ArgSource& a : st.args) for (int32_t slot : a.slots) use(slot);
      for (int32_t slot : st.comm_inputs) use(slot);
      for (int32_t slot : st.comm_outputs) use(slot);
      for (const OutBinding& o : st.outs) use(o.slot);
    }
    for (size_t slot = 0; slot < last.size(); ++slot) {
      if (!plan_.is_leaf[slot] && last[slot] >= 0) {
        plan_.steps[static_cast<size_t>(last[slot])].release.push_back(static_cast<int32_t>(slot));
      }
    }
  }

  const trace::Trace& t_;
  const PlanOptions& o_;
  Plan plan_;
  const std::vector<trace::Value>* inputs_ = nullptr;  // the op's, or rewritten_
  std::vector<trace::Value> rewritten_;
  std::unordered_map<TensorKey, int32_t, KeyHash> produced_, leaves_;
  std::vector<std::vector<uint32_t>> children_;  // autocast shows in an op's children
};
}  // namespace

Plan buildPlan(const trace::Trace& trace, const std::vector<SelectedNode>& nodes,
               const PlanOptions& options) {
  Plan plan = PlanBuilder(trace, options).build(nodes);
  plan.device = options.device;
  plan.coverage.replayed = plan.coverage.operators - plan.coverage.skipped_ops.size();
  plan.coverage.skipped = plan.coverage.skipped_ops.size();
  plan.value_source.resize(plan.slots.size(), kNoSlot);
  allocateLeaves(trace, plan, options, ViewLayouts(trace, nodes));
  return plan;
}

}  // namespace etb::replay::detail
