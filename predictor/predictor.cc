// SPDX-License-Identifier: MIT
#include "predictor/predictor.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <set>

#include "core/base/error.h"
#include "predictor/aten_call_counter.h"
#include "predictor/heap_model.h"
#include "predictor/layout_model.h"
#include "predictor/reuse_model.h"
#include "predictor/op_model.h"
#include "predictor/schedule.h"
#include "replayer/comm/comm_plan.h"
#include "replayer/comm/communicator.h"
#include "replayer/compat_ops.h"
#include "replayer/fresh_pages.h"
#include "replayer/op_selection.h"

namespace etb::predict {
namespace {
using trace::CommType;

// True when this libtorch has the op et_replay would call for `node`.
bool resolvable(const trace::Trace& t, const trace::Node& node) {
  std::string overload, what;
  const std::string name = opKind(t, node, &overload);
  return c10::Dispatcher::singleton().findSchema({name, overload}).has_value() ||
         replay::detail::compatOp(name, overload, &what).has_value();
}

// Costs of one rank's ops: a model where one knows the op, else the sum of
// the op's recorded children (composites such as lstm or dropout), else
// the model's bytes-moved fallback.
class Coster {
 public:
  Coster(const trace::Trace& t, const OpModel& m, const HwProfile& hw)
      : t_(t), m_(m), hw_(hw), children_(t.children()), channels_last_(channelsLastInputs(t)),
        transposed_(transposedInputs(t)) {}
  const std::vector<std::vector<uint32_t>>& children() const { return children_; }

  // `cold`, `l3`: the shares of the op's inputs that come from DRAM and
  // from the LLC (its children are taken to share them).
  OpEstimate cost(uint32_t index, double cold, double l3) const {
    const trace::Node& n = t_.nodes[index];
    OpEstimate e = m_.estimate(t_, n, cold, l3, channels_last_[index], transposed_[index]);
    if (!e.fallback) return e;
    double sum = 0, fixed = 0;
    bool work = false;
    for (uint32_t c : children_[index]) {
      if (t_.nodes[c].kind != trace::NodeKind::kOperator) continue;
      const OpEstimate child = cost(c, cold, l3);
      sum += child.us;
      fixed += child.fixed_us;
      work = work || child.family != "view";
    }
    if (work) return {sum, "composite", false, fixed};
    // Children that only allocate or view (torch 2.x's native_dropout
    // records two empty_like and runs its kernel itself): the op's own
    // bytes-moved estimate, the children's calls beside it.
    e.us += sum;
    e.fixed_us += fixed;
    return e;
  }

  // GPU profiles: the op's calls wait for the device themselves.
  bool synchronising(const std::string& name) const {
    return std::find(hw_.synchronising_ops.begin(), hw_.synchronising_ops.end(), name) !=
           hw_.synchronising_ops.end();
  }

  // GPU profiles: the host time of et_replay's call of the op, which
  // launches its kernels (HwProfile::launch_us): the op's own measured
  // launch; else its recorded children's and a dispatch that launches
  // nothing (a composite such as linear calls them); else the launch of
  // the op its model family was measured with; else a plain add's.
  double launchUs(uint32_t index, const OpEstimate& e) const {
    const trace::Node& n = t_.nodes[index];
    const std::string name = opKind(t_, n);
    // One call for both halves sets up once: on an H100 a replayed
    // convolution_backward took 51 us to launch, its halves alone 35 and 53.
    if (name == "aten::convolution_backward") {
      return std::max(launch("aten::convolution_backward:input"),
                      launch("aten::convolution_backward:weight"));
    }
    if (name.rfind("aten::_foreach_", 0) == 0) return foreachLaunch(opShapes(t_, n));
    if (const auto own = hw_.launch_us.find(name); own != hw_.launch_us.end()) return own->second;
    if (e.family == "view") return launch("aten::view");
    double sum = 0;
    bool work = false;
    for (uint32_t c : children_[index]) {
      if (t_.nodes[c].kind != trace::NodeKind::kOperator) continue;
      const OpEstimate child = cost(c, 0, 0);
      sum += launchUs(c, child);
      work = work || child.family != "view";
    }
    // A composite launches what its children launch; an op whose children
    // only allocate or view launches its own kernel beside them.
    return sum + launch(work ? "aten::view" : familyOp(name, e.family));
  }

