// SPDX-License-Identifier: MIT
#include "tests/replayer/trace_builder.h"

#include <utility>

namespace etb::test {

TraceBuilder::TraceBuilder() {
  t_.path = "built-in-test";
  t_.schema = "1.1.1-chakra.0.0.4";
  trace::Node root;
  root.id = 1;
  root.parent = 1;
  root.kind = trace::NodeKind::kRoot;
  root.name = t_.strings.intern("[pytorch|profiler|execution_trace|process]");
  trace::Node thread = root;
  thread.id = 2;
  thread.parent = 1;
  thread.name = t_.strings.intern("[pytorch|profiler|execution_trace|thread]");
  t_.nodes = {root, thread};
}

trace::Value TraceBuilder::tensor(const std::vector<int64_t>& shape, trace::DType dtype,
                                  uint64_t storage) {
  trace::TensorRef r;
  r.tensor_id = next_id_++;
  r.storage_id = storage != 0 ? storage : next_id_++;
  r.dtype = dtype;
  r.itemsize = static_cast<uint32_t>(trace::dtypeSize(dtype));
  r.numel = 1;
  std::vector<int64_t> strides(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = static_cast<int64_t>(r.numel);
    r.numel *= static_cast<uint64_t>(shape[i]);
  }
  r.has_device = r.has_strides = true;
  r.device = t_.strings.intern("cpu");
  r.shape = t_.lists.intern(shape);
  r.strides = t_.lists.intern(strides);
  const char* c_type = dtype == trace::DType::kInt64  ? "long int"
                      : dtype == trace::DType::kInt32 ? "int"
                      : dtype == trace::DType::kHalf ? "c10::Half"
                                                     : "float";
  const std::string type = "Tensor(" + std::string(c_type) + ")";
  return trace::makeTensor(t_, r, type);
}

trace::NodeId TraceBuilder::op(const std::string& schema, std::vector<trace::Value> inputs,
                               std::vector<trace::Value> outputs) {
  trace::Node n;
  n.id = next_id_++;
  n.parent = parent_;
  n.kind = trace::NodeKind::kOperator;
  n.op_schema = t_.strings.intern(schema);
  n.name = t_.strings.intern(schema.substr(0, schema.find_first_of(".(")));
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  t_.nodes.push_back(std::move(n));
  return t_.nodes.back().id;
}

trace::NodeId TraceBuilder::label(const std::string& name) {
  trace::Node n;
  n.id = next_id_++;
  n.parent = 2;
  n.kind = trace::NodeKind::kLabel;
  n.name = t_.strings.intern(name);
  t_.nodes.push_back(std::move(n));
  return t_.nodes.back().id;
}

trace::NodeId TraceBuilder::collective(trace::NodeId id, trace::CommInfo info,
                                       std::vector<trace::Value> inputs) {
  trace::Node n;
  n.id = id;
  n.parent = 2;
  n.kind = trace::NodeKind::kCollective;
  n.name = t_.strings.intern("record_param_comms");
  n.comm = static_cast<int32_t>(t_.comms.size());
  n.inputs = std::move(inputs);
  t_.comms.push_back(std::move(info));
  t_.nodes.push_back(std::move(n));
  return id;
}

trace::Trace TraceBuilder::finish() {
  t_.finalize();
  return std::move(t_);
}

trace::Value intList(trace::Trace& t, const std::vector<int64_t>& xs) {
  trace::Value v;
  v.kind = trace::ValueKind::kList;
  v.type = t.strings.intern("GenericList[Int]");
  for (int64_t x : xs) v.items.push_back(trace::makeInt(t, x));
  return v;
}

trace::Trace onesTrace(int64_t numel) {
  TraceBuilder b;
  const trace::Value size = intList(b.trace(), {numel});
  b.op("aten::ones(int[] size, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None) -> Tensor",
       {size}, {b.tensor({numel})});
  return b.finish();
}

}  // namespace etb::test
