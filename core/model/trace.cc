// SPDX-License-Identifier: MIT
#include "core/model/trace.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace etb::trace {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  int size;
};
// Keep in DType order.
constexpr std::array<DTypeInfo, 13> kDTypes{{
    {DType::kUnknown, "unknown", 0},
    {DType::kFloat, "float32", 4},
    {DType::kDouble, "float64", 8},
    {DType::kHalf, "float16", 2},
    {DType::kBFloat16, "bfloat16", 2},
    {DType::kInt64, "int64", 8},
    {DType::kInt32, "int32", 4},
    {DType::kInt16, "int16", 2},
    {DType::kInt8, "int8", 1},
    {DType::kUInt8, "uint8", 1},
    {DType::kBool, "bool", 1},
    {DType::kComplexFloat, "complex64", 8},
    {DType::kComplexDouble, "complex128", 16},
}};

// Recorded spellings: caffe2 TypeMeta names (ET tensor types), ScalarType
// names (comm attrs), and our own canonical names.
constexpr std::array<std::pair<std::string_view, DType>, 36> kDTypeAliases{{
    {"float", DType::kFloat},
    {"Float", DType::kFloat},
    {"float32", DType::kFloat},
    {"double", DType::kDouble},
    {"Double", DType::kDouble},
    {"float64", DType::kDouble},
    {"c10::Half", DType::kHalf},
    {"Half", DType::kHalf},
    {"float16", DType::kHalf},
    {"c10::BFloat16", DType::kBFloat16},
    {"BFloat16", DType::kBFloat16},
    {"bfloat16", DType::kBFloat16},
    {"long", DType::kInt64},
    {"long int", DType::kInt64},
    {"Long", DType::kInt64},
    {"int64", DType::kInt64},
    {"int", DType::kInt32},
    {"Int", DType::kInt32},
    {"int32", DType::kInt32},
    {"short", DType::kInt16},
    {"Short", DType::kInt16},
    {"int16", DType::kInt16},
    {"signed char", DType::kInt8},
    {"Char", DType::kInt8},
    {"int8", DType::kInt8},
    {"unsigned char", DType::kUInt8},
    {"Byte", DType::kUInt8},
    {"uint8", DType::kUInt8},
    {"bool", DType::kBool},
    {"Bool", DType::kBool},
    {"c10::complex<float>", DType::kComplexFloat},
    {"ComplexFloat", DType::kComplexFloat},
    {"complex64", DType::kComplexFloat},
    {"c10::complex<double>", DType::kComplexDouble},
    {"ComplexDouble", DType::kComplexDouble},
    {"complex128", DType::kComplexDouble},
}};

struct CommName {
  std::string_view name;  // normalised: lower case, letters only
  CommType type;
};
// Matched against the normalised name; longer, more specific names first.
constexpr std::array<CommName, 20> kCommNames{{
    {"alltoallv", CommType::kAllToAllV},
    {"alltoallbase", CommType::kAllToAllV},
    {"alltoall", CommType::kAllToAll},
    {"allreduce", CommType::kAllReduce},
    {"allgather", CommType::kAllGather},
    {"reducescatter", CommType::kReduceScatter},
    {"broadcast", CommType::kBroadcast},
    {"bcast", CommType::kBroadcast},
    {"barrier", CommType::kBarrier},
    {"gather", CommType::kGather},
    {"scatter", CommType::kScatter},
    {"reduce", CommType::kReduce},
    {"sendrecv", CommType::kSend},
    {"send", CommType::kSend},
    {"isend", CommType::kSend},
    {"recvanysource", CommType::kRecv},
    {"recv", CommType::kRecv},
    {"irecv", CommType::kRecv},
    {"wait", CommType::kWait},
    {"init", CommType::kInit},
}};

constexpr std::array<std::string_view, 15> kCommTypeNames{{
    "unknown", "all_reduce", "reduce", "all_gather", "gather", "scatter",
    "broadcast", "all_to_all", "all_to_allv", "reduce_scatter", "barrier",
    "send", "recv", "wait", "init",
}};

