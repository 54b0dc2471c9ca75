// SPDX-License-Identifier: MIT
//
// The NCCL backend: collectives on CUDA tensors on a dedicated stream.
// NCCL is bootstrapped through MPI (the unique id is broadcast over
// MPI_COMM_WORLD) and process groups become ncclCommSplit children. Like
// torch's ProcessGroupNCCL, the comm stream first waits for the compute
// stream, and completion (at once for sync calls, at the wait node for async
// ones) makes the compute stream wait for the comm stream: the host never
// blocks, so "exposed" time here is host time spent posting.
// Pre-flight, gathers, barrier and abort go through the MPI control backend.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <map>

#include "core/base/error.h"
#include "replayer/comm/comm_plan.h"
#include "replayer/comm/comm_stats.h"
#include "replayer/comm/layered_comm.h"
#include "replayer/comm/mpi_comm.h"
#include "replayer/comm/mpi_util.h"
#include "replayer/comm/preflight.h"
#include "replayer/comm/tensor_bind.h"

#define ETB_CUDA_CHECK(expr)                                                          \
  do {                                                                                \
    const cudaError_t etb_cuda_rc_ = (expr);                                          \
    if (etb_cuda_rc_ != cudaSuccess) {                                                \
      ETB_RUNTIME_ERROR(__FILE__, ":", __LINE__, ": ", #expr, " failed: ",            \
                        cudaGetErrorString(etb_cuda_rc_), " (",                       \
                        ::etb::replay::comm::rankAndHost(), ")");                     \
    }                                                                                 \
  } while (0)

#define ETB_NCCL_CHECK(expr)                                                          \
  do {                                                                                \
    const ncclResult_t etb_nccl_rc_ = (expr);                                         \
    if (etb_nccl_rc_ != ncclSuccess) {                                                \
      ETB_RUNTIME_ERROR(__FILE__, ":", __LINE__, ": ", #expr, " failed: ",            \
                        ncclGetErrorString(etb_nccl_rc_), " ", ncclGetLastError(nullptr), \
                        " (", ::etb::replay::comm::rankAndHost(), ")");               \
    }                                                                                 \
  } while (0)

namespace etb::replay::comm {
namespace {
using trace::CommType;

ncclDataType_t ncclTypeOf(trace::DType d, const SourceLoc& loc) {
  using trace::DType;
  switch (d) {
    case DType::kFloat: return ncclFloat32;
    case DType::kDouble: return ncclFloat64;
    case DType::kHalf: return ncclFloat16;
    case DType::kBFloat16: return ncclBfloat16;
    case DType::kInt64: return ncclInt64;
    case DType::kInt32: return ncclInt32;
    case DType::kInt8: return ncclInt8;
    case DType::kUInt8:
    case DType::kBool: return ncclUint8;
    default: ETB_INPUT_ERROR(loc, "NCCL has no type for ", trace::dtypeName(d));
  }
}

ncclRedOp_t ncclOpOf(trace::ReduceOp op) {
  switch (op) {
    case trace::ReduceOp::kProduct: return ncclProd;
    case trace::ReduceOp::kMin: return ncclMin;
    case trace::ReduceOp::kMax: return ncclMax;
    case trace::ReduceOp::kAvg: return ncclAvg;
    default: return ncclSum;
  }
}

// The compute stream libtorch uses unless told otherwise.
cudaStream_t computeStream() { return cudaStreamLegacy; }

class NcclWork final : public Work {
 public:
  explicit NcclWork(cudaEvent_t done) : done_(done) {}
  void wait() override { ETB_CUDA_CHECK(cudaStreamWaitEvent(computeStream(), done_, 0)); }