 private:
  // The measured launch of `op`, else a plain add's, else the dispatch.
  double launch(const std::string& op) const {
    for (const std::string& o : {op, std::string("aten::add")}) {
      if (const auto it = hw_.launch_us.find(o); it != hw_.launch_us.end()) return it->second;
    }
    return hw_.dispatch_us;
  }

  // _foreach_ ops launch a kernel per chunk of their lists: linear in the
  // tensors between the measured list lengths ("aten::_foreach_add_:T").
  double foreachLaunch(const OpShapes& sh) const {
    double tensors = 0;
    for (const auto& list : sh.in_lists) tensors = std::max(tensors, static_cast<double>(list.size()));
    std::vector<std::pair<double, double>> pts;
    const std::string prefix = "aten::_foreach_add_:";
    for (const auto& [k, us] : hw_.launch_us) {
      if (k.rfind(prefix, 0) != 0) continue;
      char* end = nullptr;
      const double n = std::strtod(k.c_str() + prefix.size(), &end);
      if (*end == '\0' && n >= 1) pts.emplace_back(n, us);  // a hand-edited key: left out
    }
    if (pts.empty()) return launch("aten::_foreach_add_");
    std::sort(pts.begin(), pts.end());
    if (pts.size() == 1 || tensors <= pts.front().first) {
      return pts.front().second * std::max(tensors, 1.0) / pts.front().first;
    }
    for (size_t i = 1; i < pts.size(); ++i) {
      if (tensors <= pts[i].first || i + 1 == pts.size()) {
        const auto& [x0, y0] = pts[i - 1];
        const auto& [x1, y1] = pts[i];
        return y0 + (y1 - y0) * (tensors - x0) / (x1 - x0);
      }
    }
    return pts.back().second;
  }

  // The op a model family's curve was measured with (hw_bench*.cc).
  static std::string familyOp(const std::string& name, const std::string& family) {
    static const std::map<std::string, std::string> kOf = {
        {"gemm", "aten::mm"},
        {"conv", "aten::convolution"},
        {"embedding_bag", "aten::_embedding_bag"},
        {"pool", "aten::max_pool2d"},
        {"memory:elementwise", "aten::add"},
        {"memory:unary", "aten::relu"},
        {"memory:inplace", "aten::add_"},
        {"memory:norm", "aten::native_layer_norm"},
        {"memory:reduction", "aten::sum"},
        {"memory:copy", "aten::clone"},
        {"memory:fill", "aten::zero_"},
        {"memory:transcendental", "aten::tanh"},
        {"memory:rng", "aten::bernoulli_"},
        {"memory:batchnorm", "aten::native_batch_norm"},
        {"memory:batchnorm_backward", "aten::native_batch_norm_backward"},
    };
    if (family == "gemm" && name.find("bmm") != std::string::npos) return "aten::bmm";
    if (family == "embedding_bag" && name.find("backward") != std::string::npos) {
      return "aten::_embedding_bag_backward";
    }
    if (family.rfind("memory:op:", 0) == 0) return "aten::" + family.substr(10);
    if (family.rfind("memory:reduction", 0) == 0) return "aten::sum";
    const auto it = kOf.find(family);
    return it == kOf.end() ? "aten::add" : it->second;
  }

