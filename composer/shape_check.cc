// SPDX-License-Identifier: MIT
#include "composer/shape_check.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <functional>
#include <numeric>
#include <unordered_map>

#include "composer/check_input.h"
#include "core/base/error.h"
#include "replayer/arg_decoder.h"
#include "replayer/comm/tensor_bind.h"
#include "replayer/cpu_rewrites.h"
#include "replayer/data_rules.h"
#include "replayer/dtype_fallback.h"
#include "replayer/op_plan.h"
#include "replayer/op_selection.h"

namespace etb::compose {
namespace {
using replay::detail::ArgKind;
using replay::detail::ArgSource;
using trace::Node;
using trace::Trace;
using trace::Value;

constexpr std::string_view kMeta = "meta";
constexpr std::string_view kCpu = "cpu (no meta kernel)";
constexpr std::string_view kCpuStandin = "cpu as float32 (no meta kernel, dtype unsupported or wrong on cpu)";
constexpr std::string_view kCommRule = "collective size rule";

std::string shapeText(c10::IntArrayRef xs) {
  std::string s = "[";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
  return s + "]";
}

std::string firstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

// libtorch's way of saying "no kernel for this backend", as opposed to a
// shape error raised by a kernel or a meta function. libtorch 2.x keeps many
// meta functions in Python (torch._meta_registrations), which a C++ program
// never loads: its message there names "Meta tensors" and a "fake impl".
bool isMissingKernel(const std::string& what) {
  return what.find("Could not run") != std::string::npos ||
         what.find("no fake impl or Meta kernel") != std::string::npos ||
         what.find("not implemented") != std::string::npos ||
         what.find("_overrideable") != std::string::npos ||
         what.find("NotImplementedError") != std::string::npos ||
         what.find("Cannot copy out of meta tensor") != std::string::npos ||
         what.find("meta tensor") != std::string::npos ||
         // a kernel reading data (an RNN's batch_sizes) off a meta tensor
         what.find("data is not allocated yet") != std::string::npos;
}

namespace {

// A CPU kernel that lacks the dtype (not a shape problem).
bool isUnsupportedDtype(const std::string& what) {
  return what.find("scalar types") != std::string::npos ||
         what.find("Unsupported dtype") != std::string::npos ||
         what.find("not implemented for 'BFloat16'") != std::string::npos ||
         what.find("not implemented for 'Half'") != std::string::npos;
}

// Ops whose output shapes depend on the data: only the call is checked. The
// replayer's list (one list, so the two cannot drift apart: this one lacked
// repeat_interleave, and every trace with a tensor of repeats was refused),
// less _pack_padded_sequence, whose lengths the check derives from the
// recording (checked exactly), plus the embedding bags, whose offsets a
// meta tensor cannot hold.
bool dataDependent(std::string_view name) {
  if (name == "aten::_pack_padded_sequence") return false;
  if (replay::detail::hasDataDependentShape(name)) return true;
  for (std::string_view op : {"aten::_embedding_bag", "aten::embedding_bag",
                              "aten::_embedding_bag_forward_only"}) {
    if (name == op) return true;
  }
  return false;
}

// Ops checked on CPU even where a meta kernel exists: their meta behaviour
// differs (lengths must be a CPU tensor; autocast casts test is_cpu()).
bool cpuOnly(std::string_view name) {
  return name == "aten::_pack_padded_sequence" || name == "aten::_pad_packed_sequence" ||
         name == "aten::_pack_padded_sequence_backward" ||
         name == "aten::_autocast_to_reduced_precision" ||
         name == "aten::_autocast_to_full_precision";
}

class Checker {
 public:
  Checker(const Trace& t, const CheckOptions& o)
      : t_(t), o_(o), passed_(o.cache != nullptr ? *o.cache : local_), children_(t.children()),
        gen_(at::make_generator<at::CPUGeneratorImpl>(1)) {}

  CheckReport run() {
    std::vector<trace::Iteration> its = t_.iterations;
    if (its.empty()) its.push_back(replay::chooseIteration(t_, 0));
    for (const trace::Iteration& it : its) {
      for (const replay::SelectedNode& s : replay::selectNodes(t_, it)) {
        const Node& n = t_.nodes[s.index];
        ++report_.ops;
        if (s.is_comm) checkComm(n);
        else checkOp(n);
      }
    }
    return std::move(report_);
  }