 private:
  cudaEvent_t done_;
};

class NcclCommunicator final : public LayeredCommunicator {
 public:
  NcclCommunicator(std::unique_ptr<Communicator> mpi, const CommOptions&)
      : LayeredCommunicator(std::move(mpi)) {
    int devices = 0;
    ETB_CUDA_CHECK(cudaGetDeviceCount(&devices));
    if (devices == 0) ETB_RUNTIME_ERROR("--device cuda: no CUDA device on ", rankAndHost());
    const int local = launcherLocalRank();
    ETB_CUDA_CHECK(cudaSetDevice((local >= 0 ? local : control().rank()) % devices));
    ETB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ncclUniqueId id;
    if (control().rank() == 0) ETB_NCCL_CHECK(ncclGetUniqueId(&id));
    ETB_MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD));
    ETB_NCCL_CHECK(ncclCommInitRank(&world_, control().worldSize(), id, control().rank()));
    world_spec_.name = "world";
    world_spec_.is_world = true;
    for (int r = 0; r < control().worldSize(); ++r) world_spec_.ranks.push_back(r);
  }
  ~NcclCommunicator() override {
    cudaStreamSynchronize(stream_);
    for (ncclComm_t c : group_comms_) {
      if (c && c != world_) ncclCommDestroy(c);
    }
    ncclCommDestroy(world_);
    for (auto& [id, bufs] : scratch_) {
      cudaFree(bufs.first);
      cudaFree(bufs.second);
    }
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    cudaStreamDestroy(stream_);
  }

  std::string backendName() const override { return "nccl"; }

  void prepare(const trace::Trace& trace) override {
    control().prepare(trace);  // pre-flight: every rank agrees or every rank throws
    for (ncclComm_t c : group_comms_) {
      if (c && c != world_) ncclCommDestroy(c);
    }
    group_comms_.clear();
    groups_ = groupsOf(trace, worldSize());
    for (size_t i = 0; i < groups_.size(); ++i) {
      const GroupSpec& g = groups_[i];
      if (g.is_world) {
        group_comms_.push_back(world_);
        continue;
      }
      // Collective over the parent: every rank calls it, in the same order.
      const bool member = std::find(g.ranks.begin(), g.ranks.end(), rank()) != g.ranks.end();
      ncclComm_t c = nullptr;
      ETB_NCCL_CHECK(ncclCommSplit(world_, member ? static_cast<int>(i) : NCCL_SPLIT_NOCOLOR,
                                   rank(), &c, nullptr));
      group_comms_.push_back(c);
    }
  }

  std::shared_ptr<Work> run(CommCall& call) override;


 private:
  void issue(const Message& m, ncclComm_t comm, void* send, void* recv, const SourceLoc& loc);
  std::pair<void*, void*>& scratchFor(trace::NodeId id, size_t send_bytes, size_t recv_bytes) {
    auto& bufs = scratch_[id];  // sized once per node, reused every iteration
    if (!bufs.first) ETB_CUDA_CHECK(cudaMalloc(&bufs.first, std::max<size_t>(send_bytes, 16)));
    if (!bufs.second) ETB_CUDA_CHECK(cudaMalloc(&bufs.second, std::max<size_t>(recv_bytes, 16)));
    return bufs;
  }
  cudaEvent_t nextEvent() {
    if (next_event_ == events_.size()) {
      cudaEvent_t e;
      ETB_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      events_.push_back(e);
    }
    cudaEvent_t e = events_[next_event_];
    next_event_ = (next_event_ + 1) % 4096;  // a ring: far more than calls in flight
    return e;
  }

  ncclComm_t world_ = nullptr;
  cudaStream_t stream_ = nullptr;
  GroupSpec world_spec_;
  std::vector<GroupSpec> groups_;
  std::vector<ncclComm_t> group_comms_;
  std::map<trace::NodeId, std::pair<void*, void*>> scratch_;
  std::vector<cudaEvent_t> events_;
  size_t next_event_ = 0;
};