  const trace::Trace& t_;
  const OpModel& m_;
  const HwProfile& hw_;
  std::vector<std::vector<uint32_t>> children_;
  std::vector<uint32_t> channels_last_;  // per node (layout_model.h)
  std::vector<uint32_t> transposed_;     // per node (layout_model.h)
};

// The recorded gaps between consecutive top-level ops (the original's
// host time: Python, autograd engine, optimizer loops), or -1 when the
// trace carries no timings.
double hostGapUs(const trace::Trace& t, const std::vector<replay::SelectedNode>& sel) {
  double sum = 0, prev_end = -1;
  bool timed = false;
  for (const replay::SelectedNode& s : sel) {
    const trace::Node& n = t.nodes[s.index];
    if (n.start_us < 0 || n.dur_us < 0) continue;
    timed = true;
    if (prev_end >= 0 && n.start_us > prev_end) sum += n.start_us - prev_end;
    prev_end = std::max(prev_end, n.start_us + n.dur_us);
  }
  return timed ? sum : -1;
}

class StepBuilder {
 public:
  StepBuilder(const trace::Trace& t, int rank, int world, const OpModel& m, const HwProfile& hw,
              Prediction& p, RankPrediction& rp)
      : t_(t), rank_(rank), world_(world), model_(m), hw_(hw), coster_(t, m, hw), p_(p), rp_(rp),
        groups_(replay::comm::groupsOf(t, world)) {
    // A trace with no process-group record runs on the world group.
    replay::comm::GroupSpec w{"world", {}, true};
    for (int r = 0; r < world; ++r) w.ranks.push_back(r);
    groups_.push_back(std::move(w));
  }

  std::vector<Step> build(const PredictOptions& o) {
    profile_path_ = o.profile_path;
    const trace::Iteration it = replay::chooseIteration(t_, o.iteration);
    const std::vector<replay::SelectedNode> sel = replay::selectNodes(t_, it);
    // On a GPU the host heap and caches are not the kernels' (the caching
    // allocator keeps device memory; the curves are the device's own).
    gpu_ = o.device.rfind("cuda", 0) == 0;
    if (gpu_) rp_.device_us = 0;
    StepReleases releases(sel.size());
    const std::vector<double> fresh =
        gpu_ ? std::vector<double>(sel.size(), 0) : freshBytes(sel, o, &releases);
    const std::vector<double> cold = gpu_ ? std::vector<double>(sel.size(), 0)
                                     : hw_.memory.retention.empty()
                                         ? coldInputShare(t_, sel, hw_.memory.llc_bytes)
                                         : coldInputShare(t_, sel, hw_.memory.retention);
    // Inputs beyond L2 but within the LLC: the share beyond L2 less the
    // share beyond the LLC.
    std::vector<double> l3(sel.size(), 0);
    if (hw_.memory.l2_bytes > 0 && !gpu_) {
      const std::vector<double> beyond_l2 = coldInputShare(t_, sel, hw_.memory.l2_bytes);
      for (size_t i = 0; i < sel.size(); ++i) l3[i] = std::max(0.0, beyond_l2[i] - cold[i]);
    }
    // How many other kinds ran since each call's kind last did (its code's
    // reuse distance; HwProfile::cold_kinds prices it).
    std::vector<std::string> kinds;
    kinds.reserve(sel.size());
    for (const replay::SelectedNode& s : sel) kinds.push_back(opKind(t_, t_.nodes[s.index]));
    const std::vector<int> kinds_since = kindReuseDistance(kinds);
    std::vector<Step> steps;
    for (size_t i = 0; i < sel.size(); ++i) {
      const trace::Node& n = t_.nodes[sel[i].index];
      rp_.ops.push_back({n.id, kinds[i], "", 0, 0, 0});
      Step step;
      step.op = rp_.ops.size() - 1;
      kinds_since_ = kinds_since[i];
      if (sel[i].is_comm) comm(n, step);
      else op(sel[i].index, fresh[i], releases[i], cold[i], l3[i], step);
      prev_us_ = step.us;
      since_episode_us_ = rp_.ops[step.op].fresh_pages > 0 ? 0 : since_episode_us_ + step.us;
      steps.push_back(step);
    }
    // A communication-only trace (ASTRA-sim's microbenchmarks) is predicted
    // by its collectives alone.
    if (steps.empty() && rank_ == 0) {
      ETB_INPUT_ERROR(SourceLoc{t_.path}, "iteration ", o.iteration, " has no operators or collectives to predict");
    }
    rp_.host_us = hostGapUs(t_, sel);
    // The iteration ends when the host has seen the device finish.
    if (gpu_ && !steps.empty() && steps.back().kind == Step::Kind::kCompute) {
      const double extra =
          std::max(host_t_, dev_end_ + hw_.sync_latency_us) - std::max(host_t_, dev_end_);
      steps.back().us += extra;
      rp_.ops[steps.back().op].us += extra;
      rp_.compute_us += extra;
    }
    return steps;
  }