 private:
  void count(std::string_view method) { ++report_.by_method[std::string(method)]; }

  void unchecked(const std::string& op, const std::string& why) {
    ++report_.by_method["unchecked: " + why];
    ++report_.unchecked[op + ": " + why];
    ++report_.detail["unchecked: " + op + ": " + why];
  }

  [[noreturn]] void fail(const Node& n, const std::string& op, const std::string& why) {
    std::string shapes;
    std::function<void(const Value&)> add = [&](const Value& v) {
      if (v.kind == trace::ValueKind::kTensor) {
        shapes += (shapes.empty() ? "" : ", ") + shapeText(t_.list(t_.tensors[v.tensor].shape));
      }
      for (const Value& x : v.items) add(x);
    };
    for (const Value& v : n.inputs) add(v);
    ETB_INPUT_ERROR((SourceLoc{t_.path, 0, n.id, op}), "shape check failed: inputs (", shapes,
                    "): ", why);
  }

  // The call's signature: op, input shapes/strides/dtypes and constants, as
  // text (the cache is shared by the ranks, whose pools differ).
  std::string signature(const Node& n) const {
    std::string s = std::string(t_.str(n.op_schema)) + "|" + std::string(t_.name(n));
    auto list = [&](trace::ListId id) {
      for (int64_t x : t_.list(id)) s += std::to_string(x) + ",";
    };
    std::function<void(const Value&)> add = [&](const Value& v) {
      s += "|" + std::to_string(static_cast<int>(v.kind)) + ":";
      if (v.kind == trace::ValueKind::kTensor) {
        const trace::TensorRef& r = t_.tensors[v.tensor];
        list(r.shape);
        s += "/";
        if (r.has_strides) list(r.strides);
        s += "/" + std::to_string(static_cast<int>(r.dtype));
      } else if (v.kind == trace::ValueKind::kDouble) {
        s += std::to_string(v.d);
      } else if (v.kind == trace::ValueKind::kString || v.kind == trace::ValueKind::kDevice ||
                 v.kind == trace::ValueKind::kOpaque) {
        s += t_.str(v.s);
      } else if (v.kind == trace::ValueKind::kInt) {
        s += std::to_string(v.i);
      } else if (v.kind == trace::ValueKind::kBool) {
        s += v.b ? "1" : "0";
      }
      for (const Value& x : v.items) add(x);
    };
    for (const Value& v : n.inputs) add(v);
    s += "->";
    for (const Value& v : n.outputs) add(v);
    return s;
  }

  void checkOp(const Node& n);
  bool needsCpu(std::string_view name);
  bool decode(const Node& n, const c10::OperatorHandle& op, const std::vector<Value>& inputs,
              std::vector<ArgSource>* args, std::string* why);
  std::string runOn(const Node& n, const c10::OperatorHandle& op,
                    const std::vector<ArgSource>& args, at::Device device, bool standin = false);
  std::string compareOutputs(const Node& n, const c10::OperatorHandle& op,
                             const std::vector<c10::IValue>& stack, bool standin);
  void checkComm(const Node& n);
  std::string_view onCpu(const Node& n, const c10::OperatorHandle& op,
                         const std::vector<ArgSource>& args, std::string* err);

  const Trace& t_;
  const CheckOptions& o_;
  CheckReport report_;
  std::vector<uint32_t> slot_tensor_;  // slot -> TensorRef index
  CheckCache local_;
  CheckCache& passed_;  // signature -> method
  std::vector<std::vector<uint32_t>> children_;  // autocast shows in an op's children
  std::vector<trace::DType> autocast_;  // the checked op's kernel dtypes per slot, if autocast
  at::Generator gen_;                   // sparse inputs' rows
  bool sparse_ = false;                 // the checked op reads a sparse tensor

 public:
  // Derive mode (deriveOutputShapes): an output whose shape libtorch
  // computes otherwise takes libtorch's, and so do the later uses of that
  // tensor; nothing fails.
  uint64_t derive(Trace& t, const std::vector<bool>& keep, bool dtypes = false);
  void setReshapes(const std::vector<RecordedReshape>* r, int64_t from) {
    reshapes_.clear();
    for (const RecordedReshape& x : *r) reshapes_.emplace(x.node, &x);
    from_ = from;
  }

