// SPDX-License-Identifier: MIT
#include "predictor/heap_model.h"

#include "predictor/hidden_buffers.h"
#include "replayer/fresh_pages.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>
#include <utility>


namespace etb::predict {

HeapModel::HeapModel(double mmap_threshold) {
  if (mmap_threshold > kInitial) {
    mmap_threshold_ = std::min(mmap_threshold, kMmapMax);
    trim_threshold_ = 2 * mmap_threshold_;
  }
}

// glibc's _int_malloc serves a request from the bins, then from the top
// chunk, and only one that would grow the heap goes to sysmalloc, which
// maps it when it is at least the mmap threshold.
bool HeapModel::fitsInHeap(double bytes) const {
  for (const auto& [at, chunk] : chunks_) {
    if (chunk.free && chunk.size >= bytes) return true;
  }
  return false;
}

double HeapModel::allocate(uint64_t key, double bytes, bool written) {
  bytes = std::max(bytes, 16.0) + kHeader;
  if (bytes >= mmap_threshold_ && !fitsInHeap(bytes)) {
    // A mapped chunk is whole pages; freeing it sets the threshold to that
    // size, so a request of the same size goes to the heap next time.
    live_[key] = {std::ceil((bytes + kHeader) / kPage) * kPage, true, written};
    return written ? bytes : 0;
  }
  const double before = touched_;
  const double at = fromHeap(bytes);
  live_[key] = {at, false};
  if (!written) return 0;
  touched_ = std::max(touched_, at + bytes);
  return std::max(0.0, at + bytes - std::max(at, before));
}

// Best fit among the free chunks below the top, else the top chunk, grown
// (brk) by what it lacks. Returns the address.
double HeapModel::fromHeap(double bytes) {
  auto best = chunks_.end();
  for (auto it = chunks_.begin(); it != chunks_.end(); ++it) {
    if (!it->second.free || it->second.size < bytes) continue;
    if (std::next(it) == chunks_.end()) break;  // the top chunk: only when nothing fits
    if (best == chunks_.end() || it->second.size < best->second.size) best = it;
  }
  if (best == chunks_.end()) {
    auto last = chunks_.empty() ? chunks_.end() : std::prev(chunks_.end());
    if (last == chunks_.end() || !last->second.free) {
      last = chunks_.emplace(top_, Chunk{0, true}).first;
    }
    if (last->second.size < bytes) {
      top_ += bytes - last->second.size;
      last->second.size = bytes;
    }
    best = last;
  }
  const double at = best->first;
  const double rest = best->second.size - bytes;
  best->second = {bytes, false};
  if (rest > 0) chunks_.emplace(at + bytes, Chunk{rest, true});
  return at;
}

void HeapModel::release(uint64_t key) {
  const auto live = live_.find(key);
  if (live == live_.end()) return;
  const Live l = live->second;
  live_.erase(live);
  if (l.mapped) {
    if (l.written) released_.push_back(l.where / kPage);  // munmap
    // glibc's dynamic threshold: freeing a mapped block raises both.
    if (l.where > mmap_threshold_ && l.where <= kMmapMax) {
      mmap_threshold_ = l.where;
      trim_threshold_ = 2 * l.where;
    }
    return;
  }
  auto it = chunks_.find(l.where);
  if (it == chunks_.end()) return;
  it->second.free = true;
  const auto next = std::next(it);
  if (next != chunks_.end() && next->second.free) {
    it->second.size += next->second.size;
    chunks_.erase(next);
  }
  if (it != chunks_.begin()) {
    const auto prev = std::prev(it);
    if (prev->second.free) {
      prev->second.size += it->second.size;
      chunks_.erase(it);
      it = prev;
    }
  }
  // glibc looks at the top only when the free chunk, merged with its free
  // neighbours, is large (_int_free: FASTBIN_CONSOLIDATION_THRESHOLD,
  // 64 KiB): a small tensor freed next to a large free chunk checks it too.
  if (it->second.size >= 64 * 1024) maybeTrim();
}

void HeapModel::maybeTrim() {
  if (chunks_.empty()) return;
  auto last = std::prev(chunks_.end());
  if (!last->second.free || last->second.size < trim_threshold_) return;
  const double keep = kInitial;  // M_TOP_PAD
  top_ -= last->second.size - keep;
  last->second.size = keep;
  if (touched_ > top_) released_.push_back(std::ceil((touched_ - top_) / kPage));
  touched_ = std::min(touched_, top_);
}

namespace {

// One storage instance of the iteration: a leaf (allocated before the
// iterations, kept), a step's output, or a step's temporary.
struct Instance {
  double bytes = 0;
  bool leaf = false;
  size_t last_use = 0;
  bool written = true;
};

// What a step does to the heap, in order: allocate or free an instance.
struct Event {
  size_t instance = 0;
  bool alloc = true;
  bool first_pass_only = false;  // an object the op's first call leaves
};

struct Timeline {
  std::vector<Instance> instances;
  std::vector<std::vector<Event>> events;  // per step
  std::vector<std::vector<size_t>> frees;  // per step, after its events
  std::vector<size_t> leaves;
};

double storageBytes(const trace::TensorRef& r) {
  const double item = std::max(trace::itemBytes(r), 1);
  return static_cast<double>(r.offset + r.numel) * item;
}

template <typename Fn>
void eachTensor(const trace::Trace& t, const std::vector<trace::Value>& values, Fn fn) {
  for (const trace::Value& v : values) {
    if (v.kind == trace::ValueKind::kTensor) fn(t.tensors[v.tensor]);
    if (v.kind != trace::ValueKind::kList && v.kind != trace::ValueKind::kTuple) continue;
    for (const trace::Value& item : v.items) {
      if (item.kind == trace::ValueKind::kTensor) fn(t.tensors[item.tensor]);
    }
  }
}

class TimelineBuilder {
 public:
  TimelineBuilder(const trace::Trace& t, const std::vector<std::vector<uint32_t>>& children,
                  int threads)
      : t_(t), children_(children), threads_(threads) {}

