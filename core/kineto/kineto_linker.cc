// SPDX-License-Identifier: MIT
#include "core/kineto/kineto_linker.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/log.h"

namespace etb::trace {
namespace {
namespace dom = simdjson::dom;
constexpr std::string_view kRfKey = "Record function id";
constexpr std::string_view kExtKey = "External id";

enum class Cat { kHost, kRuntime, kGpu, kOther };

Cat category(std::string_view cat) {
  if (cat == "cpu_op" || cat == "user_annotation" || cat == "Operator" ||
      cat == "gpu_user_annotation") {
    return cat == "gpu_user_annotation" ? Cat::kOther : Cat::kHost;
  }
  if (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime") return Cat::kRuntime;
  if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "Kernel" ||
      cat == "Memcpy" || cat == "Memset") {
    return Cat::kGpu;
  }
  return Cat::kOther;
}

// One complete ("X") event, with the ids the linker joins on.
struct Event {
  std::string_view name;
  Cat cat = Cat::kOther;
  int64_t pid = -1;
  int64_t tid = -1;
  double ts = 0;
  double dur = 0;
  int64_t rf = -1;      // args["Record function id"]
  int64_t ext = -1;     // args["External id"]
  int64_t corr = -1;    // args["correlation"]
  int64_t device = -1;
  int64_t stream = -1;
};

int64_t intOf(dom::element e) {
  int64_t i = 0;
  if (e.get_int64().get(i) == simdjson::SUCCESS) return i;
  uint64_t u = 0;
  if (e.get_uint64().get(u) == simdjson::SUCCESS) return static_cast<int64_t>(u);
  double d = 0;
  if (e.get_double().get(d) == simdjson::SUCCESS) {
    // Out-of-range doubles would be undefined to convert: no usable id.
    return std::isfinite(d) && d >= 0 && d < 9.2e18 ? static_cast<int64_t>(d) : -1;
  }
  // Some writers quote ids (pid "0", tid "stream 7").
  std::string_view s;
  if (e.get_string().get(s) == simdjson::SUCCESS) {
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / 10 - 1;
    int64_t v = 0;
    bool digits = false;
    for (char c : s) {
      if (c < '0' || c > '9') continue;
      if (v > kMax) return -1;  // longer than any id: found by the fuzzer
      v = v * 10 + (c - '0');
      digits = true;
    }
    return digits ? v : -1;
  }
  return -1;
}

double numOf(dom::element e) {
  double d = 0;
  if (e.get_double().get(d) == simdjson::SUCCESS) return d;
  return static_cast<double>(intOf(e));
}

bool parseEvent(dom::object obj, Event* ev) {
  std::string_view ph, cat;
  if (obj["ph"].get_string().get(ph) != simdjson::SUCCESS || ph != "X") return false;
  if (obj["cat"].get_string().get(cat) != simdjson::SUCCESS) return false;
  ev->cat = category(cat);
  if (ev->cat == Cat::kOther) return false;
  if (obj["name"].get_string().get(ev->name) != simdjson::SUCCESS) ev->name = "";
  dom::element e;
  if (obj["pid"].get(e) == simdjson::SUCCESS) ev->pid = intOf(e);
  if (obj["tid"].get(e) == simdjson::SUCCESS) ev->tid = intOf(e);
  if (obj["ts"].get(e) == simdjson::SUCCESS) ev->ts = numOf(e);
  if (obj["dur"].get(e) == simdjson::SUCCESS) ev->dur = numOf(e);
  dom::object args;
  if (obj["args"].get_object().get(args) != simdjson::SUCCESS) return true;
  if (args[kRfKey].get(e) == simdjson::SUCCESS) ev->rf = intOf(e);
  if (args[kExtKey].get(e) == simdjson::SUCCESS) ev->ext = intOf(e);
  if (args["correlation"].get(e) == simdjson::SUCCESS) ev->corr = intOf(e);
  if (args["device"].get(e) == simdjson::SUCCESS) ev->device = intOf(e);
  if (args["stream"].get(e) == simdjson::SUCCESS) ev->stream = intOf(e);
  return true;
}

// `text` must have simdjson::SIMDJSON_PADDING bytes of capacity past size().
std::vector<Event> loadEvents(const std::string& path, const std::string& text) {
  static thread_local dom::parser parser;
  dom::element root;
  SourceLoc loc{path, 0, SourceLoc::kNoNode, ""};
  if (const auto err = parser.parse(text.data(), text.size(), false).get(root)) {
    ETB_INPUT_ERROR(loc, "not a Kineto trace: JSON error: ", simdjson::error_message(err));
  }
  dom::array events;
  if (root.get_array().get(events) != simdjson::SUCCESS &&
      root["traceEvents"].get_array().get(events) != simdjson::SUCCESS) {
    ETB_INPUT_ERROR(loc, "not a Kineto trace: no traceEvents array");
  }
  std::vector<Event> out;
  for (dom::element e : events) {
    dom::object obj;
    Event ev;
    if (e.get_object().get(obj) == simdjson::SUCCESS && parseEvent(obj, &ev)) out.push_back(ev);
  }
  return out;
}

// Picks the join key and the process: the pair whose host events name the
// most of the trace's ops by their own rf_ids (the ET's own pid wins a tie).
// Hits whose names agree count first: a torch 1.13 profiler file can carry
// its correlation ids as "External id", which also fall in the rf_id range
// but name other ops. Raw hits decide only where no name agrees at all.
struct Choice {
  bool use_rf = true;
  int64_t pid = -1;
  size_t hits = 0;
};

Choice choose(const Trace& trace, const std::vector<Event>& events,
              const std::unordered_map<uint64_t, uint32_t>& by_rf) {
  struct Hits {
    size_t named[2] = {0, 0};  // rf, ext: id found and the names agree
    size_t raw[2] = {0, 0};    // id found
  };
  std::unordered_map<int64_t, Hits> hits;  // by pid
  for (const Event& ev : events) {
    if (ev.cat != Cat::kHost) continue;
    Hits& h = hits[ev.pid];
    const int64_t ids[2] = {ev.rf, ev.ext};
    for (int k = 0; k < 2; ++k) {
      const auto it = ids[k] > 0 ? by_rf.find(static_cast<uint64_t>(ids[k])) : by_rf.end();
      if (it == by_rf.end()) continue;
      ++h.raw[k];
      h.named[k] += trace.name(trace.nodes[it->second]) == ev.name ? 1 : 0;
    }
  }
  const bool any_named = std::any_of(hits.begin(), hits.end(), [](const auto& p) {
    return p.second.named[0] + p.second.named[1] > 0;
  });
  Choice best;
  for (const auto& [pid, h] : hits) {
    for (int k = 0; k < 2; ++k) {
      const size_t n = any_named ? h.named[k] : h.raw[k];
      const bool better = n > best.hits || (n == best.hits && n > 0 && pid == trace.pid);
      if (better) best = {k == 0, pid, n};
    }
  }
  return best;
}

// The shift from the profiler's ids to the trace's rf_ids under which the
// most linked names agree. 0 for a consistent pair; a torch 1.13 profiler
// file written from prof.events() next to a DDP ET is off by the handles
// the process-group setup took. Searched only when under half agree at 0,
// and taken only when at least 80% of the names agree under it.
int64_t idShift(const Trace& trace, const std::vector<Event>& events,
                const std::unordered_map<uint64_t, uint32_t>& by_rf, const Choice& c) {
  auto agree = [&](int64_t shift) {
    size_t n = 0, total = 0;
    for (const Event& ev : events) {
      const int64_t id = c.use_rf ? ev.rf : ev.ext;
      if (ev.cat != Cat::kHost || ev.pid != c.pid || id <= 0 || id + shift <= 0) continue;
      const int64_t key = id + shift;
      const auto it = by_rf.find(static_cast<uint64_t>(key));
      if (it == by_rf.end()) continue;
      ++total;
      n += trace.name(trace.nodes[it->second]) == ev.name ? 1 : 0;
    }
    return std::make_pair(n, total);
  };
  const auto [at_zero, total] = agree(0);
  // Only Record function ids (one counter in both files) shift as a block;
  // names legitimately differ under the older External id convention.
  if (!c.use_rf || total == 0 || 2 * at_zero >= total) return 0;
  int64_t best = 0;
  size_t best_n = at_zero;
  for (int64_t shift = -64; shift <= 64; ++shift) {
    const auto [n, matched] = agree(shift);
    // a real shift makes nearly every matched name agree
    if (n > best_n && 5 * n >= 4 * matched) best = shift, best_n = n;
  }
  return best;
}

// Host ops linked to nodes, per thread, sorted by start: the launch's
// enclosing op is found by time when its External id does not name the op
// (mid-2023 traces give runtime events their own External id).
class Enclosing {
 public:
  void add(const Event& ev, uint32_t node) { by_tid_[ev.tid].push_back({ev.ts, ev.ts + ev.dur, node}); }
  void sort() {
    for (auto& [tid, v] : by_tid_) {
      std::sort(v.begin(), v.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
    }
  }
  // The innermost linked op containing `ev` on its thread; -1 when none.
  int64_t find(const Event& ev) const {
    const auto it = by_tid_.find(ev.tid);
    if (it == by_tid_.end()) return -1;
    const std::vector<Span>& v = it->second;
    auto pos = std::upper_bound(v.begin(), v.end(), ev.ts,
                                [](double ts, const Span& s) { return ts < s.begin; });
    // Nested spans: the latest-starting one that still contains the launch.
    for (int steps = 0; pos != v.begin() && steps < 256; ++steps) {
      --pos;
      if (pos->end >= ev.ts + ev.dur) return pos->node;
    }
    return -1;
  }

 private:
  struct Span {
    double begin;
    double end;
    uint32_t node;
  };
  std::unordered_map<int64_t, std::vector<Span>> by_tid_;
};

// A linked op by its profiler event's External id, with that event's span.
struct ExtOp {
  uint32_t node;
  const Event* ev;
};

void attachKernels(Trace& trace, const std::vector<Event>& events, int64_t pid,
                   const std::unordered_map<int64_t, ExtOp>& node_by_ext,
                   const Enclosing& enclosing, LinkStats* stats) {
  std::unordered_map<int64_t, int64_t> node_by_corr;  // launch correlation -> node index
  for (const Event& ev : events) {
    if (ev.cat != Cat::kRuntime || ev.pid != pid || ev.corr < 0) continue;
    // The op the launch's External id names, when the launch lies inside
    // it: mid-2023 files give runtime events their own External id (equal
    // to the correlation), which can name an unrelated later op.
    const auto n = node_by_ext.find(ev.ext);
    const bool inside = n != node_by_ext.end() && n->second.ev->tid == ev.tid &&
                        n->second.ev->ts <= ev.ts &&
                        ev.ts + ev.dur <= n->second.ev->ts + n->second.ev->dur;
    const int64_t node = inside ? n->second.node : enclosing.find(ev);
    if (node >= 0) node_by_corr[ev.corr] = node;
  }
  for (const Event& ev : events) {
    if (ev.cat != Cat::kGpu || ev.corr < 0) continue;
    const auto n = node_by_corr.find(ev.corr);
    if (n == node_by_corr.end()) continue;
    Node& node = trace.nodes[static_cast<size_t>(n->second)];
    KernelEvent k;
    k.node = node.id;
    k.name = trace.strings.intern(ev.name);
    k.start_us = ev.ts;
    k.dur_us = ev.dur;
    k.device = static_cast<int32_t>(ev.device);
    k.stream = ev.stream;
    trace.kernels.push_back(k);
    node.gpu_dur_us = (node.gpu_dur_us < 0 ? 0 : node.gpu_dur_us) + ev.dur;
    ++stats->kernels;
  }
}

void timeIterations(Trace& trace, const std::vector<Event>& events, int64_t pid) {
  std::unordered_map<std::string_view, const Event*> steps;
  for (const Event& ev : events) {
    if (ev.cat == Cat::kHost && ev.pid == pid && isProfilerStep(ev.name)) {
      steps.emplace(ev.name, &ev);
    }
  }
  // The profiler's own ProfilerStep event of the same name first: it is the
  // step whatever the ids say; the marker's linked time otherwise.
  for (Iteration& it : trace.iterations) {
    const auto s = steps.find(it.name);
    if (s != steps.end()) {
      it.start_us = s->second->ts;
      it.dur_us = s->second->dur;
      continue;
    }
    const Node* marker = trace.find(it.marker);
    if (marker != nullptr && marker->dur_us >= 0) {
      it.start_us = marker->start_us;
      it.dur_us = marker->dur_us;
    }
  }
}
// A profiler file of another process whose ids mostly name other ops (rf_ids
// count from 1 in every process, so another run's ids hit, on other ops) is
// refused: its ProfilerStep would pass for this trace's original. Otherwise
// the share that linked is stated.
void checkSameRun(const Trace& trace, const std::vector<Event>& events, const LinkStats& s,
                  const std::string& name) {
  if (s.operators == 0) return;
  const SourceLoc loc{name};
  if (s.linked_operators == 0) {
    ETB_INPUT_ERROR(loc, "no operator of ", trace.path, " links to this profiler file (", s.key,
                    ": ", s.misnamed, " ids name other ops): a profiler file of another run?");
  }
  const bool same_pid = trace.pid == 0 || std::any_of(events.begin(), events.end(), [&](const Event& e) {
    return e.cat == Cat::kHost && e.pid == trace.pid;
  });
  if (!same_pid && s.misnamed > s.linked_nodes) {
    ETB_INPUT_ERROR(loc, "a profiler file of another run: no event of ", trace.path, "'s pid ",
                    trace.pid, ", and ", s.misnamed, " of its ids name other ops (", s.linked_operators,
                    " of ", s.operators, " operators agree)");
  }
  const double pct = 100.0 * static_cast<double>(s.linked_operators) / static_cast<double>(s.operators);
  std::ostringstream os;
  os << name << ": " << s.linked_operators << " of " << s.operators << " operators linked ("
     << static_cast<int>(pct) << "%), " << s.misnamed
     << " ids naming other ops left out; unlinked ops have no original time";
  if (pct < 95) {
    ETB_LOG(kWarn) << os.str();
  } else {
    ETB_LOG(kDebug) << os.str();
  }
}
}  // namespace

LinkStats linkKineto(Trace& trace, const std::string& kineto_path) {
  return linkKinetoText(trace, readFileMaybeGzip(kineto_path, simdjson::SIMDJSON_PADDING),
                        kineto_path);
}

LinkStats linkKinetoText(Trace& trace, std::string text, const std::string& name) {
  text.reserve(text.size() + simdjson::SIMDJSON_PADDING);
  const std::vector<Event> events = loadEvents(name, text);
  std::unordered_map<uint64_t, uint32_t> by_rf;
  for (uint32_t i = 0; i < trace.nodes.size(); ++i) {
    if (trace.nodes[i].rf_id != 0) by_rf.emplace(trace.nodes[i].rf_id, i);
  }
  const Choice choice = choose(trace, events, by_rf);
  const int64_t shift = idShift(trace, events, by_rf, choice);
  LinkStats stats;
  stats.key = std::string(choice.use_rf ? kRfKey : kExtKey);
  std::unordered_map<int64_t, ExtOp> node_by_ext;
  std::unordered_set<uint32_t> linked;
  Enclosing enclosing;
  for (const Event& ev : events) {
    if (ev.cat != Cat::kHost || ev.pid != choice.pid) continue;
    const int64_t id = choice.use_rf ? ev.rf : ev.ext;
    const int64_t key = id > 0 ? id + shift : 0;
    const auto n = key > 0 ? by_rf.find(static_cast<uint64_t>(key)) : by_rf.end();
    if (n == by_rf.end() || linked.count(n->second)) continue;
    Node& node = trace.nodes[n->second];
    // The same id naming another op: the ids of another run (rf_ids count
    // from 1 in every process, so two runs share most of them).
    if (trace.str(node.name) != ev.name) {
      ++stats.misnamed;
      continue;
    }
    linked.insert(n->second);
    node.start_us = ev.ts;
    node.dur_us = ev.dur;
    if (ev.ext >= 0) node_by_ext.emplace(ev.ext, ExtOp{n->second, &ev});
    enclosing.add(ev, n->second);
  }
  enclosing.sort();
  attachKernels(trace, events, choice.pid, node_by_ext, enclosing, &stats);
  timeIterations(trace, events, choice.pid);
  for (const Node& n : trace.nodes) {
    const bool has = n.dur_us >= 0;
    stats.linked_nodes += has ? 1 : 0;
    if (n.kind != NodeKind::kOperator) continue;
    ++stats.operators;
    stats.linked_operators += has ? 1 : 0;
  }
  checkSameRun(trace, events, stats, name);
  return stats;
}

}  // namespace etb::trace