 private:
  struct Derived {
    uint32_t tensor;
    bool reshaped;  // else only the dtype is new
    std::vector<int64_t> shape, strides;
    trace::DType dtype;  // kUnknown: as recorded
  };
  void applyDerived(size_t node);
  bool deriving_ = false;
  bool derive_dtypes_ = false;  // an output's dtype follows libtorch's too
  std::unordered_map<size_t, const RecordedReshape*> reshapes_;  // node -> as recorded
  int64_t from_ = 0;
  void refit(size_t node);
  std::vector<Derived> derived_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> uses_;  // tensor id -> refs, in node order
  std::vector<uint32_t> node_of_;  // ref -> the node that holds it
  Trace* mutable_ = nullptr;
  const std::vector<bool>* keep_ = nullptr;  // refs whose recorded shape stands
  uint64_t derived_count_ = 0;
};

bool Checker::needsCpu(std::string_view name) {
  sparse_ = false;
  for (uint32_t ti : slot_tensor_) sparse_ = sparse_ || replay::detail::isSparseRef(t_, t_.tensors[ti]);
  return sparse_ || cpuOnly(name);
}

bool Checker::decode(const Node& n, const c10::OperatorHandle& op, const std::vector<Value>& inputs,
                     std::vector<ArgSource>* args, std::string* why) {
  const auto& schema_args = op.schema().arguments();
  if (inputs.size() > schema_args.size()) {
    *why = "recorded arguments do not match this libtorch's schema";
    return false;
  }
  slot_tensor_.clear();
  replay::detail::DecodeContext ctx{&t_, at::Device(at::kMeta), [this](uint32_t ti) {
                                      slot_tensor_.push_back(ti);
                                      return static_cast<int32_t>(slot_tensor_.size() - 1);
                                    }};
  args->resize(schema_args.size());
  for (size_t i = 0; i < schema_args.size(); ++i) {
    if (i < inputs.size()) {
      if (!replay::detail::decodeArg(ctx, inputs[i], schema_args[i], &(*args)[i], why)) return false;
    } else if (schema_args[i].default_value()) {
      (*args)[i].value = *schema_args[i].default_value();
    } else {
      *why = "argument '" + schema_args[i].name() + "' missing from the recording";
      return false;
    }
  }
  (void)n;
  return true;
}

// Runs the op on `device`; returns "" or libtorch's error.
// `standin`: half and bfloat16 tensors run as float32 (CPU kernels of
// libtorch 1.13 lack some reduced-precision dtypes); dtypes are not compared.
std::string Checker::runOn(const Node& n, const c10::OperatorHandle& op,
                           const std::vector<ArgSource>& args, at::Device device, bool standin) {
  std::vector<at::Tensor> slots;
  for (size_t k = 0; k < slot_tensor_.size(); ++k) {
    slots.push_back(makeCheckInput(t_, n, slot_tensor_, k, {device, standin, &autocast_, &gen_}));
  }
  std::vector<c10::IValue> stack;
  for (const ArgSource& a : args) {
    if (a.kind == ArgKind::kConst) {
      stack.push_back(a.value);
    } else if (a.kind == ArgKind::kTensor) {
      stack.emplace_back(a.slots[0] == replay::detail::kNoSlot ? at::Tensor() : slots[static_cast<size_t>(a.slots[0])]);
    } else if (a.kind == ArgKind::kTensorList) {
      std::vector<at::Tensor> list;
      for (int32_t s : a.slots) list.push_back(s == replay::detail::kNoSlot ? at::Tensor() : slots[static_cast<size_t>(s)]);
      stack.emplace_back(list);
    } else {
      c10::List<c10::optional<at::Tensor>> list;
      for (int32_t s : a.slots) {
        if (s == replay::detail::kNoSlot) list.push_back(c10::nullopt);
        else list.push_back(slots[static_cast<size_t>(s)]);
      }
      stack.emplace_back(list);
    }
  }
  try {
    op.callBoxed(stack);
  } catch (const std::exception& e) {
    return std::string("!") + firstLine(e.what());
  }
  return compareOutputs(n, op, stack, standin);
}

std::string Checker::compareOutputs(const Node& n, const c10::OperatorHandle& op,
                                    const std::vector<c10::IValue>& stack, bool standin) {
  const size_t rets = std::min(n.outputs.size(), op.schema().returns().size());
  // A sparse tensor's nnz is data: shapes of what reads one are too.
  // where(condition) is nonzero by another name (where.self is not).
  const bool loose = dataDependent(t_.name(n)) || sparse_ ||
                     (t_.name(n) == "aten::where" && n.inputs.size() == 1);
  for (size_t r = 0; r < rets && r < stack.size(); ++r) {
    auto compare = [&](const Value& v, const at::Tensor& got) -> std::string {
      if (v.kind != trace::ValueKind::kTensor || replay::detail::isUndefinedTensor(t_, v) ||
          !got.defined()) {
        return "";
      }
      const trace::TensorRef& ref = t_.tensors[v.tensor];
      const auto& want = t_.list(ref.shape);
      const bool may_derive = deriving_ && !(*keep_)[v.tensor];
      const bool other_dtype = !standin && ref.dtype != trace::DType::kUnknown &&
                               got.scalar_type() != replay::detail::toScalarType(ref.dtype);
      const trace::DType derived_dtype = replay::comm::dtypeOf(got.scalar_type());
      if (other_dtype && !(may_derive && derive_dtypes_ && derived_dtype != trace::DType::kUnknown)) {
        return "output " + std::to_string(r) + " has dtype " + c10::toString(got.scalar_type()) +
               " but the trace claims " + std::string(trace::dtypeName(ref.dtype));
      }
      const bool other_shape = got.sizes() != c10::IntArrayRef(want) && !loose;
      if (!other_dtype && !other_shape) return "";
      if (may_derive) {
        derived_.push_back({v.tensor, other_shape, got.sizes().vec(), got.strides().vec(),
                            other_dtype ? derived_dtype : trace::DType::kUnknown});
        return "";
      }
      return "output " + std::to_string(r) + " has shape " + shapeText(got.sizes()) +
             " but the trace claims " + shapeText(want);
    };
    const c10::IValue& got = stack[r];
    std::string what;
    if (got.isTensor()) what = compare(n.outputs[r], got.toTensor());
    if (got.isTensorList()) {
      auto list = got.toTensorList();
      for (size_t k = 0; k < n.outputs[r].items.size() && k < list.size() && what.empty(); ++k) {
        what = compare(n.outputs[r].items[k], list.get(k));
      }
    }
    if (!what.empty()) return what;
  }
  return "";
}

// The CPU run for an op without a meta kernel; float32 stands in for a
// reduced-precision dtype the CPU kernel lacks (whatever its message says:
// "multinomial is not implemented for half on CPU") or gets wrong.
std::string_view Checker::onCpu(const Node& n, const c10::OperatorHandle& op,
                                const std::vector<ArgSource>& args, std::string* err) {
  const bool wrong = !replay::detail::reducedFloatDefect(t_, n, op, args).empty();
  bool reduced = false;
  for (uint32_t ti : slot_tensor_) {
    const trace::DType d = t_.tensors[ti].dtype;
    reduced = reduced || d == trace::DType::kHalf || d == trace::DType::kBFloat16;
  }
  if (!wrong) *err = runOn(n, op, args, at::Device(at::kCPU));
  if (!wrong && (err->empty() || (*err)[0] != '!' || !reduced)) return kCpu;
  *err = runOn(n, op, args, at::Device(at::kCPU), true);
  return kCpuStandin;
}

// Rewrites a recorded reshape's sizes for its input as it is now.
void Checker::refit(size_t node) {
  auto it = reshapes_.find(node);
  if (it == reshapes_.end()) return;
  Node& n = mutable_->nodes[node];
  if (n.inputs.size() < 2 || n.inputs[0].kind != trace::ValueKind::kTensor ||
      n.inputs[1].kind != trace::ValueKind::kList) {
    return;
  }
  const std::vector<int64_t>& input = mutable_->list(mutable_->tensors[n.inputs[0].tensor].shape);
  const std::vector<int64_t> sizes = refitReshape(it->second->input, it->second->sizes, input, from_);
  if (sizes.size() != n.inputs[1].items.size()) return;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (n.inputs[1].items[k].kind == trace::ValueKind::kInt) n.inputs[1].items[k].i = sizes[k];
  }
}

// CTC's CPU kernels trust their lengths: run on lists that do not fit the
// tensors (a batch grown by --scale-dim, its per-sample lengths not), they
// read past their buffers and crash. What must hold, checked first: one
// input and one target length per sample, none beyond the time steps or the
// targets, and the backward's log_alpha as long.
std::string ctcDefect(const Trace& t, const c10::OperatorHandle& op, const std::vector<Value>& inputs) {
  if (op.schema().name().find("ctc_loss") == std::string::npos) return "";
  const auto& schema = op.schema().arguments();
  auto arg = [&](std::string_view name) -> const Value* {
    for (size_t i = 0; i < schema.size() && i < inputs.size(); ++i) {
      if (schema[i].name() == name) return &inputs[i];
    }
    return nullptr;
  };
  auto shape = [&](const Value* v) -> std::vector<int64_t> {
    if (v == nullptr || v->kind != trace::ValueKind::kTensor) return {};
    return t.list(t.tensors[v->tensor].shape);
  };
  auto ints = [](const Value* v) {
    std::vector<int64_t> out;
    if (v != nullptr && v->kind == trace::ValueKind::kList) {
      for (const Value& x : v->items) out.push_back(x.kind == trace::ValueKind::kInt ? x.i : -1);
    }
    return out;
  };
  const std::vector<int64_t> probs = shape(arg("log_probs")), targets = shape(arg("targets"));
  if (probs.size() != 3) return "";
  const int64_t steps = probs[0], batch = probs[1];
  const std::vector<int64_t> in_len = ints(arg("input_lengths")), tgt_len = ints(arg("target_lengths"));
  if (in_len.empty() && tgt_len.empty()) return "";  // lengths as tensors: their values are made up
  auto text = [](const std::vector<int64_t>& v) { return shapeText(c10::IntArrayRef(v)); };
  if (static_cast<int64_t>(in_len.size()) != batch || static_cast<int64_t>(tgt_len.size()) != batch) {
    return "input_lengths " + text(in_len) + " and target_lengths " + text(tgt_len) +
           " need one entry per sample of log_probs " + text(probs) + " (recorded per-sample lengths do not grow with the batch)";
  }
  int64_t longest = 0, total = 0;
  for (int64_t k = 0; k < batch; ++k) {
    if (in_len[k] < 0 || in_len[k] > steps) return "input length " + std::to_string(in_len[k]) + " beyond log_probs " + text(probs);
    longest = std::max(longest, tgt_len[k]);
    total += tgt_len[k];
  }
  const int64_t room = targets.size() == 2 ? targets[1] : (targets.size() == 1 ? targets[0] : 0);
  if ((targets.size() == 2 && (targets[0] != batch || longest > room)) || (targets.size() == 1 && total > room)) {
    return "target_lengths " + text(tgt_len) + " do not fit targets " + text(targets);
  }
  const std::vector<int64_t> alpha = shape(arg("log_alpha"));
  if (!alpha.empty() && (alpha.size() != 3 || alpha[0] != batch || alpha[1] < steps || alpha[2] < 2 * longest + 1)) {
    return "log_alpha " + text(alpha) + " does not fit log_probs " + text(probs) + " and target_lengths " + text(tgt_len);
  }
  return "";
}

void Checker::checkOp(const Node& n) {
  if (deriving_ && !reshapes_.empty()) refit(static_cast<size_t>(&n - t_.nodes.data()));
  std::string name, overload;
  if (!replay::detail::parseSchemaName(t_.str(n.op_schema), &name, &overload)) {
    unchecked(std::string(t_.name(n)), "no op schema recorded");
    return;
  }
  std::vector<Value> rewritten;
  const std::vector<Value>* inputs = &n.inputs;
  if (replay::detail::rewriteForCpu(&name, &overload, n.inputs, &rewritten)) inputs = &rewritten;
  auto op = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!op) {
    unchecked(name, "op not in this libtorch");
    return;
  }
  const std::string sig = signature(n);
  if (auto hit = passed_.find(sig); hit != passed_.end()) {
    ++report_.cached;
    count(hit->second);
    if (hit->second != kMeta) ++report_.detail[hit->second + ": " + name];
    return;
  }
  std::vector<ArgSource> args;
  std::string why;
  if (!decode(n, *op, *inputs, &args, &why)) {
    unchecked(name, why);
    return;
  }
  autocast_ = replay::detail::autocastInputDtypes(
      t_, n, children_[static_cast<size_t>(&n - t_.nodes.data())]);
  const bool cpu = needsCpu(name);
  std::string err = cpu ? "!no meta check" : runOn(n, *op, args, at::Device(at::kMeta));
  std::string_view method = kMeta;
  if (!err.empty() && err[0] == '!' && (cpu || isMissingKernel(err) || isUnsupportedDtype(err))) {
    uint64_t bytes = 0;
    for (uint32_t ti : slot_tensor_) bytes += t_.tensors[ti].numel * std::max<uint32_t>(t_.tensors[ti].itemsize, 1);
    if (bytes > o_.cpu_limit_bytes) {
      unchecked(name, "no meta kernel and too large for a CPU check");
      return;
    }
    const std::string defect = ctcDefect(t_, *op, *inputs);
    if (!defect.empty()) {
      if (deriving_) return;  // left for the check to name
      fail(n, name, defect);
    }
    method = onCpu(n, *op, args, &err);
  }
  if (deriving_) {
    applyDerived(static_cast<size_t>(&n - t_.nodes.data()));
    return;
  }
  if (!err.empty()) fail(n, name, err[0] == '!' ? err.substr(1) : err);
  count(method);
  if (method != kMeta) ++report_.detail[std::string(method) + ": " + name];
  passed_.emplace(sig, std::string(method));
}

template <typename Fn>
void eachRef(const Value& v, Fn fn) {
  if (v.kind == trace::ValueKind::kTensor) fn(v.tensor);
  for (const Value& x : v.items) eachRef(x, fn);
}

uint64_t Checker::derive(Trace& t, const std::vector<bool>& keep, bool dtypes) {
  deriving_ = true;
  derive_dtypes_ = dtypes;
  mutable_ = &t;
  keep_ = &keep;
  node_of_.assign(t.tensors.size(), 0);
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    for (const auto* values : {&t.nodes[i].inputs, &t.nodes[i].outputs}) {
      for (const Value& v : *values) {
        eachRef(v, [&](uint32_t ref) {
          uses_[t.tensors[ref].tensor_id].push_back(ref);
          node_of_[ref] = static_cast<uint32_t>(i);
        });
      }
    }
  }
  run();
  return derived_count_;
}

