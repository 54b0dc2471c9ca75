// SPDX-License-Identifier: MIT
//
// The in-memory model every reader produces and every tool consumes. Nothing
// downstream of core/ parses JSON or protobuf again.
//
// Sizes matter: a multi-GB trace must load into at most ~1.5x its file size,
// so repeated strings (names, schemas, type strings, devices) are interned in
// Trace::strings and shapes/strides in Trace::lists.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/string_pool.h"

namespace etb::trace {

using NodeId = uint64_t;

// ---------------------------------------------------------------- values
enum class DType : uint8_t {
  kUnknown,
  kFloat,
  kDouble,
  kHalf,
  kBFloat16,
  kInt64,
  kInt32,
  kInt16,
  kInt8,
  kUInt8,
  kBool,
  kComplexFloat,
  kComplexDouble,
};

// Parses the dtype inside a recorded type string: "float", "c10::Half",
// "long int", "long", "unsigned char", ... (the caffe2 TypeMeta names), and
// also ScalarType names ("Float", "BFloat16", "Long") used by comm attrs.
DType parseDType(std::string_view name);
// "Tensor(float)" -> kFloat. kUnknown for non-tensor types.
DType dtypeOfTensorType(std::string_view type);
std::string_view dtypeName(DType dtype);  // "float32", "int64", ...
int dtypeSize(DType dtype);               // bytes; 0 for kUnknown

// One tensor argument as recorded: the ET 6-tuple plus shape and strides.
struct TensorRef {
  uint64_t tensor_id = 0;
  uint64_t storage_id = 0;
  uint64_t offset = 0;  // storage offset in elements
  uint64_t numel = 0;
  uint32_t itemsize = 0;  // bytes
  DType dtype = DType::kUnknown;
  bool has_device = false;   // false for the old 5-element tuples
  bool has_strides = false;  // 1.1.1+ records strides
  StrId device = 0;          // "cuda:0", "cpu", "" (undefined tensor)
  ListId shape = 0;
  ListId strides = 0;
};

// Bytes per element: the recorded itemsize, else its dtype's; 0 when
// neither is known (each caller says what it assumes then).
int itemBytes(const TensorRef& r);

enum class ValueKind : uint8_t {
  kNone,    // "<None>" / null
  kInt,     // Int, and ScalarType/Layout/MemoryFormat recorded as Int
  kDouble,  // Double ("inf"/"-inf"/"nan" strings decode to the number)
  kBool,
  kString,
  kDevice,
  kTensor,  // `tensor` indexes Trace::tensors
  kList,    // GenericList[...]: `items`
  kTuple,   // Tuple[...]: `items`
  kOpaque,  // "<Object>", "<Generator>", "<Stream>", ...: `s` holds the marker
};

struct Value {
  ValueKind kind = ValueKind::kNone;
  StrId type = 0;  // recorded type string ("Tensor(float)", "Int", ...)
  union {
    int64_t i = 0;
    double d;
    bool b;
    StrId s;          // kString, kDevice, kOpaque
    uint32_t tensor;  // kTensor
  };
  std::vector<Value> items;  // kList, kTuple
};

// An attribute that is not held in a Node field. `type` is the attr type
// string as recorded ("uint64", "int64", "string", "bool", "double", and for
// Chakra input the AttributeProto kind: "int32", "sint64", "int64_list",
// "bytes", ...). Integers of any kind are held in Value::i, lists in items.
struct Attr {
  StrId name = 0;
  StrId type = 0;
  Value value;
};

// ---------------------------------------------------------------- comms
enum class CommType : uint8_t {
  kUnknown,
  kAllReduce,
  kReduce,
  kAllGather,
  kGather,
  kScatter,
  kBroadcast,
  kAllToAll,
  kAllToAllV,
  kReduceScatter,
  kBarrier,
  kSend,
  kRecv,
  kWait,
  kInit,
};

// Accepts the spellings seen in traces: "allreduce", "all_reduce",
// "nccl:all_reduce", "_allgather_base", "all_to_allv", "alltoall_base",
// "reduce_scatter_tensor_coalesced", ... Returns kUnknown when unrecognised.
CommType parseCommType(std::string_view name);
std::string_view commTypeName(CommType type);  // "all_reduce", ...

enum class ReduceOp : uint8_t { kSum, kProduct, kMin, kMax, kAvg, kUnknown };

// One communication call (from record_param_comms or a Chakra COMM node).
struct CommInfo {
  CommType type = CommType::kUnknown;
  StrId raw_name = 0;     // collective name as recorded
  int32_t pg = -1;        // index into Trace::process_groups; -1 = world
  StrId pg_name = 0;      // as recorded ("0", "1", ...)
  int64_t seq = -1;       // recorded sequence number
  bool is_p2p = false;
  bool is_async = false;  // a later wait refers to it
  bool coalesced = false;
  DType dtype = DType::kUnknown;
  ReduceOp reduce_op = ReduceOp::kSum;
  uint64_t in_elems = 0;
  uint64_t out_elems = 0;
  std::vector<int64_t> in_splits;   // all_to_allv
  std::vector<int64_t> out_splits;
  int64_t root = -1;  // broadcast/reduce/gather/scatter root, GLOBAL rank
  int64_t peer = -1;  // send/recv peer, GLOBAL rank
  int64_t group_rank = -1;  // the recorded (group-local) rank
  uint64_t bytes = 0;       // message size in bytes (Chakra comm_size)
};

struct ProcessGroup {
  std::string name;  // pg_name, e.g. "0"
  std::string desc;  // pg_desc, e.g. "default_pg"
  std::string backend;
  std::vector<int64_t> ranks;  // global ranks; filled from group_size if empty
  int64_t size = 0;
};

// ---------------------------------------------------------------- nodes
enum class NodeKind : uint8_t {
  kOperator,      // an op with a schema (aten::mm, triton_*, ...)
  kLabel,         // record_function annotations, autograd nodes, c10d::*
  kCollective,    // record_param_comms / COMM_COLL_NODE
  kPointToPoint,  // send/recv
  kWait,          // wait on an async collective
  kMarker,        // ProfilerStep#N
  kRoot,          // [pytorch|profiler|execution_trace|process/thread]
  kMetadata,      // ## process_group:init ## / METADATA_NODE
  kKernel,        // a GPU kernel attached from a profiler trace (ET+)
  kMemory,        // Chakra MEM_LOAD/MEM_STORE
};
std::string_view nodeKindName(NodeKind kind);

// "ProfilerStep#N": the iteration marker torch.profiler (and our recorder)
// emits, in the ET and in the profiler trace alike.
bool isProfilerStep(std::string_view name);

struct Node {
  NodeId id = 0;
  StrId name = 0;
  NodeKind kind = NodeKind::kLabel;
  NodeId parent = 0;               // ctrl_deps: the call-stack parent; 0 = none
  std::vector<NodeId> data_deps;   // explicit dependencies (Chakra data_deps)
  // Record-function attributes (0 / -1 when not recorded).
  uint64_t rf_id = 0;
  uint64_t fw_parent = 0;
  int64_t seq_id = -1;
  uint32_t scope = 0;
  uint64_t tid = 0;
  uint64_t fw_tid = 0;
  StrId op_schema = 0;  // full c10 schema string; empty for labels
  std::vector<Value> inputs;
  std::vector<Value> outputs;
  std::vector<Attr> attrs;  // every other attribute, in file order
  int32_t comm = -1;        // index into Trace::comms
  // Chakra NodeType when read from (or destined for) a Chakra file; 0 = unset.
  uint8_t chakra_type = 0;
  // Timing in microseconds, from a linked Kineto trace or a Chakra duration.
  // Negative = unknown.
  double start_us = -1;
  double dur_us = -1;
  double gpu_dur_us = -1;  // sum of the node's GPU kernels, when linked
};

// One iteration: the nodes whose ids lie in [begin, end). `marker` is the
// ProfilerStep node id (0 when iterations were not marked).
struct Iteration {
  NodeId marker = 0;
  NodeId begin = 0;
  NodeId end = 0;
  std::string name;
  double start_us = -1;  // from Kineto, when linked
  double dur_us = -1;
};

// A GPU kernel or memcpy attached to a node by a Kineto link.
struct KernelEvent {
  NodeId node = 0;
  StrId name = 0;
  double start_us = 0;
  double dur_us = 0;
  int32_t device = -1;
  int64_t stream = -1;
};

// Something a reader fixed or dropped; reported by et_inspect and the tools.
struct Repair {
  NodeId node_id = 0;  // 0 when not about one node
  std::string what;
};

enum class SourceFormat : uint8_t { kUnknown, kPyTorchEtJson, kChakraProtobuf };

class Trace {
 public:
  // Where it came from.
  std::string path;
  SourceFormat format = SourceFormat::kUnknown;
  std::string schema;  // "1.1.1-chakra.0.0.4", "1.0.1", Chakra version ...
  int64_t pid = 0;
  std::string time;
  uint64_t start_ts = 0;
  uint64_t finish_ts = 0;
  std::vector<Attr> metadata_attrs;  // other GlobalMetadata attrs (Chakra)
  int64_t rank = -1;        // this file's global rank, when known
  int64_t world_size = -1;  // when known

