// SPDX-License-Identifier: MIT
#include "composer/scale.h"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

#include "composer/node_work.h"
#include "composer/schema_args.h"
#include "composer/shape_check.h"
#include "core/base/error.h"

namespace etb::compose {
namespace {
using trace::Node;
using trace::Trace;
using trace::TensorRef;
using trace::Value;
using trace::ValueKind;

int64_t product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<int64_t>());
}

// Strides for `shape` that keep the dimension order of the old strides when
// they were dense in some order; otherwise each stride that is a multiple of
// `from` scales (a view into a larger buffer).
std::vector<int64_t> newStrides(const std::vector<int64_t>& old_shape,
                                const std::vector<int64_t>& old_strides,
                                const std::vector<int64_t>& shape, int64_t from, int64_t to) {
  const size_t n = shape.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return old_strides[a] > old_strides[b]; });
  bool dense = true;
  int64_t expect = 1;
  for (size_t k = n; k-- > 0;) {
    const size_t d = order[k];
    if (old_shape[d] != 1 && old_strides[d] != expect) dense = false;
    expect *= std::max<int64_t>(old_shape[d], 1);
  }
  std::vector<int64_t> out(n);
  if (dense) {
    int64_t s = 1;
    for (size_t k = n; k-- > 0;) {
      out[order[k]] = s;
      s *= std::max<int64_t>(shape[order[k]], 1);
    }
    return out;
  }
  for (size_t d = 0; d < n; ++d) {
    out[d] = old_strides[d] >= from && old_strides[d] % from == 0 ? old_strides[d] / from * to
                                                                   : old_strides[d];
  }
  return out;
}

bool scaleRef(Trace& t, TensorRef& r, int64_t from, int64_t to) {
  const std::vector<int64_t> shape = t.list(r.shape);
  if (std::find(shape.begin(), shape.end(), from) == shape.end()) return false;
  std::vector<int64_t> scaled = shape;
  std::replace(scaled.begin(), scaled.end(), from, to);
  if (r.has_strides && t.list(r.strides).size() == shape.size()) {
    r.strides = t.lists.intern(newStrides(shape, t.list(r.strides), scaled, from, to));
  }
  r.shape = t.lists.intern(scaled);
  r.numel = static_cast<uint64_t>(product(scaled));
  const int64_t off = static_cast<int64_t>(r.offset);
  if (off >= from && off % from == 0) r.offset = static_cast<uint64_t>(off / from * to);
  return true;
}

uint64_t scaleInts(Value& v, int64_t from, int64_t to) {
  uint64_t n = 0;
  if (v.kind == ValueKind::kInt && v.i == from) {
    v.i = to;
    ++n;
  }
  if (v.kind == ValueKind::kList || v.kind == ValueKind::kTuple) {
    for (Value& x : v.items) n += scaleInts(x, from, to);
  }
  return n;
}

// Int arguments that name a dimension or a position along one (select's
// index, transpose's dim0, flatten's start_dim), and the dtype, layout and
// memory_format codes recorded as Ints: a size substitution never touches
// them. At 2=4 dim=2 stays 2; select's index 16 along a dimension of 32
// stays 16 when a batch of 16 doubles; at 4=8 to(dtype=4), int64, must not
// become ComplexHalf's 8.
bool isPositionArg(const c10::Argument& a) {
  static const std::set<std::string> kDims = {"dim", "dim0", "dim1", "dims", "start_dim", "end_dim",
                                              "source", "destination", "axis"};
  const c10::TypeKind kind = realKind(a);
  return kind == c10::TypeKind::ScalarTypeType || kind == c10::TypeKind::LayoutType ||
         kind == c10::TypeKind::MemoryFormatType || kDims.count(a.name()) > 0 ||
         (a.type()->kind() == c10::TypeKind::IntType && a.name() == "index");
}

void setAttrInt(Trace& t, Node& n, std::string_view name, int64_t v) {
  for (trace::Attr& a : n.attrs) {
    if (t.str(a.name) == name && a.value.kind == ValueKind::kInt) a.value.i = v;
  }
}

// Element counts follow the call's tensors; byte counts follow the counts.
void rescaleComm(Trace& t, Node& n, const CallSizes& before) {
  trace::CommInfo& c = t.comms[static_cast<size_t>(n.comm)];
  const CallSizes after = callSizes(t, n);
  auto follow = [](uint64_t elems, uint64_t was, uint64_t now) {
    return was == 0 ? elems : static_cast<uint64_t>(
                                  static_cast<double>(elems) * static_cast<double>(now) /
                                  static_cast<double>(was) + 0.5);
  };
  c.in_elems = follow(c.in_elems, before.in_elems, after.in_elems);
  c.out_elems = follow(c.out_elems, before.out_elems, after.out_elems);
  const int size = std::max(1, trace::dtypeSize(c.dtype));
  if (c.bytes > 0) c.bytes = std::max(c.in_elems, c.out_elems) * static_cast<uint64_t>(size);
  setAttrInt(t, n, "in_msg_nelems", static_cast<int64_t>(c.in_elems));
  setAttrInt(t, n, "out_msg_nelems", static_cast<int64_t>(c.out_elems));
}
// An as_strided view (aten::as_strided(self, size, stride, storage_offset)):
// where it sits in its base's storage, and how many elements it covers.
struct ViewSite {
  size_t node;
  uint32_t base;  // the base's TensorRef
  int64_t offset;
  int64_t numel;
};

