// SPDX-License-Identifier: MIT
#include "replayer/result_builder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace etb::replay::detail {
namespace {

double median(std::vector<double> xs) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

// nccl-tests bus-bandwidth factors: what each rank moves over the wire
// relative to the message size.
double busFactor(trace::CommType type, int n) {
  if (n <= 1) return 1;
  switch (type) {
    case trace::CommType::kAllReduce: return 2.0 * (n - 1) / n;
    case trace::CommType::kAllGather:
    case trace::CommType::kReduceScatter:
    case trace::CommType::kAllToAll:
    case trace::CommType::kAllToAllV: return static_cast<double>(n - 1) / n;
    default: return 1;
  }
}

uint64_t commBytes(const trace::CommInfo& c) {
  if (c.bytes > 0) return c.bytes;
  return std::max(c.in_elems, c.out_elems) * static_cast<uint64_t>(std::max(trace::dtypeSize(c.dtype), 1));
}

void fillKinds(ReplayResult& r) {
  std::map<std::string, KindStat> kinds;
  for (const OpStat& op : r.ops) {
    KindStat& k = kinds[op.name];
    k.name = op.name;
    ++k.count;
    k.replay_us += op.replay_us;
    if (op.original_us >= 0) k.original_us = std::max(k.original_us, 0.0) + op.original_us;
  }
  r.kinds.clear();
  for (auto& [name, k] : kinds) r.kinds.push_back(std::move(k));
  auto diff = [](const KindStat& k) {
    return k.original_us >= 0 ? std::fabs(k.replay_us - k.original_us) : k.replay_us;
  };
  std::stable_sort(r.kinds.begin(), r.kinds.end(),
                   [&](const KindStat& a, const KindStat& b) { return diff(a) > diff(b); });
}

void fillCollectives(const trace::Trace& t, const Plan& plan, int world, ReplayResult& r) {
  std::map<std::tuple<std::string, std::string, uint64_t>, std::pair<uint64_t, std::vector<double>>> groups;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& s = plan.steps[i];
    const trace::Node& n = t.nodes[s.node];
    if (!s.is_comm || n.comm < 0) continue;
    const trace::CommInfo& c = t.comms[static_cast<size_t>(n.comm)];
    auto& g = groups[{std::string(trace::commTypeName(c.type)), std::string(t.str(c.pg_name)), commBytes(c)}];
    ++g.first;
    g.second.push_back(r.ops[i].replay_us);
  }
  for (auto& [key, g] : groups) {
    CollectiveStat cs;
    std::tie(cs.type, cs.group, cs.bytes) = key;
    cs.count = g.first;
    cs.time_us = median(g.second);
    const int n = world;
    if (cs.time_us > 0) {
      cs.algbw_gbps = static_cast<double>(cs.bytes) / (cs.time_us * 1e3);
      cs.busbw_gbps = cs.algbw_gbps * busFactor(trace::parseCommType(cs.type), n);
    }
    r.collectives.push_back(std::move(cs));
  }
}

// A trace without ProfilerStep markers (an observer started and stopped
// inside a step, as in Chakra's own collection guide) whose ops the
// profiler file timed: the original is the span from the first op's start to
// the last one's end, when at least 90% of the ops linked. It leaves out the
// host time before the first op and after the last, and the source says so.
double linkedSpanMs(const trace::Trace& t, const Plan& plan) {
  double lo = std::numeric_limits<double>::max(), hi = std::numeric_limits<double>::lowest();
  size_t linked = 0;
  for (const PlanStep& s : plan.steps) {
    const trace::Node& n = t.nodes[s.node];
    if (n.dur_us < 0 || n.start_us < 0) continue;
    ++linked;
    lo = std::min(lo, n.start_us);
    hi = std::max(hi, n.start_us + n.dur_us);
  }
  if (linked == 0 || linked * 10 < plan.steps.size() * 9 || hi <= lo) return -1;
  return (hi - lo) / 1e3;
}

void fillOriginal(const trace::Trace& t, const trace::Iteration& it, const Plan& plan,
                  ReplayResult& r) {
  std::vector<double> orig;
  for (const trace::Iteration& i : t.iterations) {
    if (i.dur_us > 0) orig.push_back(i.dur_us / 1e3);
  }
  if (orig.empty() && it.dur_us > 0) orig.push_back(it.dur_us / 1e3);
  if (orig.empty() && t.iterations.empty() && !r.original_iter_ms) {
    const double span = linkedSpanMs(t, plan);
    if (span > 0) {
      orig.push_back(span);
      r.original_source = (r.original_source.empty() ? std::string("trace") : r.original_source) +
                          ": span of the linked ops, no ProfilerStep marker";
    }
  }
  if (!orig.empty()) {
    r.original_iter_ms = summarize(orig);
    if (r.original_source.empty()) r.original_source = "trace";
  } else if (r.original_source.empty()) {
    for (const OpStat& op : r.ops) {
      if (op.original_us >= 0) {
        r.original_source = "trace";
        break;
      }
    }
  }
}
}  // namespace

void fillResult(const trace::Trace& trace, const trace::Iteration& it, const Plan& plan,
                const std::vector<IterationRecord>& records, int world_size,
                ReplayResult& r) {
  r.coverage = plan.coverage;
  std::vector<double> iter_ms;
  for (const IterationRecord& rec : records) iter_ms.push_back(rec.wall_us / 1e3);
  r.replay_iter_ms = summarize(iter_ms);
  r.ops.clear();
  r.timeline.clear();
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& s = plan.steps[i];
    const trace::Node& n = trace.nodes[s.node];
    OpStat op;
    op.node_id = n.id;
    op.name = s.name;
    op.overload = s.overload;
    op.replayed = s.runnable;
    op.is_comm = s.is_comm;
    std::vector<double> us;
    for (const IterationRecord& rec : records) us.push_back(rec.step_us[i]);
    op.replay_us = median(us);
    op.original_us = n.dur_us;
    if (!records.empty()) {
      op.start_us = records.back().step_start[i];
      r.timeline.push_back({s.name, s.is_comm ? "comm" : (s.runnable ? "op" : "skipped"), n.id,
                            0, s.is_comm ? 1 : 0, op.start_us, records.back().step_us[i]});
    }
    r.ops.push_back(std::move(op));
  }
  if (!records.empty()) {
    r.timeline.push_back({it.name.empty() ? "iteration" : it.name, "iteration", it.marker, 0, 0,
                          0, records.back().wall_us});
  }
  fillKinds(r);
  fillCollectives(trace, plan, world_size, r);
  fillOriginal(trace, it, plan, r);
}

void fillStepFaults(const std::vector<IterationRecord>& counted, ReplayResult& r) {
  if (counted.empty()) return;
  for (size_t i = 0; i < r.ops.size(); ++i) {
    std::vector<double> faults;
    for (const IterationRecord& rec : counted) {
      if (i < rec.faults.size()) faults.push_back(rec.faults[i]);
    }
    if (!faults.empty()) r.ops[i].minor_faults = median(faults);
  }
}

}  // namespace etb::replay::detail
