// SPDX-License-Identifier: MIT
// et_profile_hw: collective curves through etbench's own communication layer
// (the backend et_replay would use), and the machine's identity.
#include <ATen/ATen.h>
#include <torch/version.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <thread>

#include "etb/config.h"
#include "predictor/hw_bench.h"
#include "replayer/comm/comm_plan.h"
#include "replayer/timer.h"

namespace etb::predict {
namespace {
using trace::CommType;

const CommType kTypes[] = {CommType::kAllReduce, CommType::kAllGather, CommType::kReduceScatter,
                           CommType::kAllToAll, CommType::kBroadcast};

// A trace holding one collective of `type` moving `elems` floats per rank
// (nccl-tests convention: the send buffer of all_reduce / all_to_all /
// broadcast, the receive buffer of all_gather's input side).
trace::Trace oneCollective(CommType type, uint64_t elems, int n) {
  trace::Trace t;
  t.path = "et_profile_hw";
  trace::CommInfo info;
  info.type = type;
  info.dtype = trace::DType::kFloat;
  info.in_elems = type == CommType::kReduceScatter ? elems * static_cast<uint64_t>(n) : elems;
  info.out_elems = type == CommType::kAllGather ? elems * static_cast<uint64_t>(n) : elems;
  if (type == CommType::kBroadcast) info.root = 0;
  trace::Node node;
  node.id = 2;
  node.name = t.strings.intern("record_param_comms");
  node.kind = trace::NodeKind::kCollective;
  node.comm = 0;
  t.comms.push_back(info);
  t.nodes.push_back(node);
  t.world_size = n;
  return t;
}

std::string firstLine(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "";
}
}  // namespace

void measureCollectives(const ProfileOptions& o, replay::Communicator& comm, HwProfile& hw) {
  const int n = comm.worldSize();
  if (n < 2) return;
  const uint64_t step = o.quick ? 16 : 4;
  const uint64_t top = o.quick ? (uint64_t{1} << 20) : (uint64_t{1} << 24);  // floats
  for (CommType type : kTypes) {
    for (uint64_t elems = 256; elems <= top; elems *= step) {
      trace::Trace t = oneCollective(type, elems, n);
      comm.prepare(t);
      replay::CommCall call{&t, &t.nodes[0], &t.comms[0], {}, {}};
      replay::comm::GroupSpec world{"world", {}, true};
      for (int r = 0; r < n; ++r) world.ranks.push_back(r);
      const replay::comm::Message m = replay::comm::planMessage(
          t, t.nodes[0], t.comms[0], world, comm.rank(), trace::DType::kFloat);
      comm.run(call);  // warm-up: buffers, connections
      const int iters = elems >= (uint64_t{1} << 22) ? 3 : (o.quick ? 10 : 30);
      comm.barrier();
      const double t0 = replay::nowUs();
      for (int i = 0; i < iters; ++i) comm.run(call);
      comm.barrier();
      const double us = (replay::nowUs() - t0) / iters;
      hw.collectives.push_back({std::string(trace::commTypeName(type)), n,
                                static_cast<double>(m.algo_bytes), us, comm.backendName()});
    }
    if (o.progress) {
      o.progress("collectives (" + comm.backendName() + "): " + std::string(trace::commTypeName(type)));
    }
  }
}

HwIdentity thisMachine(const ProfileOptions& o, const replay::Communicator& comm) {
  HwIdentity id;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  id.host = host;
  id.cpu_model = thisCpuModel();
  id.cores = static_cast<int>(std::thread::hardware_concurrency());
  id.device = o.device;
  id.device_model = replay::deviceModel(o.device);
  id.threads = o.threads;
  id.torch_version = TORCH_VERSION;
  id.mpi_version = comm.libraryVersion().empty() ? comm.backendName() : comm.libraryVersion();
  id.etbench_version = ETB_VERSION;
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  id.created = when;
  id.quick = o.quick;
  id.load_avg = loadAverage();
  return id;
}

std::string thisCpuModel() { return firstLine("/proc/cpuinfo", "model name"); }

double loadAverage() {
  std::ifstream in("/proc/loadavg");
  double one = -1;
  if (!(in >> one)) return -1;
  return one;
}

}  // namespace etb::predict
