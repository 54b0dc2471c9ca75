// SPDX-License-Identifier: MIT
#include "core/model/tiny_op_chain.h"

#include <string_view>
#include <utility>

namespace etb::trace {
namespace {
Value floatTensor(Trace& t, uint64_t id, int64_t elems) {
  TensorRef r;
  r.tensor_id = r.storage_id = id;
  r.numel = elems;
  r.itemsize = 4;
  r.dtype = DType::kFloat;
  r.has_device = r.has_strides = true;
  r.device = t.strings.intern("cpu");
  r.shape = t.lists.intern({elems});
  r.strides = t.lists.intern({1});
  return makeTensor(t, r, "Tensor(float)");
}
}  // namespace

Trace tinyOpChain(const std::vector<TinyOp>& kinds, int ops, int64_t elems, std::string path) {
  Trace t;
  t.path = std::move(path);
  Node root;
  root.id = root.parent = 1;
  root.kind = NodeKind::kRoot;
  t.nodes.push_back(root);
  const Value w = floatTensor(t, 2, elems);
  Value x = floatTensor(t, 3, elems);
  for (int i = 0; i < ops && !kinds.empty(); ++i) {
    const TinyOp& k = kinds[static_cast<size_t>(i) % kinds.size()];
    Node n;
    n.id = 100 + 2 * static_cast<uint64_t>(i);
    n.parent = 1;
    n.kind = NodeKind::kOperator;
    n.op_schema = t.strings.intern(k.schema);
    n.name = t.strings.intern(k.name);
    n.inputs = {x};
    if (k.binary) n.inputs.push_back(w);
    if (std::string_view(k.schema).find("alpha") != std::string_view::npos) n.inputs.push_back(makeInt(t, 1));
    x = floatTensor(t, n.id + 1, elems);
    n.outputs = {x};
    t.nodes.push_back(std::move(n));
  }
  t.finalize();
  return t;
}

}  // namespace etb::trace
