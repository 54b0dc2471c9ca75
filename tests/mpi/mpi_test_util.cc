// SPDX-License-Identifier: MIT
#include "tests/mpi/mpi_test_util.h"

#include <cstdlib>

namespace etb::test {

int32_t CommTraceBuilder::addGroup(const std::string& name, std::vector<int64_t> ranks) {
  trace::ProcessGroup pg;
  pg.name = name;
  pg.desc = "group_" + name;
  pg.backend = "mpi";
  pg.size = static_cast<int64_t>(ranks.size());
  pg.ranks = std::move(ranks);
  trace_.process_groups.push_back(std::move(pg));
  return static_cast<int32_t>(trace_.process_groups.size() - 1);
}

trace::NodeId CommTraceBuilder::add(trace::CommInfo info) {
  trace::Node node;
  node.id = next_id_++;
  node.name = trace_.strings.intern("record_param_comms");
  node.kind = info.type == trace::CommType::kSend || info.type == trace::CommType::kRecv
                  ? trace::NodeKind::kPointToPoint
                  : trace::NodeKind::kCollective;
  node.comm = static_cast<int32_t>(trace_.comms.size());
  trace_.comms.push_back(std::move(info));
  trace_.nodes.push_back(std::move(node));
  return trace_.nodes.back().id;
}

trace::CommInfo commInfo(trace::CommType type, uint64_t in_elems, uint64_t out_elems,
                         trace::DType dtype, int32_t pg) {
  trace::CommInfo c;
  c.type = type;
  c.in_elems = in_elems;
  c.out_elems = out_elems;
  c.dtype = dtype;
  c.pg = pg;
  return c;
}

replay::Communicator& testComm() {
  static std::unique_ptr<replay::Communicator> comm = [] {
    replay::CommOptions o;
    if (const char* b = std::getenv("ETB_TEST_COMM")) o.backend = b;
    return replay::makeCommunicator(o);
  }();
  return *comm;
}

void runNode(replay::Communicator& comm, const trace::Trace& t, trace::NodeId id,
             std::vector<at::Tensor> inputs, std::vector<at::Tensor> outputs) {
  replay::CommCall call;
  call.trace = &t;
  call.node = t.find(id);
  call.info = &t.comms[static_cast<size_t>(call.node->comm)];
  call.inputs = std::move(inputs);
  call.outputs = std::move(outputs);
  std::shared_ptr<replay::Work> work = comm.run(call);
  if (work) work->wait();
}

}  // namespace etb::test