void NcclCommunicator::issue(const Message& m, ncclComm_t comm, void* send, void* recv,
                             const SourceLoc& loc) {
  const ncclDataType_t t = ncclTypeOf(m.dtype, loc);
  const ncclRedOp_t op = ncclOpOf(m.op);
  const size_t es = static_cast<size_t>(m.elem_size);
  auto at = [es](void* p, uint64_t elems) { return static_cast<char*>(p) + elems * es; };
  switch (m.type) {
    case CommType::kAllReduce:
      ETB_NCCL_CHECK(ncclAllReduce(send, send, m.send_elems, t, op, comm, stream_));
      break;
    case CommType::kBroadcast:
      ETB_NCCL_CHECK(ncclBroadcast(send, send, m.send_elems, t, m.root, comm, stream_));
      break;
    case CommType::kReduce:
      ETB_NCCL_CHECK(ncclReduce(send, send, m.send_elems, t, op, m.root, comm, stream_));
      break;
    case CommType::kAllGather:
      ETB_NCCL_CHECK(ncclAllGather(send, recv, m.send_elems, t, comm, stream_));
      break;
    case CommType::kReduceScatter:
      ETB_NCCL_CHECK(ncclReduceScatter(send, recv, m.recv_elems, t, op, comm, stream_));
      break;
    case CommType::kBarrier:
      ETB_NCCL_CHECK(ncclAllReduce(send, send, 1, ncclFloat32, ncclSum, comm, stream_));
      break;
    case CommType::kSend:
      ETB_NCCL_CHECK(ncclSend(send, m.send_elems, t, m.peer, comm, stream_));
      break;
    case CommType::kRecv:
      ETB_NCCL_CHECK(ncclRecv(recv, m.recv_elems, t, m.peer, comm, stream_));
      break;
    default: {
      // all_to_all(v), gather, scatter: grouped point-to-point, as torch does.
      const uint64_t n = static_cast<uint64_t>(m.group_size);
      ETB_NCCL_CHECK(ncclGroupStart());
      for (int r = 0; r < m.group_size; ++r) {
        const auto ur = static_cast<uint64_t>(r);
        uint64_t sc = 0, sd = 0, rc = 0, rd = 0;
        if (m.type == CommType::kAllToAllV) {
          sc = m.send_counts[ur], sd = m.send_displs[ur], rc = m.recv_counts[ur], rd = m.recv_displs[ur];
        } else if (m.type == CommType::kAllToAll) {
          sc = rc = m.send_elems / n, sd = rd = ur * (m.send_elems / n);
        } else if (m.type == CommType::kGather) {
          sc = r == m.root ? m.send_elems : 0;
          rc = m.my_rank == m.root ? m.send_elems : 0, rd = ur * m.send_elems;
        } else if (m.type == CommType::kScatter) {
          sc = m.my_rank == m.root ? m.recv_elems : 0, sd = ur * m.recv_elems;
          rc = r == m.root ? m.recv_elems : 0;
        }
        if (sc > 0) ETB_NCCL_CHECK(ncclSend(at(send, sd), sc, t, r, comm, stream_));
        if (rc > 0) ETB_NCCL_CHECK(ncclRecv(at(recv, rd), rc, t, r, comm, stream_));
      }
      ETB_NCCL_CHECK(ncclGroupEnd());
    }
  }
}

std::shared_ptr<Work> NcclCommunicator::run(CommCall& call) {
  ETB_CHECK(call.trace && call.node, "CommCall without trace or node");
  if (!call.info && call.node->comm >= 0) call.info = &call.trace->comms[static_cast<size_t>(call.node->comm)];
  if (!call.info || !isDataCall(call.info->type)) return nullptr;
  const GroupSpec& g = groupOfCall(*call.trace, *call.info, groups_, world_spec_);
  ncclComm_t comm = &g == &world_spec_ ? world_ : group_comms_[static_cast<size_t>(&g - groups_.data())];
  const trace::DType fallback =
      !call.inputs.empty() && call.inputs[0].defined() ? dtypeOf(call.inputs[0].scalar_type()) : trace::DType::kUnknown;
  const Message m = planMessage(*call.trace, *call.node, *call.info, g, rank(), fallback);
  const size_t es = static_cast<size_t>(m.elem_size);
  void* send = boundData(call.inputs, m.send_elems * es, true);
  void* recv = m.in_place ? send : boundData(call.outputs, m.recv_elems * es, true);
  if (!send || !recv) {
    auto& bufs = scratchFor(call.node->id, m.send_elems * es, m.recv_elems * es);
    if (!send) send = bufs.first;
    if (!recv) recv = m.in_place ? send : bufs.second;
  }
  const auto t0 = std::chrono::steady_clock::now();
  cudaEvent_t ready = nextEvent(), done = nextEvent();
  ETB_CUDA_CHECK(cudaEventRecord(ready, computeStream()));
  ETB_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready, 0));
  issue(m, comm, send, recv, locOf(*call.trace, *call.node));
  ETB_CUDA_CHECK(cudaEventRecord(done, stream_));
  auto work = std::make_shared<NcclWork>(done);
  if (!call.info->is_async) work->wait();
  const double host_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  stats_.record(m, g.name, host_us, host_us);
  return call.info->is_async ? work : nullptr;
}
}  // namespace

std::unique_ptr<Communicator> makeNcclCommunicator(std::unique_ptr<Communicator> control,
                                                   const CommOptions& options) {
  return std::make_unique<NcclCommunicator>(std::move(control), options);
}

}  // namespace etb::replay::comm