// Gives each derived output its shape, and every later ref of the same
// tensor (same id, storage, offset and the old shape) too: the consumers,
// and the op's own recorded children that made it.
void Checker::applyDerived(size_t node) {
  for (const Derived& d : derived_) {
    const trace::TensorRef before = mutable_->tensors[d.tensor];
    const auto rewrite = [&](trace::TensorRef& r) {
      if (d.dtype != trace::DType::kUnknown) {
        r.dtype = d.dtype;
        r.itemsize = static_cast<uint32_t>(trace::dtypeSize(d.dtype));
      }
      if (!d.reshaped) return;
      r.shape = mutable_->lists.intern(d.shape);
      if (r.has_strides) r.strides = mutable_->lists.intern(d.strides);
      r.numel = static_cast<uint64_t>(std::accumulate(d.shape.begin(), d.shape.end(), int64_t{1},
                                                      std::multiplies<int64_t>()));
    };
    for (uint32_t ref : uses_.at(before.tensor_id)) {
      trace::TensorRef& r = mutable_->tensors[ref];
      if (node_of_[ref] < node || r.storage_id != before.storage_id || r.offset != before.offset ||
          r.shape != before.shape || r.dtype != before.dtype) {
        continue;
      }
      rewrite(r);
    }
    ++derived_count_;
  }
  derived_.clear();
}