 private:
  // The pages each step's outputs fault in: the heap model's, or the
  // original's count spread as et_replay --heap match spreads it.
  std::vector<double> freshBytes(const std::vector<replay::SelectedNode>& sel,
                                 const PredictOptions& o, StepReleases* releases) const {
    if (o.original_faults.empty()) {
      return freshBytesPerStep(t_, sel, coster_.children(), o.heap_start_bytes,
                               hw_.identity.threads, releases);
    }
    const double faults =
        o.original_faults[o.original_faults.size() == 1 ? 0 : static_cast<size_t>(rank_)];
    return originalFaultBytesPerStep(heapScript(t_, sel, coster_.children(), hw_.identity.threads),
                                     faults, hw_.memory.page_bytes,
                                     static_cast<double>(replay::FreshPages::kMinBytes), releases);
  }

  void op(uint32_t index, double fresh_bytes, const std::vector<double>& releases, double cold,
          double l3, Step& step) {
    OpPrediction& out = rp_.ops[step.op];
    if (rank_ == 0) ++p_.ops;
    if (!resolvable(t_, t_.nodes[index])) {
      out.family = "skipped";
      if (rank_ == 0) {
        ++p_.skipped;
        ++p_.skipped_by_reason["operator not in this libtorch"];
      }
      return;
    }
    const OpEstimate e = coster_.cost(index, cold, l3);
    out.family = e.family;
    if (rank_ == 0) ++(e.fallback ? p_.fallback : p_.modelled);
    if (gpu_) {
      gpuOp(index, e, step);
      return;
    }
    // First touch of the pages its outputs take from a grown heap or a new
    // mapping (heap_model.h): the microbenchmark curves leave it out.
    // And the pages it hands back (glibc's unmaps and trims, or et_replay
    // --heap match's share of each block): the TLB flushes of each release
    // (HwProfile's memory.release), the other half of a fresh page's cost;
    // the first touch is then the fault alone.
    out.fresh_pages = fresh_bytes / hw_.memory.page_bytes;
    out.first_touch_us = out.fresh_pages * touchUsPerPage(hw_.memory);
    // And what faulting them in costs inside a stream of other ops beyond
    // those hot loops (MemoryFacts::episode): the fault path's code and the
    // page tables out of the caches, the flushes' cost to the ops after it.
    if (out.fresh_pages > 0) out.episode_us = episodeExtraUs(hw_.memory, since_episode_us_, out.fresh_pages);
    for (const double pages : releases) out.release_us += releaseUs(hw_.memory, pages);
    out.dram_share = cold;
    out.l3_share = l3;
    // The curves are median calls; an iteration also pays the calls that
    // the machine slowed (HwProfile::stall_share). Then et_replay's own
    // work around the call (hw_bench_replay.cc), measured in a replay that
    // paid them already.
    // And the caches the previous step's length cost it (HwProfile::cold_after).
    // And, after an op of another kind, the call's own code and data out of
    // the core's caches (HwProfile::call_cold_us).
    // That cost grows with the kinds run since the op's own kind last ran:
    // the cold_kinds curve at that count (call_cold_us, a call after a
    // round of sixteen kinds, in profiles without the curve). Over
    // twelve small models recorded fresh (3,500 short calls, 2026-12-07) a
    // call after 1, 2-4 and 5-16 other kinds replayed -0.03, 0.18 and 0.20
    // us beyond its hot call and step, and after 17-48 kinds 1.81, where
    // call_cold_us charged 2.74 to every one (the curve: 0.16, 0.31, 1.76 and
    // 2.91 at 1, 4, 16 and 48 kinds).
    // A view pays its own level where the profile has one (call_cold_view_us).
    const std::string& kind = out.name;  // build() set it to the op's kind
    if (e.family == "view" && hw_.call_cold_view_us >= 0) {
      const bool other_before = hw_.cold_kinds.empty() ? kind != prev_kind_ : kinds_since_ != 0;
      out.cold_code_us = other_before ? hw_.call_cold_view_us : 0;
    } else if (!hw_.cold_kinds.empty()) {
      out.cold_code_us = kinds_since_ == 0 ? 0 : coldKindsUs(hw_.cold_kinds, kinds_since_);
    } else {
      out.cold_code_us = kind != prev_kind_ ? hw_.call_cold_us : 0;
    }
    prev_kind_ = kind;
    // And all of it at the machine's typical speed while profiling: the
    // guard measured each kernel where nothing slowed it, and a replay's
    // median iteration runs at the median speed (HwProfile::speed_guard; 1
    // if none). The mean would count spells a median iteration leaves out:
    // with it, transformer at four sizes came out +8..+11%, -1..+1 without.
    // Or at the speed asked for (PredictOptions::slowdown: --speed now);
    // predictIteration settles which (Prediction::slowdown).
    // The slowdown scales what moves data and computes; the fixed cost of
    // the call (its dispatch up to a trivial op's, or a view's whole call),
    // et_replay's step and the cold code do not follow it: on a VM whose
    // probe ran 1.45x its fastest, a boxed add of 4 floats took its
    // profiled 1.4 us and replayed views their unscaled 1.0 us, while small
    // models (0.1-2 ms steps) came out +30..+170% with everything scaled.
    const double fixed =
        e.family == "view" ? e.us : std::min(e.us - e.fixed_us, hw_.dispatch_us) + e.fixed_us;
    // The slowed calls' share for a call of its length (stall_by_call):
    // short calls lose more of their time to them.
    const double stall = stallShareFor(hw_, e.us);
    out.us = step.us =
        ((e.us - fixed + out.first_touch_us + out.release_us + out.episode_us) / (1 - stall) +
         coldAfterUs(hw_.cold_after, prev_us_)) * p_.slowdown +
        fixed / (1 - stall) + hw_.replay_step_us + out.cold_code_us;
    rp_.compute_us += out.us;
  }