  Timeline build(const std::vector<replay::SelectedNode>& steps) {
    tl_.events.resize(steps.size());
    tl_.frees.resize(steps.size());
    for (size_t i = 0; i < steps.size(); ++i) {
      if (!steps[i].is_comm) step(i, t_.nodes[steps[i].index]);
    }
    for (size_t k = 0; k < tl_.instances.size(); ++k) {
      const Instance& in = tl_.instances[k];
      if (!in.leaf && !temps_.count(k)) tl_.frees[in.last_use].push_back(k);
    }
    return std::move(tl_);
  }

 private:
  void step(size_t i, const trace::Node& node) {
    std::set<uint64_t> inputs;  // storages the node reads (no allocation)
    eachTensor(t_, node.inputs, [&](const trace::TensorRef& r) {
      if (r.numel == 0) return;
      inputs.insert(r.storage_id);
      use(r, i);
    });
    Local local;
    descend(node, inputs, local);
    // set_(self, <Storage>, ...) makes self a view of a storage it is given
    // (a data loader's batch): nothing is allocated, and et_replay takes that
    // storage from a leaf made before the iterations (plan_builder.cc).
    if (viewsAGivenStorage(node)) {
      eachTensor(t_, node.outputs, [&](const trace::TensorRef& r) {
        if (r.numel > 0) use(r, i);
      });
      tl_.events[i] = withHiddenBuffers(i, node, {});
      return;
    }
    std::set<uint64_t> outs;
    eachTensor(t_, node.outputs, [&](const trace::TensorRef& r) {
      if (r.numel == 0 || inputs.count(r.storage_id)) return;
      outs.insert(r.storage_id);
      const auto l = local.instance.find(r.storage_id);
      size_t k = 0;
      if (l != local.instance.end()) {
        k = l->second;
        tl_.instances[k].last_use = i;
      } else {
        k = make(r, i);
        local.order.push_back({local.children, k});
      }
      current_[r.storage_id] = k;
    });
    // Children's tensors that are not the node's outputs die after the
    // last child that touches them (autograd and the op free them there).
    std::vector<std::pair<size_t, Event>> ev;
    for (const auto& [at, k] : local.order) ev.push_back({2 * at, {k, true}});
    for (const auto& [sid, k] : local.instance) {
      if (outs.count(sid)) continue;
      temps_.insert(k);
      if (superseded(local, sid, k, outs)) tl_.instances[k].written = false;
      ev.push_back({2 * local.last_child[sid] + 1, {k, false}});
    }
    std::stable_sort(ev.begin(), ev.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Event> events;
    for (const auto& e : ev) events.push_back(e.second);
    tl_.events[i] = withHiddenBuffers(i, node, std::move(events));
  }

  bool viewsAGivenStorage(const trace::Node& node) const {
    return t_.name(node) == "aten::set_" &&
           t_.strings.get(node.op_schema).find("Storage source") != std::string_view::npos;
  }

  // The op's own buffers around its recorded outputs' allocations (those
  // the script names move to where it names them; the others follow).
  std::vector<Event> withHiddenBuffers(size_t i, const trace::Node& node, std::vector<Event> events) {
    const std::vector<HiddenAction> script = hiddenBuffers(t_, node, threads_);
    if (script.empty()) return events;
    std::vector<Event> out;
    std::vector<size_t> hidden;
    for (const HiddenAction& a : script) {
      if (a.kind == HiddenAction::kPersist) {
        tl_.instances.push_back({a.bytes, true, i});  // a leaf: never freed
        out.push_back({tl_.instances.size() - 1, true, true});
      } else if (a.kind == HiddenAction::kAlloc) {
        tl_.instances.push_back({a.bytes, false, i});
        hidden.push_back(tl_.instances.size() - 1);
        temps_.insert(hidden.back());
        out.push_back({hidden.back(), true});
      } else if (a.kind == HiddenAction::kFree) {
        out.push_back({hidden.at(a.index), false});
      } else if (a.index < node.outputs.size() && node.outputs[a.index].kind == trace::ValueKind::kTensor) {
        const auto cur = current_.find(t_.tensors[node.outputs[a.index].tensor].storage_id);
        if (cur == current_.end()) continue;
        const auto e = std::find_if(events.begin(), events.end(), [&](const Event& x) {
          return x.alloc && x.instance == cur->second;
        });
        if (e == events.end()) continue;
        out.push_back(*e);
        events.erase(e);
      }
    }
    out.insert(out.end(), events.begin(), events.end());
    return out;
  }

  // The call that allocated a step's storage: its ordinal among the step's
  // calls, the last call nested in it, and whether it was an aten::empty*.
  struct Made {
    size_t at = 0, until = 0;
    bool empty = false;
  };

  struct Local {
    std::map<uint64_t, size_t> instance;    // storages allocated by this step
    std::map<uint64_t, Made> made;          // ... which call allocated them
    std::map<uint64_t, size_t> last_child;  // ... and the last child using them
    std::vector<std::pair<size_t, size_t>> order;  // (child ordinal, instance)
    size_t children = 0;
  };

  // A buffer the op allocated, never passed to another call, and then
  // allocated again at the same size as its result: libtorch 1.13's CPU
  // batch norm backward makes grad_input with empty_like, then, on its
  // contiguous path, makes it again and returns the second. The first is
  // freed with no page of it written (et_replay faults one of the two).
  bool superseded(const Local& local, uint64_t sid, size_t k, const std::set<uint64_t>& outs) const {
    const Made& made = local.made.at(sid);
    if (!made.empty || local.last_child.at(sid) > made.until) return false;
    for (const auto& [other, by] : local.made) {
      if (by.at > made.at && by.empty && outs.count(other) &&
          tl_.instances[local.instance.at(other)].bytes == tl_.instances[k].bytes) {
        return true;
      }
    }
    return false;
  }

  // The copy autograd makes of an in-place op's input before the op
  // overwrites it, when its backward needs the old value (silu_, mul_ by a
  // tensor that requires grad, clamp_): the op's first child, a clone of
  // its self. A replay calls the op on tensors that need no grad (et_replay
  // --autograd off, the default), which makes no such copy.
  bool autogradSavedSelf(const trace::Node& node, const trace::Node& child) const {
    const std::string_view name = t_.name(node);
    if (name.size() < 2 || name.back() != '_' || name[name.size() - 2] == '_') return false;
    if (t_.name(child) != "aten::clone" || node.inputs.empty() || child.inputs.empty()) return false;
    const trace::Value& self = node.inputs.front();
    const trace::Value& src = child.inputs.front();
    return self.kind == trace::ValueKind::kTensor && src.kind == trace::ValueKind::kTensor &&
           t_.tensors[self.tensor].storage_id == t_.tensors[src.tensor].storage_id;
  }

  // The recorded children's new outputs, in call order.
  void descend(const trace::Node& node, const std::set<uint64_t>& inputs, Local& local) {
    bool first = true;
    for (uint32_t c : children_[static_cast<size_t>(&node - t_.nodes.data())]) {
      const trace::Node& child = t_.nodes[c];
      if (child.kind != trace::NodeKind::kOperator) continue;
      if (std::exchange(first, false) && autogradSavedSelf(node, child)) continue;
      const size_t ordinal = local.children++;
      std::set<uint64_t> reads;
      std::vector<uint64_t> made_here;
      eachTensor(t_, child.inputs, [&](const trace::TensorRef& r) {
        reads.insert(r.storage_id);
        if (local.instance.count(r.storage_id)) local.last_child[r.storage_id] = ordinal;
      });
      eachTensor(t_, child.outputs, [&](const trace::TensorRef& r) {
        if (local.instance.count(r.storage_id)) local.last_child[r.storage_id] = ordinal;
        if (r.numel == 0 || inputs.count(r.storage_id) || reads.count(r.storage_id) ||
            local.instance.count(r.storage_id)) {
          return;
        }
        const size_t k = make(r, 0);
        local.instance[r.storage_id] = k;
        local.made[r.storage_id] = {ordinal, ordinal, t_.name(child).rfind("aten::empty", 0) == 0};
        made_here.push_back(r.storage_id);
        local.last_child[r.storage_id] = ordinal;
        local.order.push_back({ordinal, k});
      });
      descend(child, inputs, local);
      for (uint64_t sid : made_here) local.made[sid].until = local.children - 1;
    }
  }

  void use(const trace::TensorRef& r, size_t i) {
    auto it = current_.find(r.storage_id);
    if (it == current_.end()) {
      const size_t k = make(r, i);
      tl_.instances[k].leaf = true;
      tl_.leaves.push_back(k);
      it = current_.emplace(r.storage_id, k).first;
    }
    Instance& in = tl_.instances[it->second];
    in.last_use = std::max(in.last_use, i);
    if (in.leaf) in.bytes = std::max(in.bytes, storageBytes(r));
  }

  size_t make(const trace::TensorRef& r, size_t i) {
    tl_.instances.push_back({storageBytes(r), false, i});
    return tl_.instances.size() - 1;
  }

  const trace::Trace& t_;
  const std::vector<std::vector<uint32_t>>& children_;
  const int threads_;
  Timeline tl_;
  std::unordered_map<uint64_t, size_t> current_;  // storage id -> its live instance
  std::set<size_t> temps_;
};
}  // namespace

HeapScript heapScript(const trace::Trace& t, const std::vector<replay::SelectedNode>& steps,
                      const std::vector<std::vector<uint32_t>>& children, int threads) {
  const Timeline tl = TimelineBuilder(t, children, threads).build(steps);
  HeapScript script;
  for (size_t k : tl.leaves) script.leaves.push_back({k, tl.instances[k].bytes, true, false});
  script.steps.resize(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    for (const Event& e : tl.events[i]) {
      script.steps[i].push_back({e.instance, tl.instances[e.instance].bytes, e.alloc, e.first_pass_only,
                                 tl.instances[e.instance].written});
    }
    for (size_t k : tl.frees[i]) script.steps[i].push_back({k, tl.instances[k].bytes, false, false});
  }
  return script;
}

namespace {
std::vector<std::vector<double>> runPasses(const HeapScript& script, int passes,
                                           double start_threshold, StepReleases* last_releases) {
  HeapModel heap(start_threshold);
  for (const HeapCall& c : script.leaves) heap.allocate(c.key, c.bytes);
  heap.takeReleases();
  std::vector<std::vector<double>> fresh(passes, std::vector<double>(script.steps.size(), 0));
  if (last_releases) last_releases->assign(script.steps.size(), {});
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t i = 0; i < script.steps.size(); ++i) {
      for (const HeapCall& c : script.steps[i]) {
        if (c.first_pass_only && pass > 0) continue;
        if (c.alloc) fresh[pass][i] += heap.allocate(c.key, c.bytes, c.written);
        else heap.release(c.key);
      }
      std::vector<double> made = heap.takeReleases();
      if (last_releases && pass == passes - 1) (*last_releases)[i] = std::move(made);
    }
  }
  return fresh;
}
}  // namespace

