// SPDX-License-Identifier: MIT
//
// The MPI backend: host-memory collectives on sub-communicators created from
// the trace's process groups. Synchronous calls use the blocking MPI
// collectives (MPI's tuned algorithms, and what a plain MPI loop would call);
// asynchronous ones post MPI_I* and complete in Work::wait() at the trace's
// wait node, so they overlap with the compute between the two.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/base/error.h"
#include "core/base/log.h"
#include "replayer/comm/comm_plan.h"
#include "replayer/comm/comm_stats.h"
#include "replayer/comm/mpi_comm.h"
#include "replayer/comm/mpi_util.h"
#include "replayer/comm/preflight.h"
#include "replayer/comm/scratch_pool.h"
#include "replayer/comm/tensor_bind.h"
#include "replayer/comm/watchdog.h"

namespace etb::replay::comm {
namespace {
using trace::CommType;

double nowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int asCount(uint64_t n, const trace::Trace& t, const trace::Node& node) {
  if (n > static_cast<uint64_t>(INT_MAX)) {
    ETB_INPUT_ERROR(locOf(t, node), "message of ", n, " elements exceeds MPI's int count");
  }
  return static_cast<int>(n);
}

// Buffers and counts of one call; they must outlive a nonblocking call.
struct Posted {
  void* send = nullptr;
  void* recv = nullptr;
  int leases[2] = {-1, -1};
  std::vector<int> sc, sd, rc, rd;  // all_to_allv counts/displacements
};

class MpiCommunicator;

class MpiWork final : public Work {
 public:
  MpiWork(MpiCommunicator* owner, CommCall call, Message m, std::unique_ptr<Posted> p,
          std::string group, double t0, double post_us)
      : owner_(owner), call_(std::move(call)), m_(std::move(m)), p_(std::move(p)),
        group_(std::move(group)), t0_(t0), post_us_(post_us) {}
  ~MpiWork() override;
  void wait() override;
  MPI_Request req = MPI_REQUEST_NULL;