  // A GPU op: the host launches it (et_replay's step and the op's launch),
  // its kernels start once launched and the device is free; an op that
  // reads a result on the host waits for the device. The op's time is what
  // it adds to the later of the two clocks, so the steps sum to the
  // iteration, which ends when the device is done (et_replay synchronises).
  void gpuOp(uint32_t index, const OpEstimate& e, Step& step) {
    OpPrediction& out = rp_.ops[step.op];
    const bool view = e.family == "view";
    const double device = view ? 0 : e.us;
    const double before = std::max(host_t_, dev_end_);
    const std::string& name = out.name;  // build() set it to the op's kind
    if (coster_.synchronising(name)) {
      // Measured as a synchronised call (launch and kernels): it starts once
      // the device's queue has drained, and the host holds it throughout.
      host_t_ = dev_end_ = std::max(host_t_, dev_end_ + hw_.sync_latency_us) + device +
                           hw_.replay_step_us;
      out.device_us = device;
      out.launch_us = 0;
      out.us = step.us = host_t_ - before;
      rp_.compute_us += out.us;
      rp_.device_us += device;
      return;
    }
    // A replayed call's host time: its hot-loop launch scaled, and the step;
    // a kind's first call in the iteration finds the host's caches without
    // its code and data (HwProfile::launch_first_scale).
    const bool first = kinds_called_.insert(name).second;
    const double scale = first ? std::max(hw_.launch_first_scale, hw_.launch_scale) : hw_.launch_scale;
    const double launch = coster_.launchUs(index, e) * scale + hw_.replay_step_us;
    host_t_ += launch;
    dev_end_ = std::max(dev_end_, host_t_) + device;
    if (waitsForDevice(name)) host_t_ = dev_end_ + hw_.sync_latency_us;
    out.device_us = device;
    out.launch_us = launch;
    out.us = step.us = std::max(host_t_, dev_end_) - before;
    rp_.compute_us += out.us;
    rp_.device_us += device;
  }

