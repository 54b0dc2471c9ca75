// SPDX-License-Identifier: MIT
#include "composer/world_size.h"

#include <algorithm>
#include <string>

#include "composer/node_copy.h"
#include "composer/node_work.h"
#include "core/base/error.h"

namespace etb::compose {
namespace {
using trace::CommInfo;
using trace::CommType;
using trace::Node;
using trace::Trace;
using trace::Value;
using trace::ValueKind;

SourceLoc locOf(const Trace& t, const Node& n) {
  return SourceLoc{t.path, 0, n.id, std::string(t.name(n))};
}

bool isWholeWorld(const trace::ProcessGroup& g, int64_t world) {
  if (static_cast<int64_t>(g.ranks.size()) != world) return false;
  for (int64_t r = 0; r < world; ++r) {
    if (g.ranks[static_cast<size_t>(r)] != r) return false;
  }
  return true;
}

bool isNumber(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// New groups and, per old group, the new group index for each block of W
// ranks.
struct Tiling {
  std::vector<trace::ProcessGroup> groups;
  std::vector<std::vector<int32_t>> index;  // [old group][block]
};

Tiling tileGroups(const Trace& t, int64_t w, int64_t n) {
  Tiling out;
  const bool whole_blocks = n >= w && n % w == 0;
  const int64_t blocks = whole_blocks ? n / w : 1;
  int64_t max_num = 0;
  for (const auto& g : t.process_groups) {
    if (isNumber(g.name)) max_num = std::max<int64_t>(max_num, std::stoll(g.name));
  }
  for (const trace::ProcessGroup& g : t.process_groups) {
    std::vector<int32_t> per_block;
    if (isWholeWorld(g, w)) {
      trace::ProcessGroup ng = g;
      ng.ranks.resize(static_cast<size_t>(n));
      for (int64_t r = 0; r < n; ++r) ng.ranks[static_cast<size_t>(r)] = r;
      ng.size = n;
      out.groups.push_back(ng);
      per_block.assign(static_cast<size_t>(blocks), static_cast<int32_t>(out.groups.size() - 1));
    } else {
      if (!whole_blocks) {
        ETB_INPUT_ERROR(SourceLoc{t.path}, "world size ", w, " -> ", n, ": process group \"",
                        g.name, "\" is a sub-group; the new world must be a multiple of ", w,
                        " so that it can be tiled");
      }
      for (int64_t b = 0; b < blocks; ++b) {
        trace::ProcessGroup ng = g;
        for (int64_t& r : ng.ranks) r += b * w;
        if (b > 0) {
          ng.name = isNumber(g.name) ? std::to_string(std::stoll(g.name) + b * (max_num + 1))
                                     : g.name + "_" + std::to_string(b);
        }
        out.groups.push_back(ng);
        per_block.push_back(static_cast<int32_t>(out.groups.size() - 1));
      }
    }
    out.index.push_back(std::move(per_block));
  }
  return out;
}

// Splits `total` rows evenly over n peers (the first ones take the rest).
std::vector<int64_t> evenSplits(const std::vector<int64_t>& old, int64_t n) {
  int64_t total = 0;
  for (int64_t s : old) total += s;
  std::vector<int64_t> out(static_cast<size_t>(n), total / n);
  for (int64_t i = 0; i < total % n; ++i) ++out[static_cast<size_t>(i)];
  return out;
}

// Multiplies the tensors in `vals` by num/den along their first dimension.
void resizeTensors(Trace& t, const Node& n, std::vector<Value>& vals, uint64_t num, uint64_t den) {
  for (Value& v : vals) {
    if (v.kind == ValueKind::kList || v.kind == ValueKind::kTuple) {
      resizeTensors(t, n, v.items, num, den);
      continue;
    }
    if (v.kind != ValueKind::kTensor) continue;
    trace::TensorRef& r = t.tensors[v.tensor];
    std::vector<int64_t> shape = t.list(r.shape);
    if (shape.empty()) continue;
    const uint64_t d0 = static_cast<uint64_t>(shape[0]);
    if ((d0 * num) % den != 0) {
      ETB_INPUT_ERROR(locOf(t, n), "a collective tensor with first dimension ", d0,
                      " cannot be resized by ", num, "/", den, " for the new world size");
    }
    shape[0] = static_cast<int64_t>(d0 * num / den);
    r.shape = t.lists.intern(shape);
    r.numel = r.numel * num / den;
  }
}

std::string listText(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

void setAttr(Trace& t, Node& n, std::string_view name, int64_t i, const std::string* s = nullptr) {
  for (trace::Attr& a : n.attrs) {
    if (t.str(a.name) != name) continue;
    if (s != nullptr && a.value.kind == ValueKind::kString) a.value.s = t.strings.intern(*s);
    if (s == nullptr && a.value.kind == ValueKind::kInt) a.value.i = i;
  }
}
}  // namespace

int64_t recordedWorld(const std::vector<Trace>& ranks) {
  if (ranks.size() > 1) return static_cast<int64_t>(ranks.size());
  if (ranks.empty()) return 0;
  if (ranks[0].world_size > 0) return ranks[0].world_size;
  int64_t w = 1;
  for (const auto& g : ranks[0].process_groups) w = std::max<int64_t>(w, static_cast<int64_t>(g.ranks.size()));
  return w;
}

namespace {
class RankBuilder {
 public:
  RankBuilder(Trace& t, const Tiling& tiling, int64_t w, int64_t n, int64_t rank, WorldStats& s)
      : t_(t), tiling_(tiling), w_(w), n_(n), rank_(rank), block_(n >= w ? rank / w : 0), stats_(s) {}

  void run() {
    for (Node& node : t_.nodes) {
      if (node.comm >= 0) rewrite(node, t_.comms[static_cast<size_t>(node.comm)]);
    }
    t_.process_groups = tiling_.groups;
    t_.rank = rank_;
    t_.world_size = n_;
    writeProcessGroupNode(t_);
  }

 private:
  void rewrite(Node& node, CommInfo& c) {
    const int64_t old_size = c.pg >= 0 ? static_cast<int64_t>(
                                             t_.process_groups[static_cast<size_t>(c.pg)].ranks.size())
                                       : w_;
    const int64_t shift = block_ * w_;
    if (c.pg >= 0) {
      c.pg = tiling_.index[static_cast<size_t>(c.pg)][static_cast<size_t>(block_)];
      c.pg_name = t_.strings.intern(tiling_.groups[static_cast<size_t>(c.pg)].name);
    }
    const int64_t size = c.pg >= 0 ? static_cast<int64_t>(tiling_.groups[static_cast<size_t>(c.pg)].ranks.size()) : n_;
    if (size == old_size) {  // a tiled sub-group: same sizes, shifted ranks
      if (c.root >= 0) c.root += shift;
      if (c.peer >= 0) c.peer += shift;
    } else {
      if (c.group_rank >= 0) c.group_rank = rank_;
      resize(node, c, static_cast<uint64_t>(old_size), static_cast<uint64_t>(size));
    }
    const bool by_out = c.type == CommType::kAllGather || c.type == CommType::kGather;
    c.bytes = (by_out ? c.out_elems : c.in_elems) * static_cast<uint64_t>(trace::dtypeSize(c.dtype));
    updateArgs(node, c, size, size == old_size ? shift : 0);  // world groups start at 0
  }

  void resize(Node& node, CommInfo& c, uint64_t old_n, uint64_t n) {
    const uint64_t in = c.in_elems, out = c.out_elems;
    switch (c.type) {
      case CommType::kAllGather:
        need(node, out % n == 0, out, n);
        c.in_elems = out / n;
        resizeTensors(t_, node, node.inputs, old_n, n);
        break;
      case CommType::kReduceScatter:
        need(node, in % n == 0, in, n);
        c.out_elems = in / n;
        resizeTensors(t_, node, node.outputs, old_n, n);
        break;
      case CommType::kGather:
        c.out_elems = in * n;
        resizeTensors(t_, node, node.outputs, n, old_n);
        break;
      case CommType::kScatter:
        c.in_elems = out * n;
        resizeTensors(t_, node, node.inputs, n, old_n);
        break;
      case CommType::kAllToAll:
      case CommType::kAllToAllV:
        if (!c.in_splits.empty()) c.in_splits = evenSplits(c.in_splits, static_cast<int64_t>(n));
        if (!c.out_splits.empty()) c.out_splits = evenSplits(c.out_splits, static_cast<int64_t>(n));
        break;
      default:
        ++stats_.kept;
        return;
    }
    ++stats_.resized;
  }

  void need(const Node& node, bool ok, uint64_t elems, uint64_t n) {
    if (!ok) {
      ETB_INPUT_ERROR(locOf(t_, node), "message of ", elems, " elements does not divide by the new group size ", n,
                      ": all_gather and reduce_scatter keep their full size and reshard it (FSDP's "
                      "parameters), which a gather of per-rank values (dist.all_gather of a loss) "
                      "does not allow; choose a world size that divides it");
    }
  }

  // The recorded arguments the reader derives the CommInfo from.
  void updateArgs(Node& node, const CommInfo& c, int64_t size, int64_t shift) {
    const std::string in_splits = listText(c.in_splits), out_splits = listText(c.out_splits);
    const std::string pg = std::string(t_.str(c.pg_name));
    setAttr(t_, node, "in_msg_nelems", static_cast<int64_t>(c.in_elems));
    setAttr(t_, node, "out_msg_nelems", static_cast<int64_t>(c.out_elems));
    setAttr(t_, node, "in_split_size", 0, &in_splits);
    setAttr(t_, node, "out_split_size", 0, &out_splits);
    setAttr(t_, node, "pg_size", size);
    if (!pg.empty()) setAttr(t_, node, "pg_name", 0, &pg);
    for (trace::Attr& a : node.attrs) {
      if (t_.str(a.name) == "global_rank_start" && a.value.kind == ValueKind::kInt) a.value.i += shift;
    }
    if (t_.name(node) != "record_param_comms") return;
    // Positional layout: [data, seq, (pg_name, pg_desc), rank, name, in_split,
    // out_split, start, stride, world_size].
    std::vector<Value>& in = node.inputs;
    size_t i = 0;
    while (i < in.size() && in[i].kind != ValueKind::kString) {
      if (in[i].kind == ValueKind::kTuple && !in[i].items.empty() &&
          in[i].items[0].kind == ValueKind::kString && !pg.empty()) {
        in[i].items[0].s = t_.strings.intern(pg);
      }
      ++i;
    }
    if (i > 0 && in[i - 1].kind == ValueKind::kInt && c.group_rank >= 0) in[i - 1].i = c.group_rank;
    ++i;
    for (const std::vector<int64_t>* splits : {&c.in_splits, &c.out_splits}) {
      if (i >= in.size() || in[i].kind != ValueKind::kList) break;
      Value& list = in[i++];
      list.items.clear();
      for (int64_t s : *splits) list.items.push_back(trace::makeInt(t_, s));
    }
    const size_t tail = i;
    while (i < in.size() && in[i].kind == ValueKind::kInt) ++i;
    if (i > tail) in[i - 1].i = size;
    if (i - tail >= 3) in[tail].i += shift;
  }

  Trace& t_;
  const Tiling& tiling_;
  int64_t w_, n_, rank_, block_;
  WorldStats& stats_;
};
}  // namespace

std::vector<Trace> changeWorldSize(const std::vector<Trace>& ranks, int64_t new_world, WorldStats* stats) {
  if (ranks.empty()) ETB_INPUT_ERROR(SourceLoc{"--world-size"}, "no input trace");
  if (new_world < 1) ETB_INPUT_ERROR(SourceLoc{"--world-size"}, "world size must be >= 1, got ", new_world);
  const int64_t w = recordedWorld(ranks);
  WorldStats local;
  WorldStats& s = stats != nullptr ? *stats : local;
  s.old_world = w;
  s.new_world = new_world;
  std::vector<Trace> out;
  for (int64_t r = 0; r < new_world; ++r) {
    Trace t = ranks[static_cast<size_t>(r % static_cast<int64_t>(ranks.size()))];
    const Tiling tiling = tileGroups(t, w, new_world);
    RankBuilder(t, tiling, w, new_world, r, s).run();
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace etb::compose
