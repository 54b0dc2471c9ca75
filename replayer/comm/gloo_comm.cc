// SPDX-License-Identifier: MIT
//
// The gloo backend: collectives through libtorch's c10d::ProcessGroupGloo,
// so a trace recorded on torch.distributed's "gloo" backend replays through
// the same algorithms, worker threads and TCP transport as the original.
// Every c10d call is asynchronous (gloo's worker threads run it): sync calls
// wait at once, async ones return a Work that the trace's wait node (or the
// end of the iteration) completes, overlapping the compute in between.
// Rendezvous: rank 0 serves a c10d::TCPStore on 127.0.0.1 (an ephemeral
// port, broadcast over MPI); process groups are ProcessGroupGloo instances
// under their own store prefix. Pre-flight, gathers, barrier and abort go
// through the MPI control backend.
#include <mpi.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>

#include "core/base/error.h"
#include "core/base/log.h"
#include "replayer/comm/comm_stats.h"
#include "replayer/comm/gloo_comm.h"
#include "replayer/comm/layered_comm.h"
#include "replayer/comm/mpi_util.h"
#include "replayer/comm/preflight.h"
#include "replayer/comm/tensor_bind.h"
#include "replayer/comm/watchdog.h"

namespace etb::replay::comm {
namespace {
using trace::CommType;
using PgPtr = c10::intrusive_ptr<c10d::ProcessGroupGloo>;
using C10Work = c10::intrusive_ptr<c10d::Work>;

double nowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

c10d::ReduceOp glooOp(trace::ReduceOp op) {
  switch (op) {
    case trace::ReduceOp::kProduct: return c10d::ReduceOp::PRODUCT;
    case trace::ReduceOp::kMin: return c10d::ReduceOp::MIN;
    case trace::ReduceOp::kMax: return c10d::ReduceOp::MAX;
    default: return c10d::ReduceOp::SUM;  // kAvg: sum, divided at completion
  }
}

// The TCP rendezvous reaches 127.0.0.1 only, so all ranks must share a host.
void requireOneHost() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  ETB_MPI_CHECK(MPI_Get_processor_name(name, &len));
  const auto h = static_cast<unsigned long>(std::hash<std::string>{}(std::string(name, len)));
  unsigned long lo = 0, hi = 0;
  ETB_MPI_CHECK(MPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED_LONG, MPI_MIN, MPI_COMM_WORLD));
  ETB_MPI_CHECK(MPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED_LONG, MPI_MAX, MPI_COMM_WORLD));
  if (lo != hi) {
    ETB_RUNTIME_ERROR("--comm gloo: the ranks run on more than one host, and this build's gloo "
                      "rendezvous listens on 127.0.0.1 only; use --comm mpi");
  }
}

// Equal chunks of a flat tensor, one per group rank.
std::vector<at::Tensor> chunks(const at::Tensor& t, int n) {
  std::vector<at::Tensor> out;
  const int64_t k = t.numel() / n;
  for (int r = 0; r < n; ++r) out.push_back(t.narrow(0, r * k, k));
  return out;
}

std::vector<int64_t> scaled(const std::vector<uint64_t>& counts, int64_t f) {
  std::vector<int64_t> out;
  for (uint64_t c : counts) out.push_back(static_cast<int64_t>(c) * f);
  return out;
}

// Posts `m` on `pg`; the returned c10d work completes it.
C10Work post(c10d::ProcessGroupGloo& pg, const Message& m, GlooBuffers& b) {
  std::vector<at::Tensor> send{b.send}, recv{b.recv};
  switch (m.type) {
    case CommType::kAllReduce:
    case CommType::kReduceScatter: {  // see glooBuffers: all-reduce, keep a chunk
      c10d::AllreduceOptions o;
      o.reduceOp = glooOp(m.op);
      return pg.allreduce(send, o);
    }
    case CommType::kBroadcast: {
      c10d::BroadcastOptions o;
      o.rootRank = m.root;
      return pg.broadcast(send, o);
    }
    case CommType::kReduce: {
      c10d::ReduceOptions o;
      o.reduceOp = glooOp(m.op);
      o.rootRank = m.root;
      return pg.reduce(send, o);
    }
    case CommType::kAllGather: {
      std::vector<std::vector<at::Tensor>> outs{chunks(b.recv, m.group_size)};
      return pg.allgather(outs, send);
    }
    case CommType::kAllToAll: {
      std::vector<int64_t> none;
      return pg.alltoall_base(b.recv, b.send, none, none);
    }
    case CommType::kAllToAllV: {
      std::vector<int64_t> out_splits = scaled(m.recv_counts, b.wire_per_elem);
      std::vector<int64_t> in_splits = scaled(m.send_counts, b.wire_per_elem);
      return pg.alltoall_base(b.recv, b.send, out_splits, in_splits);
    }
    case CommType::kGather: {
      std::vector<std::vector<at::Tensor>> outs;
      if (m.my_rank == m.root) outs.push_back(chunks(b.recv, m.group_size));
      c10d::GatherOptions o;
      o.rootRank = m.root;
      return pg.gather(outs, send, o);
    }
    case CommType::kScatter: {
      std::vector<std::vector<at::Tensor>> ins;
      if (m.my_rank == m.root) ins.push_back(chunks(b.send, m.group_size));
      c10d::ScatterOptions o;
      o.rootRank = m.root;
      return pg.scatter(recv, ins, o);
    }
    case CommType::kBarrier:
      return pg.barrier();
    case CommType::kSend:
      return pg.send(send, m.peer, 0);
    case CommType::kRecv:
      return pg.recv(recv, m.peer, 0);
    default:
      return {};
  }
}

