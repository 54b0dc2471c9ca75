// SPDX-License-Identifier: MIT
#include "predictor/layout_model.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "core/pytorch_et/op_schema.h"

namespace etb::predict {
namespace {

// A tensor's dims from the outermost (largest stride) to the innermost.
using Order = std::vector<int>;

Order identity(size_t rank) {
  Order o(rank);
  std::iota(o.begin(), o.end(), 0);
  return o;
}

Order orderOfStrides(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  Order o = identity(shape.size());
  if (strides.size() != shape.size()) return o;
  // Equal strides (dims of size 1) keep their places.
  std::stable_sort(o.begin(), o.end(), [&](int a, int b) { return strides[a] > strides[b]; });
  return o;
}

bool nhwc(const Order& o, const std::vector<int64_t>& shape) {
  return shape.size() == 4 && o == Order{0, 2, 3, 1} && shape[1] > 1 && shape[2] * shape[3] > 1;
}

// ATen ops whose outputs are contiguous whatever their inputs' layout.
const std::set<std::string_view> kContiguousOut = {
    "aten::layer_norm", "aten::native_layer_norm", "aten::softmax", "aten::_softmax",
    "aten::log_softmax", "aten::_log_softmax", "aten::linear", "aten::matmul", "aten::mm",
    "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::native_layer_norm_backward",
    "aten::_softmax_backward_data", "aten::_log_softmax_backward_data"};

const std::set<std::string_view> kConvForward = {
    "aten::conv2d", "aten::convolution", "aten::_convolution", "aten::mkldnn_convolution",
    "aten::_convolution_mode", "aten::conv_transpose2d", "aten::_slow_conv2d_forward",
    "aten::thnn_conv2d"};

// The position of the schema argument named `arg` among the recorded inputs;
// nullopt when the schema has none.
std::optional<size_t> schemaArg(std::string_view schema, std::string_view arg) {
  const std::vector<std::string_view> names = trace::schemaArgNames(schema);
  const auto it = std::find(names.begin(), names.end(), arg);
  if (it == names.end()) return std::nullopt;
  return static_cast<size_t>(it - names.begin());
}

std::vector<int64_t> intsOf(const trace::Value& v) {
  std::vector<int64_t> out;
  if (v.kind == trace::ValueKind::kInt) out.push_back(v.i);
  if (v.kind != trace::ValueKind::kList && v.kind != trace::ValueKind::kTuple) return out;
  for (const trace::Value& item : v.items) {
    if (item.kind == trace::ValueKind::kInt) out.push_back(item.i);
  }
  return out;
}

class Layouts {
 public:
  explicit Layouts(const trace::Trace& t) : t_(t) {}

  // The node's channels-last inputs; with `update`, its outputs' layouts
  // are recorded for the ops after it.
  uint32_t node(const trace::Node& n, bool update) {
    ins_.clear();
    uint32_t bits = 0;
    for (size_t a = 0; a < n.inputs.size(); ++a) {
      const trace::Value& v = n.inputs[a];
      const auto take = [&](const trace::Value& x, bool listed) {
        if (x.kind != trace::ValueKind::kTensor) return;
        const trace::TensorRef& r = t_.tensors[x.tensor];
        const std::vector<int64_t>& shape = t_.list(r.shape);
        Order o = orderOf(r);
        if (!listed && a < 32 && nhwc(o, shape)) bits |= 1u << a;
        ins_.push_back({a, &r, std::move(o), listed});
      };
      take(v, false);
      if (v.kind == trace::ValueKind::kList || v.kind == trace::ValueKind::kTuple) {
        for (const trace::Value& item : v.items) take(item, true);
      }
    }
    for (const trace::Value& v : n.outputs) {
      if (!update) break;
      if (v.kind != trace::ValueKind::kTensor) continue;
      const trace::TensorRef& r = t_.tensors[v.tensor];
      if (r.tensor_id == 0) continue;
      const Order o = r.has_strides ? orderOfStrides(t_.list(r.shape), t_.list(r.strides))
                                    : outputOrder(n, r, &v - n.outputs.data());
      if (o == identity(o.size())) {
        orders_.erase(r.tensor_id);
      } else {
        orders_[r.tensor_id] = o;
      }
    }
    return bits;
  }

 private:
  struct In {
    size_t arg;
    const trace::TensorRef* ref;
    Order order;
    bool listed;  // an item of a tensor list (cat's)
  };

  Order orderOf(const trace::TensorRef& r) {
    const std::vector<int64_t>& shape = t_.list(r.shape);
    if (r.has_strides) return orderOfStrides(shape, t_.list(r.strides));
    const auto it = orders_.find(r.tensor_id);
    if (it == orders_.end() || it->second.size() != shape.size()) return identity(shape.size());
    return it->second;
  }