  // Ops whose result the host reads (a scalar, a data-dependent size): the
  // call returns when the device has caught up.
  static bool waitsForDevice(const std::string& name) {
    static const std::set<std::string> kSync = {
        "aten::item", "aten::_local_scalar_dense", "aten::nonzero", "aten::masked_select",
        "aten::is_nonzero", "aten::equal", "aten::allclose", "aten::unique_dim",
        "aten::_unique2", "aten::_unique", "aten::repeat_interleave", "aten::cpu",
        "aten::tolist", "aten::nonzero_static"};
    return kSync.count(name) > 0;
  }

  void comm(const trace::Node& n, Step& step) {
    OpPrediction& out = rp_.ops[step.op];
    // A collective takes the device's results: it starts when the device is
    // done (the launch queue drained).
    if (gpu_) host_t_ = dev_end_ = std::max(host_t_, dev_end_);
    out.family = "comm";
    if (rank_ == 0) ++p_.comms;
    // Counted but unsized (torch 1.13's bare gloo:all_to_all): et_replay does
    // not run it either, so it takes no time here.
    if (n.comm < 0 || static_cast<size_t>(n.comm) >= t_.comms.size()) {
      if (rank_ == 0) ++p_.comms_unsized;
      return;
    }
    const trace::CommInfo& info = t_.comms[static_cast<size_t>(n.comm)];
    step.pg = info.pg;
    step.seq = info.seq;
    if (info.type == CommType::kWait || n.kind == trace::NodeKind::kWait) {
      step.kind = Step::Kind::kWait;
      return;
    }
    if (world_ < 2 || !replay::comm::isDataCall(info.type)) return;  // local: completes at once
    if (!model_.hasCollectives()) {
      ETB_INPUT_ERROR(SourceLoc{profile_path_}, "no ", p_.comm_backend, " collective curves, but ",
                      t_.path, " node ", n.id, " is a collective et_replay runs on ", p_.comm_backend,
                      ": measure them with mpirun -np ", world_, " et_profile_hw (or choose the backend "
                      "with --comm)");
    }
    const replay::comm::GroupSpec& g = groupOf(info);
    const replay::comm::Message m =
        replay::comm::planMessage(t_, n, info, g, rank_, trace::DType::kFloat);
    step.kind = Step::Kind::kCollective;
    step.async = info.is_async;
    step.members = replay::comm::isCollective(info.type) ? m.group_size : 2;
    const std::string group = replay::comm::isCollective(info.type)
                                  ? g.name
                                  : g.name + ":" + std::to_string(std::min(rank_, static_cast<int>(m.peer))) +
                                        "-" + std::to_string(std::max(rank_, static_cast<int>(m.peer)));
    step.key = group + "#" + std::to_string(ordinal_[group]++);
    int measured = 0;
    const double bytes = static_cast<double>(m.algo_bytes);
    double us = model_.collectiveUs(std::string(trace::commTypeName(m.type)), m.group_size, bytes, &measured);
    if (us < 0) us = model_.collectiveUs("all_reduce", m.group_size, bytes, &measured);
    // Read from another group size's curve: said, as the report's
    // comm_groups_scaled (how ranks sharing cores exchange data changes
    // with their number, which the ring factor does not know).
    if (measured > 0 && measured != m.group_size) p_.comm_groups_scaled[m.group_size] = measured;
    out.us = step.us = std::max(us, 0.0);
    rp_.comm_us += step.us;
  }