class GlooCommunicator;

class GlooWork final : public Work {
 public:
  GlooWork(GlooCommunicator* owner, C10Work work, Message m, GlooBuffers b, std::string what,
           std::string group, double t0, double post_us)
      : owner_(owner), work_(std::move(work)), m_(std::move(m)), b_(std::move(b)),
        what_(std::move(what)), group_(std::move(group)), t0_(t0), post_us_(post_us) {}
  ~GlooWork() override;
  void wait() override;

 private:
  GlooCommunicator* owner_;
  C10Work work_;
  Message m_;
  GlooBuffers b_;
  std::string what_, group_;
  double t0_, post_us_;
  bool done_ = false;
};

class GlooCommunicator final : public LayeredCommunicator {
 public:
  // Connects every rank through `control`; adopt() then takes it over, so
  // that a failure here leaves the caller's control communicator intact.
  GlooCommunicator(Communicator& control, const CommOptions& options)
      : LayeredCommunicator(control),
        timeout_(options.timeout_s > 0 ? std::chrono::milliseconds(
                                             static_cast<int64_t>(options.timeout_s * 1e3))
                                       : ::kProcessGroupDefaultTimeout) {
    requireOneHost();
    connectStore();
    world_pg_ = makeGroup("world", rank(), worldSize());
    world_spec_.name = "world";
    world_spec_.is_world = true;
    for (int r = 0; r < worldSize(); ++r) world_spec_.ranks.push_back(r);
    if (options.timeout_s > 0) {
      watchdog_ = std::make_unique<Watchdog>(options.timeout_s, [t = options.timeout_s](
                                                                    const std::string& what, double s) {
        onTimeout(what, s, t);
      });
    }
  }
  ~GlooCommunicator() override {
    watchdog_.reset();
    group_pgs_.clear();
    world_pg_.reset();
    // The store's server lives on rank 0: the others disconnect first.
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin && rank() != 0) store_.reset();
    if (!fin) control().barrier();
  }

  void adopt(std::unique_ptr<Communicator> control) { own(std::move(control)); }
  std::string backendName() const override { return "gloo"; }

  void prepare(const trace::Trace& trace) override;
  std::shared_ptr<Work> run(CommCall& call) override;

  void record(const Message& m, const std::string& group, double busy, double exposed) {
    stats_.record(m, group, busy, exposed);
  }
  Watchdog* watchdog() { return watchdog_.get(); }

 private:
  void connectStore();
  PgPtr makeGroup(const std::string& prefix, int rank, int size);
  at::Tensor scratch(trace::NodeId id, int64_t elems, at::ScalarType type, int slot) {
    at::Tensor& t = scratch_[{id, slot}];  // sized once per node, reused every iteration
    if (!t.defined() || t.numel() != elems || t.scalar_type() != type) {
      t = at::zeros({elems}, at::TensorOptions().dtype(type));
    }
    return t;
  }
  static void onTimeout(const std::string& what, double waited, double limit) {
    // gloo's worker threads may hold the call; ending the process makes
    // mpirun end the job, as the MPI backend does without THREAD_MULTIPLE.
    std::fprintf(stderr, "et_replay: %s: communication timeout: %s blocked for %f s (--comm-timeout %f)\n",
                 rankAndHost().c_str(), what.c_str(), waited, limit);
    std::fflush(stderr);
    std::_Exit(3);
  }

  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10d::Store> store_;
  PgPtr world_pg_;
  GroupSpec world_spec_;
  std::vector<GroupSpec> groups_;
  std::vector<PgPtr> group_pgs_;  // parallel to groups_; null when not a member
  int generation_ = 0;            // store prefix of each prepare()'s groups
  std::map<std::pair<trace::NodeId, int>, at::Tensor> scratch_;
  std::unique_ptr<Watchdog> watchdog_;
};

GlooWork::~GlooWork() {
  if (done_) return;
  try {
    wait();  // gloo's threads may still write the buffers
  } catch (const std::exception& e) {
    ETB_LOG(kError) << "unwaited communication failed: " << e.what();
  }
}