// The size rule of each collective type against its group.
void Checker::checkComm(const Node& n) {
  if (n.comm < 0) {
    unchecked(std::string(t_.name(n)), "no communication info");
    return;
  }
  const trace::CommInfo& c = t_.comms[static_cast<size_t>(n.comm)];
  int64_t size = t_.world_size;
  if (c.pg >= 0) size = static_cast<int64_t>(t_.process_groups[static_cast<size_t>(c.pg)].ranks.size());
  const std::string name(trace::commTypeName(c.type));
  if (size <= 0) {
    unchecked(name, "group size unknown");
    return;
  }
  const uint64_t g = static_cast<uint64_t>(size);
  std::string why;
  auto rule = [&](bool ok, const std::string& text) {
    if (!ok && why.empty()) why = text;
  };
  const std::string sizes = "in " + std::to_string(c.in_elems) + ", out " + std::to_string(c.out_elems) +
                            " elements, group of " + std::to_string(g);
  switch (c.type) {
    case trace::CommType::kAllGather:
      rule(c.in_elems == 0 || c.out_elems == 0 || c.out_elems == c.in_elems * g,
           "all_gather must output group size x input: " + sizes);
      break;
    case trace::CommType::kReduceScatter:
      rule(c.in_elems == 0 || c.out_elems == 0 || c.in_elems == c.out_elems * g,
           "reduce_scatter must take group size x output: " + sizes);
      break;
    case trace::CommType::kAllToAllV:
    case trace::CommType::kAllToAll:
      rule(c.in_splits.empty() || c.in_splits.size() == g, "input splits do not match the group: " + sizes);
      rule(c.out_splits.empty() || c.out_splits.size() == g, "output splits do not match the group: " + sizes);
      break;
    default:
      break;
  }
  if (!why.empty()) fail(n, name, why);
  count(kCommRule);
}
}  // namespace