 private:
  MpiCommunicator* owner_;
  CommCall call_;
  Message m_;
  std::unique_ptr<Posted> p_;
  std::string group_;
  double t0_, post_us_;
  bool done_ = false;
};

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(const CommOptions& options)
      : pool_([](size_t n) { return std::calloc(n, 1); }, [](void* p) { std::free(p); }) {
    ETB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
    ETB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_));
    // Replay traffic and control traffic (pre-flight, gathers) on separate
    // communicators so neither can match the other's messages.
    ETB_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &data_));
    ETB_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &ctl_));
    MPI_Comm_set_errhandler(data_, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(ctl_, MPI_ERRORS_RETURN);
    world_spec_.name = "world";
    world_spec_.is_world = true;
    for (int r = 0; r < world_; ++r) world_spec_.ranks.push_back(r);
    setLogRank(rank_);
    if (options.timeout_s > 0) {
      watchdog_ = std::make_unique<Watchdog>(options.timeout_s, [this, t = options.timeout_s](
                                                                    const std::string& what, double s) {
        onTimeout(what, s, t);
      });
    }
  }

  ~MpiCommunicator() override {
    watchdog_.reset();
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin) return;
    freeGroups();
    MPI_Comm_free(&data_);
    MPI_Comm_free(&ctl_);
  }

  int rank() const override { return rank_; }
  int worldSize() const override { return world_; }
  std::string backendName() const override { return "mpi"; }
  std::string libraryVersion() const override {
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int len = 0;
    MPI_Get_library_version(text, &len);
    const std::string all(text, static_cast<size_t>(len));
    return all.substr(0, all.find_first_of(",\n"));
  }

  void prepare(const trace::Trace& trace) override {
    freeGroups();
    prepared_ = false;
    groups_ = runPreflight(trace, world_spec_, rank_,
                           [this](const std::vector<uint64_t>& w) { return allGatherWords(w); });
    createGroups();
    prepared_ = true;
  }

  std::shared_ptr<Work> run(CommCall& call) override;

  void barrier() override { ETB_MPI_CHECK(MPI_Barrier(ctl_)); }
  void sleepingBarrier() override {
    MPI_Request req;
    ETB_MPI_CHECK(MPI_Ibarrier(ctl_, &req));
    for (int done = 0;;) {
      ETB_MPI_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
      if (done) return;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  }
  CommStats stats() const override { return stats_.stats(); }
  void resetStats() override { stats_.resetStats(); }
  std::vector<CollectiveStat> collectiveStats() const override { return stats_.collectiveStats(); }
  void clearCollectiveStats() override { stats_.clearCollectiveStats(); }

  std::vector<std::string> gatherToRoot(const std::string& mine) override;
  double maxOverRanks(double mine) override {
    double all = 0;
    ETB_MPI_CHECK(MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, ctl_));
    return all;
  }

  [[noreturn]] void abortJob(const std::string& message, int code) override {
    std::fprintf(stderr, "et_replay: %s: %s\n", rankAndHost().c_str(), message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

  // Completion of a posted call (sync or from MpiWork::wait()).
  void finish(const Message& m, Posted& p) {
    if (m.op == trace::ReduceOp::kAvg) averageResult(m, p);
    pool_.release(p.leases[0]);
    pool_.release(p.leases[1]);
    p.leases[0] = p.leases[1] = -1;
  }
  void record(const Message& m, const std::string& group, double busy, double exposed) {
    stats_.record(m, group, busy, exposed);
  }
  Watchdog* watchdog() { return watchdog_.get(); }
  static std::string describe(const CommCall& call, const std::string& group) {
    return "node " + std::to_string(call.node->id) + " \"" +
           std::string(call.trace->name(*call.node)) + "\" " +
           std::string(trace::commTypeName(call.info->type)) + " on process group \"" + group + "\"";
  }

 private:
  std::vector<std::vector<uint64_t>> allGatherWords(const std::vector<uint64_t>& mine);
  void createGroups();
  void freeGroups() {
    for (MPI_Comm& c : group_comms_) {
      if (c != MPI_COMM_NULL && c != data_) MPI_Comm_free(&c);
    }
    group_comms_.clear();
  }
  std::unique_ptr<Posted> bind(const Message& m, CommCall& call);
  int issue(const Message& m, const CommCall& call, MPI_Comm comm, Posted& p, MPI_Request* req);
  void averageResult(const Message& m, Posted& p) {
    void* buf = m.type == CommType::kReduceScatter ? p.recv : p.send;
    const uint64_t n = m.type == CommType::kReduceScatter ? m.recv_elems : m.send_elems;
    if (m.type == CommType::kReduce && m.my_rank != m.root) return;
    divideInPlace(buf, n, m.dtype, m.group_size);
  }
  void onTimeout(const std::string& what, double waited, double limit) {
    const std::string msg = "communication timeout: " + what + " blocked for " +
                            std::to_string(waited) + " s (--comm-timeout " +
                            std::to_string(limit) + ")";
    if (mpiThreadMultiple()) abortJob(msg, 3);
    // Without MPI_THREAD_MULTIPLE this thread may not call MPI; exiting
    // without MPI_Finalize makes mpirun end the job all the same.
    std::fprintf(stderr, "et_replay: %s: %s\n", rankAndHost().c_str(), msg.c_str());
    std::fflush(stderr);
    std::_Exit(3);
  }

  int rank_ = 0, world_ = 1;
  MPI_Comm data_ = MPI_COMM_NULL, ctl_ = MPI_COMM_NULL;
  GroupSpec world_spec_;
  std::vector<GroupSpec> groups_;
  std::vector<MPI_Comm> group_comms_;  // parallel to groups_; NULL when not a member
  bool prepared_ = false;
  ScratchPool pool_;
  StatsRecorder stats_;
  std::unique_ptr<Watchdog> watchdog_;
};

MpiWork::~MpiWork() {
  if (done_) return;
  try {
    wait();  // buffers must not be released while MPI may still write them
  } catch (const std::exception& e) {
    ETB_LOG(kError) << "unwaited communication failed: " << e.what();
  }
}

void MpiWork::wait() {
  if (done_) return;
  done_ = true;
  const double t2 = nowUs();
  Watchdog* dog = owner_->watchdog();
  if (dog) dog->enter([this] { return "wait for " + MpiCommunicator::describe(call_, group_); });
  const int rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  if (dog) dog->leave();
  const double t3 = nowUs();
  ETB_MPI_CHECK(rc);
  owner_->finish(m_, *p_);
  owner_->record(m_, group_, t3 - t0_, post_us_ + (t3 - t2));
}

std::vector<std::vector<uint64_t>> MpiCommunicator::allGatherWords(
    const std::vector<uint64_t>& mine) {
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(world_)), displs(static_cast<size_t>(world_));
  ETB_MPI_CHECK(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, ctl_));
  int total = 0;
  for (int r = 0; r < world_; ++r) {
    displs[static_cast<size_t>(r)] = total;
    total += counts[static_cast<size_t>(r)];
  }
  std::vector<uint64_t> flat(static_cast<size_t>(total));
  ETB_MPI_CHECK(MPI_Allgatherv(mine.data(), n, MPI_UINT64_T, flat.data(), counts.data(),
                               displs.data(), MPI_UINT64_T, ctl_));
  std::vector<std::vector<uint64_t>> out;
  for (int r = 0; r < world_; ++r) {
    auto b = flat.begin() + displs[static_cast<size_t>(r)];
    out.emplace_back(b, b + counts[static_cast<size_t>(r)]);
  }
  return out;
}