int64_t listProduct(const Value& v) {
  int64_t p = 1;
  for (const Value& x : v.items) p *= x.kind == ValueKind::kInt ? x.i : 0;
  return p;
}

std::vector<ViewSite> viewSites(const Trace& t) {
  std::vector<ViewSite> out;
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const Node& n = t.nodes[i];
    if (t.name(n) != "aten::as_strided" || n.inputs.size() < 2 ||
        n.inputs[0].kind != ValueKind::kTensor || n.inputs[1].kind != ValueKind::kList) {
      continue;
    }
    const bool has_offset = n.inputs.size() > 3 && n.inputs[3].kind == ValueKind::kInt;
    out.push_back({i, n.inputs[0].tensor, has_offset ? n.inputs[3].i : 0, listProduct(n.inputs[1])});
  }
  return out;
}

// A flat buffer that as_strided views tile, each view starting where the one
// before it ends (DDP's gradient buckets; an optimizer's flattened
// parameters): after the substitution the views still tile it, at offsets
// that are the running sums of their new sizes, and the buffer is their
// total. `before` holds the views as recorded; `keep` marks the refs whose
// shape is now set. Returns the buffers repacked. A buffer whose views
// overlap, leave gaps or fall short of it is left as recorded (the shape
// check then names the view that no longer fits).
uint64_t repackTiledViews(Trace& t, const std::vector<ViewSite>& before,
                          const std::vector<uint64_t>& old_offsets, std::vector<bool>* keep) {
  std::map<uint64_t, std::vector<const ViewSite*>> by_storage;
  for (const ViewSite& v : before) {
    const TensorRef& base = t.tensors[v.base];
    if (base.storage_id != 0 && !(*keep)[v.base]) by_storage[base.storage_id].push_back(&v);
  }
  // The refs of those storages, in one pass over the trace's tensors.
  std::unordered_map<uint64_t, std::vector<size_t>> refs;
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    if (by_storage.count(t.tensors[k].storage_id)) refs[t.tensors[k].storage_id].push_back(k);
  }
  uint64_t repacked = 0;
  for (const auto& [storage, views] : by_storage) {
    const trace::ListId base_list = t.tensors[views.front()->base].shape;
    const std::vector<int64_t> base_shape = t.list(base_list);
    if (base_shape.size() != 1 || old_offsets[views.front()->base] != 0) continue;
    // Offset -> (old size, new size), each offset one size.
    std::map<int64_t, std::pair<int64_t, int64_t>> tiles;
    bool ok = true;
    for (const ViewSite* v : views) {
      const int64_t now = listProduct(t.nodes[v->node].inputs[1]);
      auto [it, fresh] = tiles.emplace(v->offset, std::make_pair(v->numel, now));
      ok = ok && t.tensors[v->base].shape == base_list &&
           (fresh || it->second == std::make_pair(v->numel, now));
    }
    int64_t end = 0;
    bool changed = false;
    for (const auto& [offset, sizes] : tiles) {
      ok = ok && offset == end;
      end += sizes.first;
      changed = changed || sizes.first != sizes.second;
    }
    if (!ok || !changed || end != base_shape[0]) continue;
    std::map<int64_t, std::pair<int64_t, int64_t>> moved;  // old offset -> (new offset, new size)
    int64_t total = 0;
    for (const auto& [offset, sizes] : tiles) {
      moved[offset] = {total, sizes.second};
      total += sizes.second;
    }
    for (const ViewSite* v : views) {
      Node& n = t.nodes[v->node];
      if (n.inputs.size() > 3 && n.inputs[3].kind == ValueKind::kInt) n.inputs[3].i = moved[v->offset].first;
    }
    const trace::ListId flat = t.lists.intern({total}), unit = t.lists.intern({1});
    for (size_t k : refs[storage]) {
      TensorRef& r = t.tensors[k];
      if (r.shape == base_list && old_offsets[k] == 0 && !(*keep)[k]) {
        r.shape = flat;
        r.numel = static_cast<uint64_t>(total);
        if (r.has_strides) r.strides = unit;
        (*keep)[k] = true;
        continue;
      }
      // A view's own refs (the tensor as_strided made, the copies into it):
      // at a tile's recorded offset with the tile's new size (the offset
      // scaleRef scaled as a multiple of the dimension is not a tile's).
      auto m = moved.find(static_cast<int64_t>(old_offsets[k]));
      if (m != moved.end() && static_cast<int64_t>(r.numel) == m->second.second) {
        r.offset = static_cast<uint64_t>(m->second.first);
      }
    }
    ++repacked;
  }
  return repacked;
}
}  // namespace