std::vector<std::vector<double>> freshBytesPerPass(const HeapScript& script, int passes,
                                                   double start_threshold) {
  return runPasses(script, passes, start_threshold, nullptr);
}

std::vector<double> freshBytesPerStep(const trace::Trace& t,
                                      const std::vector<replay::SelectedNode>& steps,
                                      const std::vector<std::vector<uint32_t>>& children,
                                      double start_threshold, int threads,
                                      StepReleases* releases) {
  // et_replay's two warm-up iterations, then a timed one.
  return runPasses(heapScript(t, steps, children, threads), 3, start_threshold, releases).back();
}

std::vector<double> originalFaultBytesPerStep(const HeapScript& script, double faults_per_iter,
                                              double page_bytes, double min_block,
                                              StepReleases* releases) {
  // A later iteration's blocks: those of the first call only are not.
  const auto offers = [&](const HeapCall& c) {
    return c.alloc && !c.first_pass_only && c.written && c.bytes >= min_block;
  };
  std::vector<double> offered(script.steps.size(), 0);
  double pages = 0;
  for (size_t i = 0; i < script.steps.size(); ++i) {
    for (const HeapCall& c : script.steps[i]) {
      if (!offers(c)) continue;
      offered[i] += std::ceil(c.bytes / page_bytes) * page_bytes;
      pages += std::ceil(c.bytes / page_bytes);
    }
  }
  const double share = pages > 0 ? std::min(1.0, std::max(0.0, faults_per_iter) / pages) : 0;
  for (double& b : offered) b *= share;
  if (releases) {
    // As FreshPages hands them back: whole pages of each block, the
    // remainder carried.
    releases->assign(script.steps.size(), {});
    double carry = 0;
    for (size_t i = 0; i < script.steps.size(); ++i) {
      for (const HeapCall& c : script.steps[i]) {
        if (!offers(c)) continue;
        const auto block = static_cast<uint64_t>(std::ceil(c.bytes / page_bytes));
        const uint64_t back = replay::wholePagesBack(share, block, carry);
        if (back > 0) (*releases)[i].push_back(static_cast<double>(back));
      }
    }
  }
  return offered;
}

}  // namespace etb::predict