  const replay::comm::GroupSpec& groupOf(const trace::CommInfo& info) const {
    if (info.pg >= 0) {
      const std::string& name = t_.process_groups[static_cast<size_t>(info.pg)].name;
      for (const auto& g : groups_) {
        if (g.name == name) return g;
      }
    }
    for (const auto& g : groups_) {
      if (g.is_world) return g;
    }
    return groups_.front();
  }

  const trace::Trace& t_;
  int rank_, world_;
  const OpModel& model_;
  const HwProfile& hw_;
  Coster coster_;
  Prediction& p_;
  RankPrediction& rp_;
  std::vector<replay::comm::GroupSpec> groups_;
  std::map<std::string, int64_t> ordinal_;
  std::string profile_path_;
  double prev_us_ = 0;     // the previous step's predicted time
  // Predicted time since the last op that faulted pages in (since the
  // iteration began, as after a long stretch, before the first).
  double since_episode_us_ = 1e9;
  std::string prev_kind_;  // the previous CPU op's kind
  int kinds_since_ = 0;    // other kinds since the current op's kind last ran
  // GPU: the host's and the device's clocks since the iteration started,
  // collectives' transfers left out (runSchedule adds them).
  bool gpu_ = false;
  double host_t_ = 0, dev_end_ = 0;
  std::set<std::string> kinds_called_;  // op kinds launched so far this iteration (GPU)
};

// The backend et_replay would run the collectives of `t` on.
std::string commBackendOf(const trace::Trace& t, const PredictOptions& o) {
  replay::CommOptions c;
  c.device = o.device;
  c.backend = o.comm;
  return replay::pickCommBackend(t, c);
}
}  // namespace

Prediction predictIteration(const std::vector<const trace::Trace*>& traces,
                            const HwProfile& profile, const PredictOptions& o) {
  ETB_CHECK(!traces.empty());
  const AtenCallCounter counter;
  const int world = o.world_size > 0 ? o.world_size : static_cast<int>(traces.size());
  Prediction p;
  p.heap_start_bytes = o.heap_start_bytes;
  if (!o.original_faults.empty()) {
    const size_t ranks = o.world_size > 0 ? static_cast<size_t>(o.world_size) : traces.size();
    ETB_CHECK(o.original_faults.size() == 1 || o.original_faults.size() == ranks);
    p.faults_from = "original";
  }
  p.comm_backend = commBackendOf(*traces.front(), o);
  p.profile_slowdown = profile.speed_guard.slowdown;
  p.slowdown = o.slowdown > 0 ? o.slowdown : p.profile_slowdown;
  if (o.slowdown > 0) p.speed_from = o.speed_from;
  const OpModel model(profile, o.index_dist, p.comm_backend);
  std::vector<std::vector<Step>> steps(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    const trace::Trace& t = *traces[traces.size() == 1 ? 0 : static_cast<size_t>(r)];
    p.ranks.push_back({});
    p.ranks.back().rank = r;
    steps[static_cast<size_t>(r)] = StepBuilder(t, r, world, model, profile, p, p.ranks.back()).build(o);
  }
  // Host cores matter to CPU replays (a GPU rank's kernels run on its device).
  runSchedule(steps, p.ranks, o.device.rfind("cuda", 0) == 0 ? 0 : o.cores);
  for (const RankPrediction& rp : p.ranks) p.iter_ms = std::max(p.iter_ms, rp.iter_us / 1e3);
  const RankPrediction& r0 = p.ranks.front();
  if (r0.host_us >= 0) p.iter_with_host_ms = r0.iter_us / 1e3 + r0.host_us / 1e3;
  for (const OpPrediction& op : r0.ops) {
    KindPrediction& k = p.kinds[op.name];
    ++k.count;
    k.us += op.us;
    k.family = op.family;
  }
  p.aten_calls = counter.calls();
  return p;
}

}  // namespace etb::predict