std::vector<int64_t> refitReshape(const std::vector<int64_t>& old_input, const std::vector<int64_t>& sizes,
                                  const std::vector<int64_t>& input, int64_t from) {
  if (input.size() != old_input.size() || input == old_input) return sizes;
  for (int64_t v : sizes) {
    if (v <= 0) return {};  // -1 (inferred) or an empty dim
  }
  for (int64_t v : old_input) {
    if (v <= 0) return {};
  }
  std::vector<int64_t> out = sizes;
  size_t i = 0, j = 0;
  while (i < old_input.size() || j < sizes.size()) {
    const size_t i0 = i, j0 = j;
    int64_t pin = 1, pout = 1;
    if (i < old_input.size()) pin *= old_input[i++];
    if (j < sizes.size()) pout *= sizes[j++];
    while (pin != pout) {
      if (pin < pout && i < old_input.size()) {
        pin *= old_input[i++];
      } else if (pout < pin && j < sizes.size()) {
        pout *= sizes[j++];
      } else {
        return {};  // the sizes do not hold the input's elements
      }
    }
    int64_t now = 1;
    for (size_t k = i0; k < i; ++k) now *= input[k];
    if (now == pin) continue;
    if (j - j0 == 1) {
      out[j0] = now;
      continue;
    }
    if (now % pin != 0) return {};
    // Split: the size that is the dimension itself grows; else the end of
    // the group the grown input dims sit at (outermost or innermost); else
    // the first multiple of the dimension.
    size_t k = j0;
    while (k < j && sizes[k] != from) ++k;
    if (k == j) {
      const bool outer = input[i0] != old_input[i0], inner = input[i - 1] != old_input[i - 1];
      if (outer != inner) k = outer ? j0 : j - 1;
    }
    if (k == j) {
      k = j0;
      while (k < j && (from < 2 || sizes[k] % from != 0)) ++k;
    }
    if (k == j) return {};
    out[k] *= now / pin;
  }
  return out;
}

CheckReport checkShapes(const trace::Trace& t, const CheckOptions& options) {
  return Checker(t, options).run();
}

uint64_t deriveOutputShapes(trace::Trace& t, const std::vector<bool>& keep,
                            const std::vector<RecordedReshape>& reshapes, int64_t from) {
  const CheckOptions o;
  std::vector<bool> all = keep;
  all.resize(t.tensors.size(), false);
  Checker c(t, o);
  c.setReshapes(&reshapes, from);
  return c.derive(t, all);
}

uint64_t deriveOutputDtypes(trace::Trace& t) {
  const CheckOptions o;
  const std::vector<bool> none(t.tensors.size(), false);
  return Checker(t, o).derive(t, none, true);
}

void mergeReports(CheckReport& a, const CheckReport& b) {
  for (const auto& [k, v] : b.by_method) a.by_method[k] += v;
  for (const auto& [k, v] : b.unchecked) a.unchecked[k] += v;
  for (const auto& [k, v] : b.detail) a.detail[k] += v;
  a.ops += b.ops;
  a.cached += b.cached;
}
}  // namespace etb::compose