  StringPool strings;
  IntListPool lists;
  std::vector<Node> nodes;  // sorted by id, ids unique
  std::vector<TensorRef> tensors;
  std::vector<CommInfo> comms;
  std::vector<ProcessGroup> process_groups;
  std::vector<Iteration> iterations;
  std::vector<KernelEvent> kernels;
  std::vector<Repair> repairs;

  std::string_view str(StrId id) const { return strings.get(id); }
  std::string_view name(const Node& n) const { return strings.get(n.name); }
  const std::vector<int64_t>& list(ListId id) const { return lists.get(id); }

  // Binary search over the sorted nodes; nullptr when absent.
  const Node* find(NodeId id) const;
  Node* find(NodeId id);
  size_t indexOf(NodeId id) const;  // nodes.size() when absent

  // `n` or its nearest call-stack ancestor for which `pred` holds; nullptr
  // when none does. Stops at a root (parent 0 or itself) or a parent not in
  // the trace, and after nodes.size() steps (a malformed parent cycle).
  template <typename Pred>
  const Node* findUp(const Node& n, Pred pred) const {
    const Node* p = &n;
    for (size_t depth = 0; p != nullptr && depth <= nodes.size(); ++depth) {
      if (pred(*p)) return p;
      if (p->parent == 0 || p->parent == p->id) return nullptr;
      p = find(p->parent);
    }
    return nullptr;
  }

  // Attribute lookup by name among Node::attrs; nullptr when absent.
  const Attr* attr(const Node& n, std::string_view name) const;

  // Children of every node (by index into `nodes`), sorted by id.
  std::vector<std::vector<uint32_t>> children() const;

  // Sorts nodes by id and recomputes `iterations` from ProfilerStep markers.
  void finalize();

  // Approximate heap bytes held by this trace (for the memory benchmark).
  size_t memoryBytes() const;
};

// Convenience builders used by readers and tests.
Value makeInt(Trace& t, int64_t v, std::string_view type = "Int");
Value makeDouble(Trace& t, double v);
Value makeBool(Trace& t, bool v);
Value makeString(Trace& t, std::string_view v);
Value makeNone(Trace& t);
Value makeTensor(Trace& t, const TensorRef& ref, std::string_view type);

}  // namespace etb::trace