void MpiCommunicator::createGroups() {
  MPI_Group world_group;
  ETB_MPI_CHECK(MPI_Comm_group(data_, &world_group));
  for (size_t i = 0; i < groups_.size(); ++i) {
    const GroupSpec& g = groups_[i];
    MPI_Comm comm = MPI_COMM_NULL;
    const bool member = std::find(g.ranks.begin(), g.ranks.end(), rank_) != g.ranks.end();
    if (g.is_world) {
      comm = data_;  // a world-sized group reuses the world communicator
    } else if (member) {
      // Collective over the members only, in the same sorted order on every
      // rank, so overlapping groups cannot deadlock each other.
      std::vector<int> ranks(g.ranks.begin(), g.ranks.end());
      MPI_Group grp;
      ETB_MPI_CHECK(MPI_Group_incl(world_group, static_cast<int>(ranks.size()), ranks.data(), &grp));
      ETB_MPI_CHECK(MPI_Comm_create_group(data_, grp, static_cast<int>(i), &comm));
      MPI_Group_free(&grp);
      MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    }
    group_comms_.push_back(comm);
  }
  MPI_Group_free(&world_group);
}

std::unique_ptr<Posted> MpiCommunicator::bind(const Message& m, CommCall& call) {
  auto p = std::make_unique<Posted>();
  const size_t es = static_cast<size_t>(m.elem_size);
  auto scratch = [&](size_t bytes, int slot) {
    p->leases[slot] = pool_.acquire(bytes);
    return pool_.data(p->leases[slot]);
  };
  if (m.in_place) {
    const size_t bytes = m.send_elems * es;
    p->send = boundData(call.inputs, bytes, false);
    if (!p->send) p->send = boundData(call.outputs, bytes, false);
    if (!p->send) p->send = scratch(bytes, 0);
    p->recv = p->send;
  } else {
    if (m.send_elems > 0 || m.type == CommType::kSend) {
      p->send = boundData(call.inputs, m.send_elems * es, false);
      if (!p->send) p->send = scratch(m.send_elems * es, 0);
    }
    if (m.recv_elems > 0 || m.type == CommType::kRecv) {
      p->recv = boundData(call.outputs, m.recv_elems * es, false);
      if (!p->recv && m.type == CommType::kRecv) p->recv = boundData(call.inputs, m.recv_elems * es, false);
      if (!p->recv) p->recv = scratch(m.recv_elems * es, 1);
    }
  }
  if (m.type == CommType::kAllToAllV) {
    for (size_t i = 0; i < m.send_counts.size(); ++i) {
      p->sc.push_back(asCount(m.send_counts[i], *call.trace, *call.node));
      p->sd.push_back(asCount(m.send_displs[i], *call.trace, *call.node));
      p->rc.push_back(asCount(m.recv_counts[i], *call.trace, *call.node));
      p->rd.push_back(asCount(m.recv_displs[i], *call.trace, *call.node));
    }
  }
  return p;
}

std::shared_ptr<Work> MpiCommunicator::run(CommCall& call) {
  ETB_CHECK(call.trace && call.node, "CommCall without trace or node");
  if (!call.info && call.node->comm >= 0) call.info = &call.trace->comms[static_cast<size_t>(call.node->comm)];
  if (!call.info || !isDataCall(call.info->type)) return nullptr;  // wait/init/unknown
  ETB_CHECK(prepared_, "Communicator::run before prepare()");
  const GroupSpec& g = groupOfCall(*call.trace, *call.info, groups_, world_spec_);
  const MPI_Comm comm = &g == &world_spec_ ? data_ : group_comms_[static_cast<size_t>(&g - groups_.data())];
  const trace::DType fallback =
      !call.inputs.empty() && call.inputs[0].defined() ? dtypeOf(call.inputs[0].scalar_type()) : trace::DType::kUnknown;
  Message m = planMessage(*call.trace, *call.node, *call.info, g, rank_, fallback);
  ETB_CHECK(comm != MPI_COMM_NULL, "no communicator for group ", g.name);
  std::unique_ptr<Posted> p = bind(m, call);
  const double t0 = nowUs();
  if (call.info->is_async) {
    MPI_Request req = MPI_REQUEST_NULL;
    const int rc = issue(m, call, comm, *p, &req);
    ETB_MPI_CHECK(rc);
    auto work = std::make_shared<MpiWork>(this, call, std::move(m), std::move(p), g.name, t0,
                                          nowUs() - t0);
    work->req = req;
    return work;
  }
  if (watchdog_) watchdog_->enter([&call, &g] { return describe(call, g.name); });
  const int rc = issue(m, call, comm, *p, nullptr);
  if (watchdog_) watchdog_->leave();
  const double t1 = nowUs();
  ETB_MPI_CHECK(rc);
  finish(m, *p);
  stats_.record(m, g.name, t1 - t0, t1 - t0);
  return nullptr;
}

