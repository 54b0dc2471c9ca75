// SPDX-License-Identifier: MIT
// Sparse tensors whose element count the trace does not record (data_rules.h).
#include <algorithm>
#include <limits>
#include <vector>

#include "replayer/data_rules.h"

namespace etb::replay::detail {
namespace {

// The nnz a reader of a sparse tensor shows: _nnz's Int output, the
// indices' second dimension, the values' first; -1 for other ops.
int64_t nnzShownBy(const trace::Trace& trace, const trace::Node& reader) {
  const std::string_view name = trace.name(reader);
  if (reader.outputs.empty()) return -1;
  const trace::Value& out = reader.outputs[0];
  if (name == "aten::_nnz") return out.kind == trace::ValueKind::kInt ? out.i : -1;
  if (out.kind != trace::ValueKind::kTensor) return -1;
  const std::vector<int64_t>& shape = trace.list(trace.tensors[out.tensor].shape);
  if ((name == "aten::_indices" || name == "aten::indices") && shape.size() == 2) return shape[1];
  if ((name == "aten::_values" || name == "aten::values") && !shape.empty()) return shape[0];
  return -1;
}

}  // namespace

int64_t recordedSparseNnz(const trace::Trace& trace, uint32_t node_index, std::string_view name) {
  if (name != "aten::coalesce" && name != "aten::_coalesce") return -1;
  const trace::Node& node = trace.nodes[node_index];
  if (node.outputs.empty() || node.outputs[0].kind != trace::ValueKind::kTensor) return -1;
  const trace::TensorRef& out = trace.tensors[node.outputs[0].tensor];
  if (!isSparseRef(trace, out)) return -1;
  // The first reader after the op (ids grow with time; a tensor id may be
  // reused later by another tensor).
  uint64_t best_id = std::numeric_limits<uint64_t>::max();
  int64_t nnz = -1;
  for (const trace::Node& r : trace.nodes) {
    if (r.id <= node.id || r.id >= best_id || r.inputs.empty() ||
        r.inputs[0].kind != trace::ValueKind::kTensor ||
        trace.tensors[r.inputs[0].tensor].tensor_id != out.tensor_id) {
      continue;
    }
    const int64_t shown = nnzShownBy(trace, r);
    if (shown < 0) continue;
    best_id = r.id;
    nnz = shown;
  }
  return nnz;
}

at::Tensor sparseWithNnz(const at::Tensor& t, int64_t k) {
  if (!t.defined() || !t.is_sparse() || t.sparse_dim() != 1 || k < 0 || t.size(0) < k) return t;
  at::Tensor c = t.is_coalesced() ? t : t.coalesce();
  const int64_t n = c._nnz();
  if (n == k) return c;
  at::Tensor idx = c._indices();
  at::Tensor val = c._values();
  if (n > k) {
    idx = idx.narrow(1, 0, k);
    val = val.narrow(0, 0, k);
  } else {
    // rows the tensor lacks, lowest first
    at::Tensor used = at::zeros({t.size(0)}, idx.options().dtype(at::kBool));
    used.index_fill_(0, idx[0], true);
    at::Tensor free_rows = used.logical_not().nonzero().view({1, -1}).narrow(1, 0, k - n);
    idx = at::cat({idx, free_rows.to(idx.scalar_type())}, 1);
    std::vector<int64_t> extra = val.sizes().vec();
    extra[0] = k - n;
    val = at::cat({val, at::zeros(extra, val.options())}, 0);
  }
  return at::sparse_coo_tensor(idx, val, t.sizes(), t.options()).coalesce();
}

}  // namespace etb::replay::detail