ScaleStats scaleDimension(Trace& t, int64_t from, int64_t to) {
  if (from < 2 || to < 1) {
    ETB_INPUT_ERROR(SourceLoc{"--scale-dim"}, "dimension substitution ", from, "=", to,
                    ": the old size must be >= 2 and the new one >= 1");
  }
  ScaleStats stats;
  std::vector<double> work_before(t.nodes.size());
  std::vector<CallSizes> comm_before(t.nodes.size());
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    work_before[i] = nodeWork(t, t.nodes[i]);
    if (t.nodes[i].comm >= 0) comm_before[i] = callSizes(t, t.nodes[i]);
  }
  const std::vector<ViewSite> views = viewSites(t);
  std::vector<RecordedReshape> reshapes;
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const Node& n = t.nodes[i];
    const std::string_view name = t.name(n);
    if ((name != "aten::view" && name != "aten::reshape" && name != "aten::_unsafe_view") ||
        n.inputs.size() < 2 || n.inputs[0].kind != ValueKind::kTensor || n.inputs[1].kind != ValueKind::kList) {
      continue;
    }
    std::vector<int64_t> sizes;
    for (const Value& x : n.inputs[1].items) sizes.push_back(x.kind == ValueKind::kInt ? x.i : -1);
    reshapes.push_back({i, t.list(t.tensors[n.inputs[0].tensor].shape), std::move(sizes)});
  }
  std::vector<uint64_t> old_offsets;
  if (!views.empty()) {
    old_offsets.reserve(t.tensors.size());
    for (const TensorRef& r : t.tensors) old_offsets.push_back(r.offset);
  }
  std::vector<bool> substituted(t.tensors.size(), false);
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    substituted[k] = scaleRef(t, t.tensors[k], from, to);
    stats.shapes += substituted[k] ? 1 : 0;
  }
  if (stats.shapes == 0) {
    ETB_INPUT_ERROR(SourceLoc{t.path}, "dimension ", from, " does not occur in any tensor shape");
  }
  SchemaArgs positions(isPositionArg);
  for (Node& n : t.nodes) {
    if (n.comm >= 0) continue;
    const std::vector<size_t>& skip = positions.of(t, n);
    for (size_t a = 0; a < n.inputs.size(); ++a) {
      if (std::find(skip.begin(), skip.end(), a) == skip.end()) stats.int_args += scaleInts(n.inputs[a], from, to);
    }
  }
  if (!views.empty()) stats.repacked = repackTiledViews(t, views, old_offsets, &substituted);
  // Sizes libtorch computes from the substituted ones (a flattened bucket's
  // total) follow them; a substituted size libtorch disagrees with is the
  // check's to refuse.
  stats.derived = deriveOutputShapes(t, substituted, reshapes, from);
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    Node& n = t.nodes[i];
    if (n.comm >= 0) {
      trace::CommInfo& c = t.comms[static_cast<size_t>(n.comm)];
      std::replace(c.in_splits.begin(), c.in_splits.end(), from, to);
      std::replace(c.out_splits.begin(), c.out_splits.end(), from, to);
      rescaleComm(t, n, comm_before[i]);
      ++stats.comms;
    }
    const double after = nodeWork(t, n);
    if (n.dur_us > 0 && work_before[i] > 0 && after != work_before[i]) {
      n.dur_us *= after / work_before[i];
      ++stats.timed_nodes;
    }
  }
  return stats;
}

trace::DType parseDtypeFlag(const std::string& text) {
  static const std::array<std::pair<std::string_view, trace::DType>, 4> kShort{{
      {"bf16", trace::DType::kBFloat16},
      {"fp16", trace::DType::kHalf},
      {"fp32", trace::DType::kFloat},
      {"fp64", trace::DType::kDouble},
  }};
  for (const auto& [name, d] : kShort) {
    if (text == name) return d;
  }
  const trace::DType d = trace::parseDType(text);
  if (d == trace::DType::kUnknown || text == "half" || d == trace::DType::kBool) {
    if (text == "half") return trace::DType::kHalf;
    ETB_INPUT_ERROR(SourceLoc{"--dtype"}, "unknown dtype \"", text,
                    "\" (bf16, fp16, fp32, fp64, or a name like bfloat16, float16, int64)");
  }
  return d;
}

}  // namespace etb::compose