  const In* input(size_t arg) const {
    for (const In& i : ins_) {
      if (i.arg == arg && !i.listed) return &i;
    }
    return nullptr;
  }

  Order outputOrder(const trace::Node& n, const trace::TensorRef& out, size_t index) const {
    const std::string_view name = t_.name(n);
    const std::vector<int64_t>& shape = t_.list(out.shape);
    const Order plain = identity(shape.size());
    const In* self = input(0);
    const auto intArg = [&](size_t a) -> std::optional<int64_t> {
      if (a >= n.inputs.size() || n.inputs[a].kind != trace::ValueKind::kInt) return std::nullopt;
      return n.inputs[a].i;
    };
    if (name == "aten::permute" && self && n.inputs.size() > 1) {
      std::vector<int64_t> dims = intsOf(n.inputs[1]);
      if (dims.size() != self->order.size() || dims.size() != shape.size()) return plain;
      for (int64_t& d : dims) d = d < 0 ? d + static_cast<int64_t>(dims.size()) : d;
      // Output dim j is input dim dims[j]; the output's order lists, for
      // each input dim from the outermost, the output dim that holds it.
      Order o;
      for (const int d : self->order) {
        const auto j = std::find(dims.begin(), dims.end(), d);
        if (j == dims.end()) return plain;
        o.push_back(static_cast<int>(j - dims.begin()));
      }
      return o;
    }
    if ((name == "aten::transpose" || name == "aten::transpose_" || name == "aten::swapaxes" ||
         name == "aten::t" || name == "aten::t_") && self && self->order.size() == shape.size()) {
      const int rank = static_cast<int>(shape.size());
      int64_t d0 = 0, d1 = 1;
      if (name != "aten::t" && name != "aten::t_") {
        if (!intArg(1) || !intArg(2)) return plain;
        d0 = *intArg(1) < 0 ? *intArg(1) + rank : *intArg(1);
        d1 = *intArg(2) < 0 ? *intArg(2) + rank : *intArg(2);
      }
      Order o = self->order;
      for (int& d : o) d = d == d0 ? static_cast<int>(d1) : d == d1 ? static_cast<int>(d0) : d;
      return o;
    }
    if (name == "aten::as_strided" || name == "aten::empty_strided" ||
        name == "aten::new_empty_strided") {
      const size_t a = name == "aten::empty_strided" ? 1 : 2;
      if (a < n.inputs.size()) return orderOfStrides(shape, intsOf(n.inputs[a]));
      return plain;
    }
    if (kContiguousOut.count(name)) return plain;
    const bool conv_backward = name == "aten::convolution_backward";
    if (kConvForward.count(name) || conv_backward) {
      // oneDNN writes channels-last when the input or the weight is; a
      // backward's weight gradient takes the weight's layout.
      const In* x = input(conv_backward ? 1 : 0);
      const In* w = input(conv_backward ? 2 : 1);
      bool any = false;
      for (const In* i : {x, w}) any = any || (i && nhwc(i->order, t_.list(i->ref->shape)));
      if (conv_backward && index == 1) return w ? w->order : plain;
      return any && shape.size() == 4 ? Order{0, 2, 3, 1} : plain;
    }
    if (const std::optional<size_t> mf = schemaArg(t_.str(n.op_schema), "memory_format")) {
      // c10::MemoryFormat: 0 contiguous, 1 preserve, 2 channels-last.
      if (const std::optional<int64_t> f = intArg(*mf); f && *f != 1) {
        return *f == 2 && shape.size() == 4 ? Order{0, 2, 3, 1} : plain;
      }
    }
    // The first input of the output's shape decides (a broadcast operand
    // does not).
    for (const In& i : ins_) {
      if (!i.listed && t_.list(i.ref->shape) == shape) return i.order;
    }
    // A same-rank view or op over one tensor (expand, slice, narrow,
    // pooling) keeps its input's order.
    if (self && self->order.size() == shape.size() &&
        (name == "aten::expand" || name == "aten::slice" || name == "aten::narrow" ||
         name.find("pool") != std::string_view::npos || name.find("upsample") != std::string_view::npos)) {
      return self->order;
    }
    // A list whose tensors all agree (cat).
    std::optional<Order> agreed;
    for (const In& i : ins_) {
      if (!i.listed || i.order.size() != shape.size()) continue;
      if (agreed && *agreed != i.order) return plain;
      agreed = i.order;
    }
    return agreed.value_or(plain);
  }