constexpr std::array<std::string_view, 10> kNodeKindNames{{
    "operator", "label", "collective", "p2p", "wait", "marker", "root",
    "metadata", "kernel", "memory",
}};

}  // namespace

bool isProfilerStep(std::string_view name) {
  return name.rfind("ProfilerStep#", 0) == 0;
}

DType parseDType(std::string_view name) {
  for (const auto& [text, dtype] : kDTypeAliases) {
    if (text == name) return dtype;
  }
  return DType::kUnknown;
}

DType dtypeOfTensorType(std::string_view type) {
  constexpr std::string_view kPrefix = "Tensor(";
  if (type.rfind(kPrefix, 0) != 0 || type.back() != ')') return DType::kUnknown;
  return parseDType(type.substr(kPrefix.size(), type.size() - kPrefix.size() - 1));
}

std::string_view dtypeName(DType dtype) {
  return kDTypes[static_cast<size_t>(dtype)].name;
}

int dtypeSize(DType dtype) { return kDTypes[static_cast<size_t>(dtype)].size; }

int itemBytes(const TensorRef& r) {
  return r.itemsize > 0 ? static_cast<int>(r.itemsize) : dtypeSize(r.dtype);
}

CommType parseCommType(std::string_view name) {
  // "nccl:all_reduce" -> "allreduce"; "_allgather_base" -> "allgatherbase".
  const size_t colon = name.rfind(':');
  if (colon != std::string_view::npos) name = name.substr(colon + 1);
  std::string norm;
  norm.reserve(name.size());
  for (char c : name) {
    if (std::isalpha(static_cast<unsigned char>(c))) {
      norm.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  for (const auto& entry : kCommNames) {
    if (norm.rfind(entry.name, 0) == 0) return entry.type;
  }
  return CommType::kUnknown;
}

std::string_view commTypeName(CommType type) {
  return kCommTypeNames[static_cast<size_t>(type)];
}

std::string_view nodeKindName(NodeKind kind) {
  return kNodeKindNames[static_cast<size_t>(kind)];
}

size_t Trace::indexOf(NodeId id) const {
  auto it = std::lower_bound(nodes.begin(), nodes.end(), id,
                             [](const Node& n, NodeId v) { return n.id < v; });
  if (it == nodes.end() || it->id != id) return nodes.size();
  return static_cast<size_t>(it - nodes.begin());
}

const Node* Trace::find(NodeId id) const {
  const size_t i = indexOf(id);
  return i == nodes.size() ? nullptr : &nodes[i];
}

Node* Trace::find(NodeId id) {
  const size_t i = indexOf(id);
  return i == nodes.size() ? nullptr : &nodes[i];
}

const Attr* Trace::attr(const Node& n, std::string_view attr_name) const {
  for (const Attr& a : n.attrs) {
    if (str(a.name) == attr_name) return &a;
  }
  return nullptr;
}

std::vector<std::vector<uint32_t>> Trace::children() const {
  std::vector<std::vector<uint32_t>> out(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.parent == 0 || n.parent == n.id) continue;
    const size_t p = indexOf(n.parent);
    if (p != nodes.size()) out[p].push_back(static_cast<uint32_t>(i));
  }
  return out;  // nodes are sorted, so each child list is sorted by id
}

namespace {
// Stable sort by id through a permutation: 12 bytes per node of scratch and
// one move per node, where std::stable_sort on the nodes themselves copies
// them through a buffer half as large as `nodes`, pass after pass.
void sortById(std::vector<Node>& nodes) {
  const auto by_id = [](const Node& a, const Node& b) { return a.id < b.id; };
  if (std::is_sorted(nodes.begin(), nodes.end(), by_id)) return;
  std::vector<std::pair<NodeId, uint32_t>> order(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) order[i] = {nodes[i].id, static_cast<uint32_t>(i)};
  std::sort(order.begin(), order.end());  // ties keep file order: stable
  // Node i goes to where order says; follow each cycle once.
  std::vector<uint32_t> from(nodes.size());
  for (size_t i = 0; i < order.size(); ++i) from[i] = order[i].second;
  order = {};
  for (size_t start = 0; start < from.size(); ++start) {
    if (from[start] == start) continue;
    Node held = std::move(nodes[start]);
    size_t at = start;
    while (from[at] != start) {
      const size_t next = from[at];
      nodes[at] = std::move(nodes[next]);
      from[at] = static_cast<uint32_t>(at);
      at = next;
    }
    nodes[at] = std::move(held);
    from[at] = static_cast<uint32_t>(at);
  }
}
}  // namespace

void Trace::finalize() {
  sortById(nodes);
  // Keep iterations a reader already set (Chakra has no markers).
  std::vector<const Node*> markers;
  for (const Node& n : nodes) {
    if (isProfilerStep(name(n))) markers.push_back(&n);
  }
  if (markers.empty()) return;
  iterations.clear();
  const NodeId last_id = nodes.back().id + 1;
  for (size_t i = 0; i < markers.size(); ++i) {
    Iteration it;
    it.marker = markers[i]->id;
    it.begin = markers[i]->id;
    it.end = i + 1 < markers.size() ? markers[i + 1]->id : last_id;
    it.name = std::string(name(*markers[i]));
    it.start_us = markers[i]->start_us;
    it.dur_us = markers[i]->dur_us;
    iterations.push_back(std::move(it));
  }
}

size_t Trace::memoryBytes() const {
  size_t bytes = sizeof(Trace) + strings.memoryBytes() + lists.memoryBytes();
  bytes += tensors.capacity() * sizeof(TensorRef);
  bytes += kernels.capacity() * sizeof(KernelEvent);
  for (const CommInfo& c : comms) {
    bytes += sizeof(CommInfo) +
             (c.in_splits.capacity() + c.out_splits.capacity()) * sizeof(int64_t);
  }
  // Values nest; count them recursively.
  struct Counter {
    static size_t values(const std::vector<Value>& v) {
      size_t b = v.capacity() * sizeof(Value);
      for (const Value& x : v) b += values(x.items);
      return b;
    }
  };
  bytes += (nodes.capacity() - nodes.size()) * sizeof(Node);
  for (const Node& n : nodes) {
    bytes += sizeof(Node) + n.data_deps.capacity() * sizeof(NodeId);
    bytes += Counter::values(n.inputs) + Counter::values(n.outputs);
    bytes += n.attrs.capacity() * sizeof(Attr);
    for (const Attr& a : n.attrs) bytes += Counter::values(a.value.items);
  }
  return bytes;
}

Value makeInt(Trace& t, int64_t v, std::string_view type) {
  Value out;
  out.kind = ValueKind::kInt;
  out.type = t.strings.intern(type);
  out.i = v;
  return out;
}

Value makeDouble(Trace& t, double v) {
  Value out;
  out.kind = ValueKind::kDouble;
  out.type = t.strings.intern("Double");
  out.d = v;
  return out;
}

Value makeBool(Trace& t, bool v) {
  Value out;
  out.kind = ValueKind::kBool;
  out.type = t.strings.intern("Bool");
  out.b = v;
  return out;
}

Value makeString(Trace& t, std::string_view v) {
  Value out;
  out.kind = ValueKind::kString;
  out.type = t.strings.intern("String");
  out.s = t.strings.intern(v);
  return out;
}

Value makeNone(Trace& t) {
  Value out;
  out.kind = ValueKind::kNone;
  out.type = t.strings.intern("None");
  return out;
}

Value makeTensor(Trace& t, const TensorRef& ref, std::string_view type) {
  Value out;
  out.kind = ValueKind::kTensor;
  out.type = t.strings.intern(type);
  out.tensor = static_cast<uint32_t>(t.tensors.size());
  t.tensors.push_back(ref);
  return out;
}

}  // namespace etb::trace