int MpiCommunicator::issue(const Message& m, const CommCall& call, MPI_Comm comm, Posted& p,
                           MPI_Request* req) {
  const MPI_Datatype t = mpiDatatype(m.dtype);
  const trace::Trace& tr = *call.trace;
  const trace::Node& nd = *call.node;
  const int s = asCount(m.send_elems, tr, nd), r = asCount(m.recv_elems, tr, nd);
  auto op = [&] { return mpiReduceOp(m.op, m.dtype, formatLoc(locOf(tr, nd))); };
  switch (m.type) {
    case CommType::kAllReduce:
      return req ? MPI_Iallreduce(MPI_IN_PLACE, p.send, s, t, op(), comm, req)
                 : MPI_Allreduce(MPI_IN_PLACE, p.send, s, t, op(), comm);
    case CommType::kBroadcast:
      return req ? MPI_Ibcast(p.send, s, t, m.root, comm, req) : MPI_Bcast(p.send, s, t, m.root, comm);
    case CommType::kReduce: {
      const bool root = m.my_rank == m.root;
      const void* in = root ? MPI_IN_PLACE : p.send;
      void* out = root ? p.send : nullptr;
      return req ? MPI_Ireduce(in, out, s, t, op(), m.root, comm, req)
                 : MPI_Reduce(in, out, s, t, op(), m.root, comm);
    }
    case CommType::kAllGather:
      return req ? MPI_Iallgather(p.send, s, t, p.recv, s, t, comm, req)
                 : MPI_Allgather(p.send, s, t, p.recv, s, t, comm);
    case CommType::kReduceScatter:
      return req ? MPI_Ireduce_scatter_block(p.send, p.recv, r, t, op(), comm, req)
                 : MPI_Reduce_scatter_block(p.send, p.recv, r, t, op(), comm);
    case CommType::kAllToAll: {
      const int block = s / m.group_size;
      return req ? MPI_Ialltoall(p.send, block, t, p.recv, block, t, comm, req)
                 : MPI_Alltoall(p.send, block, t, p.recv, block, t, comm);
    }
    case CommType::kAllToAllV:
      return req ? MPI_Ialltoallv(p.send, p.sc.data(), p.sd.data(), t, p.recv, p.rc.data(),
                                  p.rd.data(), t, comm, req)
                 : MPI_Alltoallv(p.send, p.sc.data(), p.sd.data(), t, p.recv, p.rc.data(),
                                 p.rd.data(), t, comm);
    case CommType::kGather: {
      return req ? MPI_Igather(p.send, s, t, p.recv, s, t, m.root, comm, req)
                 : MPI_Gather(p.send, s, t, p.recv, s, t, m.root, comm);
    }
    case CommType::kScatter:
      return req ? MPI_Iscatter(p.send, r, t, p.recv, r, t, m.root, comm, req)
                 : MPI_Scatter(p.send, r, t, p.recv, r, t, m.root, comm);
    case CommType::kBarrier:
      return req ? MPI_Ibarrier(comm, req) : MPI_Barrier(comm);
    case CommType::kSend:
      return req ? MPI_Isend(p.send, s, t, m.peer, 0, comm, req) : MPI_Send(p.send, s, t, m.peer, 0, comm);
    case CommType::kRecv:
      return req ? MPI_Irecv(p.recv, r, t, m.peer, 0, comm, req)
                 : MPI_Recv(p.recv, r, t, m.peer, 0, comm, MPI_STATUS_IGNORE);
    default:
      return MPI_SUCCESS;
  }
}

std::vector<std::string> MpiCommunicator::gatherToRoot(const std::string& mine) {
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(rank_ == 0 ? static_cast<size_t>(world_) : 0);
  ETB_MPI_CHECK(MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, ctl_));
  std::vector<int> displs(counts.size());
  int total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    displs[r] = total;
    total += counts[r];
  }
  std::string flat(static_cast<size_t>(total), '\0');
  ETB_MPI_CHECK(MPI_Gatherv(mine.data(), n, MPI_CHAR, flat.data(), counts.data(), displs.data(),
                            MPI_CHAR, 0, ctl_));
  std::vector<std::string> out;
  for (size_t r = 0; r < counts.size(); ++r) out.push_back(flat.substr(static_cast<size_t>(displs[r]), static_cast<size_t>(counts[r])));
  return out;
}
}  // namespace

std::unique_ptr<Communicator> makeMpiCommunicator(const CommOptions& options) {
  return std::make_unique<MpiCommunicator>(options);
}

}  // namespace etb::replay::comm
