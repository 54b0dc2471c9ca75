// SPDX-License-Identifier: MIT
//
// Bus bandwidth through etbench's communication layer vs a plain MPI loop of
// the same calls and sizes, in the same run (run under mpirun; see
// scripts/bench_comm.sh). Rounds alternate between the two so background
// load hits both alike; each side reports its median round. nccl-tests
// definitions: algbw = bytes / time; busbw = algbw * 2(n-1)/n (all_reduce)
// or (n-1)/n (all_to_all).
//   comm_busbw_bench [MB...]   (default 16 64)
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "replayer/comm/communicator.h"

namespace {
using namespace etb;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Case {
  trace::CommType type;
  uint64_t elems;  // floats per rank
};

// One timed round of `iters` calls; returns seconds per call (max over ranks).
template <typename F>
double timeRound(int iters, F&& call) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = now();
  for (int i = 0; i < iters; ++i) call();
  double dt = (now() - t0) / iters;
  MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return dt;
}
}  // namespace

int main(int argc, char** argv) {
  replay::CommOptions opts;
  std::unique_ptr<replay::Communicator> comm = replay::makeCommunicator(opts);
  const int rank = comm->rank(), n = comm->worldSize();
  if (n < 2) {
    std::fprintf(stderr, "run under mpirun with at least 2 ranks\n");
    return 2;
  }
  std::vector<double> mbs;
  for (int i = 1; i < argc; ++i) mbs.push_back(std::atof(argv[i]));
  if (mbs.empty()) mbs = {16, 64};

  trace::Trace t;
  t.path = "comm_busbw_bench";
  std::vector<Case> cases;
  for (double mb : mbs) {
    const uint64_t elems = static_cast<uint64_t>(mb * 1024 * 1024 / 4) / static_cast<uint64_t>(n) *
                           static_cast<uint64_t>(n);
    for (trace::CommType type : {trace::CommType::kAllReduce, trace::CommType::kAllToAll}) {
      trace::CommInfo info;
      info.type = type;
      info.dtype = trace::DType::kFloat;
      info.in_elems = info.out_elems = elems;
      trace::Node node;
      node.id = t.nodes.size() + 2;
      node.name = t.strings.intern("record_param_comms");
      node.kind = trace::NodeKind::kCollective;
      node.comm = static_cast<int32_t>(t.comms.size());
      t.comms.push_back(info);
      t.nodes.push_back(node);
      cases.push_back({type, elems});
    }
  }
  comm->prepare(t);
  if (rank == 0) {
    std::printf("# ranks %d; rounds alternate plain MPI / etbench layer; median of 5 rounds\n", n);
    std::printf("# %-10s %10s %12s %12s %12s %12s %8s\n", "collective", "size(MB)", "mpi_us",
                "etb_us", "mpi_busbw", "etb_busbw", "ratio");
  }
  bool ok = true;
  for (size_t c = 0; c < cases.size(); ++c) {
    const Case& k = cases[c];
    at::Tensor a = at::ones({static_cast<int64_t>(k.elems)});
    at::Tensor b = at::zeros({static_cast<int64_t>(k.elems)});
    std::vector<float> pa(k.elems, 1.0f), pb(k.elems);
    const bool ar = k.type == trace::CommType::kAllReduce;
    const int block = static_cast<int>(k.elems / static_cast<uint64_t>(n));
    auto plain = [&] {
      if (ar) MPI_Allreduce(MPI_IN_PLACE, pa.data(), static_cast<int>(k.elems), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else MPI_Alltoall(pa.data(), block, MPI_FLOAT, pb.data(), block, MPI_FLOAT, MPI_COMM_WORLD);
    };
    replay::CommCall call;
    call.trace = &t;
    call.node = &t.nodes[c];
    call.info = &t.comms[c];
    call.inputs = {a};
    call.outputs = {ar ? a : b};
    auto layer = [&] { comm->run(call); };
    const int iters = k.elems * 4 > (32u << 20) ? 3 : 6;
    plain();
    layer();
    std::vector<double> tm, te;
    for (int round = 0; round < 5; ++round) {
      tm.push_back(timeRound(iters, plain));
      te.push_back(timeRound(iters, layer));
    }
    const double bytes = static_cast<double>(k.elems) * 4;
    const double factor = ar ? 2.0 * (n - 1) / n : (n - 1.0) / n;
    const double mpi_bw = bytes / median(tm) / 1e9 * factor;
    const double etb_bw = bytes / median(te) / 1e9 * factor;
    ok = ok && etb_bw >= 0.9 * mpi_bw;
    if (rank == 0) {
      std::printf("  %-10s %10.1f %12.1f %12.1f %12.3f %12.3f %8.3f\n",
                  ar ? "all_reduce" : "all_to_all", bytes / 1048576.0, median(tm) * 1e6,
                  median(te) * 1e6, mpi_bw, etb_bw, etb_bw / mpi_bw);
    }
  }
  if (rank == 0) std::printf("# busbw through the layer %s 90%% of plain MPI\n", ok ? ">=" : "<");
  comm.reset();
  return ok ? 0 : 1;
}