void GlooWork::wait() {
  if (done_) return;
  done_ = true;
  const double t2 = nowUs();
  Watchdog* dog = owner_->watchdog();
  if (dog) dog->enter([this] { return "wait for " + what_; });
  try {
    work_->wait();
  } catch (const std::exception& e) {
    if (dog) dog->leave();
    ETB_RUNTIME_ERROR(what_, ": gloo failed: ", e.what(), " (", rankAndHost(), ")");
  }
  if (dog) dog->leave();
  const double t3 = nowUs();
  glooFinish(m_, b_);
  owner_->record(m_, group_, t3 - t0_, post_us_ + (t3 - t2));
}

void GlooCommunicator::connectStore() {
  c10d::TCPStoreOptions o;
  o.isServer = rank() == 0;
  o.numWorkers = static_cast<size_t>(worldSize());
  o.waitWorkers = false;  // the others learn the port only after this returns
  o.timeout = timeout_;
  int port = 0;
  if (rank() == 0) {
    o.port = 0;  // an ephemeral port: several jobs may share the host
    auto server = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", o);
    port = server->getPort();
    store_ = server;
  }
  ETB_MPI_CHECK(MPI_Bcast(&port, 1, MPI_INT, 0, MPI_COMM_WORLD));
  if (rank() != 0) {
    o.port = static_cast<uint16_t>(port);
    store_ = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", o);
  }
}

PgPtr GlooCommunicator::makeGroup(const std::string& prefix, int rank, int size) {
  auto opts = c10d::ProcessGroupGloo::Options::create(timeout_);
  opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  auto store = c10::make_intrusive<c10d::PrefixStore>(prefix, store_);
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, opts);
}

void GlooCommunicator::prepare(const trace::Trace& trace) {
  control().prepare(trace);  // pre-flight: every rank agrees or every rank throws
  group_pgs_.clear();
  groups_ = groupsOf(trace, worldSize());
  ++generation_;
  for (size_t i = 0; i < groups_.size(); ++i) {
    const GroupSpec& g = groups_[i];
    const auto it = std::find(g.ranks.begin(), g.ranks.end(), rank());
    if (g.is_world) {
      group_pgs_.push_back(world_pg_);
    } else if (it == g.ranks.end()) {
      group_pgs_.emplace_back();
    } else {
      // Members only, in the same (sorted) order on every rank, so that
      // overlapping groups cannot wait on each other.
      const std::string prefix = "p" + std::to_string(generation_) + "/" + std::to_string(i);
      group_pgs_.push_back(makeGroup(prefix, static_cast<int>(it - g.ranks.begin()),
                                     static_cast<int>(g.ranks.size())));
    }
  }
}

std::shared_ptr<Work> GlooCommunicator::run(CommCall& call) {
  ETB_CHECK(call.trace && call.node, "CommCall without trace or node");
  if (!call.info && call.node->comm >= 0) call.info = &call.trace->comms[static_cast<size_t>(call.node->comm)];
  if (!call.info || !isDataCall(call.info->type)) return nullptr;
  const GroupSpec& g = groupOfCall(*call.trace, *call.info, groups_, world_spec_);
  const PgPtr& pg = &g == &world_spec_ ? world_pg_ : group_pgs_[static_cast<size_t>(&g - groups_.data())];
  ETB_CHECK(pg, "no gloo process group for group ", g.name);
  const trace::DType fallback =
      !call.inputs.empty() && call.inputs[0].defined() ? dtypeOf(call.inputs[0].scalar_type()) : trace::DType::kUnknown;
  Message m = planMessage(*call.trace, *call.node, *call.info, g, rank(), fallback);
  const trace::NodeId id = call.node->id;
  GlooBuffers b = glooBuffers(m, call.inputs, call.outputs, [this, id](int64_t n, at::ScalarType t, int slot) {
    return scratch(id, n, t, slot);
  });
  const std::string what = "node " + std::to_string(id) + " \"" + std::string(call.trace->name(*call.node)) +
                           "\" " + std::string(trace::commTypeName(m.type)) + " on process group \"" + g.name + "\"";
  const double t0 = nowUs();
  C10Work w;
  try {
    w = post(*pg, m, b);
  } catch (const std::exception& e) {
    ETB_RUNTIME_ERROR(what, ": gloo refused it: ", e.what(), " (", rankAndHost(), ")");
  }
  if (!w) return nullptr;
  auto work = std::make_shared<GlooWork>(this, std::move(w), std::move(m), std::move(b), what,
                                         g.name, t0, nowUs() - t0);
  if (call.info->is_async) return work;
  work->wait();  // busy == exposed: post + wait, all on the host's clock
  return nullptr;
}
}  // namespace

std::unique_ptr<Communicator> makeGlooCommunicator(std::unique_ptr<Communicator>& control,
                                                   const CommOptions& options) {
  auto gloo = std::make_unique<GlooCommunicator>(*control, options);
  gloo->adopt(std::move(control));
  return gloo;
}

}  // namespace etb::replay::comm