  const trace::Trace& t_;
  std::unordered_map<uint64_t, Order> orders_;  // tensors not in plain order
  std::vector<In> ins_;
};
}  // namespace

bool isChannelsLast(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  if (shape.size() != 4 || strides.size() != 4) return false;
  return nhwc(orderOfStrides(shape, strides), shape);
}

std::vector<uint32_t> channelsLastInputs(const trace::Trace& t) {
  std::vector<uint32_t> bits(t.nodes.size(), 0);
  // Nodes are sorted by id, a parent before its children: whether a node
  // runs inside an operator is known when it is reached.
  std::vector<bool> nested(t.nodes.size(), false);
  const auto indexOf = [&](trace::NodeId id) -> std::optional<size_t> {
    const auto it = std::lower_bound(t.nodes.begin(), t.nodes.end(), id,
                                     [](const trace::Node& n, trace::NodeId v) { return n.id < v; });
    if (it == t.nodes.end() || it->id != id) return std::nullopt;
    return static_cast<size_t>(it - t.nodes.begin());
  };
  Layouts layouts(t);
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const trace::Node& n = t.nodes[i];
    if (const auto p = n.parent ? indexOf(n.parent) : std::nullopt; p && *p < i) {
      nested[i] = nested[*p] || t.nodes[*p].kind == trace::NodeKind::kOperator;
    }
    if (n.kind != trace::NodeKind::kOperator) continue;
    // The layouts follow the ops a replay calls (those outside any other
    // op): an op's own calls inside it (a convolution resizing its output
    // channels-last because a recorded weight was) say what the original
    // run's leaves were, which a trace without strides does not give its
    // replay.
    bits[i] = layouts.node(n, /*update=*/!nested[i]);
  }
  return bits;
}

std::vector<uint32_t> transposedInputs(const trace::Trace& t) {
  std::vector<uint32_t> bits(t.nodes.size(), 0);
  std::unordered_set<uint64_t> flipped;  // tensor ids stored column by column
  const auto matrix = [&](const trace::TensorRef& r) {
    const std::vector<int64_t>& shape = t.list(r.shape);
    return shape.size() == 2 && shape[0] > 1 && shape[1] > 1;
  };
  const auto columnMajor = [&](const trace::TensorRef& r) {
    if (!matrix(r)) return false;
    if (r.has_strides) {
      const std::vector<int64_t>& st = t.list(r.strides);
      return st.size() == 2 && st[0] < st[1];
    }
    return flipped.count(r.tensor_id) > 0;
  };
  static const std::set<std::string_view> kKeep = {
      "aten::detach", "aten::alias", "aten::slice", "aten::narrow", "aten::expand",
      "aten::resolve_conj", "aten::resolve_neg", "aten::lift_fresh"};
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const trace::Node& n = t.nodes[i];
    if (n.kind != trace::NodeKind::kOperator) continue;
    const trace::TensorRef* self = nullptr;
    std::unordered_set<uint64_t> in_ids;
    for (size_t a = 0; a < n.inputs.size(); ++a) {
      if (n.inputs[a].kind != trace::ValueKind::kTensor) continue;
      const trace::TensorRef& r = t.tensors[n.inputs[a].tensor];
      if (a == 0) self = &r;
      in_ids.insert(r.tensor_id);
      if (a < 32 && columnMajor(r)) bits[i] |= 1u << a;
    }
    const std::string_view name = t.name(n);
    bool flips = false;
    if (self && matrix(*self)) {
      const std::vector<int64_t> d1 = n.inputs.size() > 1 ? intsOf(n.inputs[1]) : std::vector<int64_t>{};
      const std::vector<int64_t> d2 = n.inputs.size() > 2 ? intsOf(n.inputs[2]) : std::vector<int64_t>{};
      flips = name == "aten::t" || name == "aten::t_" || name == "aten::numpy_T" ||
              ((name == "aten::transpose" || name == "aten::transpose_" || name == "aten::swapaxes") &&
               d1.size() == 1 && d2.size() == 1 && ((d1[0] + 2) % 2) != ((d2[0] + 2) % 2)) ||
              (name == "aten::permute" && d1.size() == 2 && (d1[0] == 1 || d1[0] == -1));
    }
    const bool self_flipped = self && columnMajor(*self);
    for (const trace::Value& v : n.outputs) {
      if (v.kind != trace::ValueKind::kTensor) continue;
      const trace::TensorRef& r = t.tensors[v.tensor];
      if (r.tensor_id == 0 || r.has_strides) continue;
      // An in-place op (add_) writes the tensor it was given: its layout
      // stays (t_ flips it).
      if (in_ids.count(r.tensor_id) > 0 && !flips) continue;
      const bool column = flips ? !self_flipped : kKeep.count(name) > 0 && self_flipped && matrix(r);
      if (column) flipped.insert(r.tensor_id);
      else flipped.erase(r.tensor_id);
    }
  }
  return bits;
}

}  // namespace etb::predict
