// SPDX-License-Identifier: MIT
//
// Collective correctness through the communicator under mpirun, with
// deterministic inputs whose values encode their origin (nccl-tests style):
// every element is checked, not only timed.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/mpi/mpi_test_util.h"

namespace etb::test {
namespace {
using trace::CommType;
using trace::DType;

struct Ctx {
  replay::Communicator& comm = testComm();
  int rank = comm.rank();
  int n = comm.worldSize();
};

at::Tensor iota(int64_t count, double base) {
  return at::arange(count, at::kDouble).add_(base).to(at::kFloat);
}

TEST(Collectives, AllReduceEqualsSumOverRanks) {
  Ctx c;
  for (bool async : {false, true}) {
    CommTraceBuilder b;
    trace::CommInfo info = commInfo(CommType::kAllReduce, 1000, 1000);
    info.is_async = async;
    const auto id = b.add(info);
    c.comm.prepare(b.trace());
    at::Tensor t = iota(1000, c.rank * 1000.0);
    runNode(c.comm, b.trace(), id, {t}, {t});
    const double rank_sum = c.n * (c.n - 1) / 2.0 * 1000.0;
    const at::Tensor want = at::arange(1000, at::kDouble).mul_(c.n).add_(rank_sum).to(at::kFloat);
    EXPECT_TRUE(at::equal(t, want)) << "async=" << async;
  }
}

TEST(Collectives, AllReduceOpsAndDtypes) {
  Ctx c;
  CommTraceBuilder b;
  trace::CommInfo mx = commInfo(CommType::kAllReduce, 64, 64, DType::kInt64);
  mx.reduce_op = trace::ReduceOp::kMax;
  const auto max_id = b.add(mx);
  const auto half_id = b.add(commInfo(CommType::kAllReduce, 64, 64, DType::kHalf));
  trace::CommInfo avg = commInfo(CommType::kAllReduce, 64, 64, DType::kDouble);
  avg.reduce_op = trace::ReduceOp::kAvg;
  const auto avg_id = b.add(avg);
  c.comm.prepare(b.trace());
  at::Tensor m = at::full({64}, c.rank * 7, at::kLong);
  runNode(c.comm, b.trace(), max_id, {m}, {m});
  EXPECT_TRUE(at::equal(m, at::full({64}, (c.n - 1) * 7, at::kLong)));
  // Half travels as 2-byte words and is summed by the upcasting user op.
  at::Tensor h = at::full({64}, c.rank + 1.0, at::kHalf);
  runNode(c.comm, b.trace(), half_id, {h}, {h});
  EXPECT_TRUE(at::equal(h, at::full({64}, c.n * (c.n + 1) / 2.0, at::kHalf)));
  at::Tensor a = at::full({64}, static_cast<double>(c.rank), at::kDouble);
  runNode(c.comm, b.trace(), avg_id, {a}, {a});
  EXPECT_TRUE(at::allclose(a, at::full({64}, (c.n - 1) / 2.0, at::kDouble)));
}

// Rank s sends s+d+1 rows of 3 elements to rank d; element k of the chunk
// from s to d holds s*10000 + d*100 + k, so every element names its origin.
TEST(Collectives, AllToAllVMovesExactlyTheRecordedSplits) {
  Ctx c;
  constexpr int64_t kRow = 3;
  std::vector<int64_t> in_splits, out_splits;
  for (int d = 0; d < c.n; ++d) in_splits.push_back(c.rank + d + 1);
  for (int s = 0; s < c.n; ++s) out_splits.push_back(s + c.rank + 1);
  int64_t in_rows = 0, out_rows = 0;
  for (auto v : in_splits) in_rows += v;
  for (auto v : out_splits) out_rows += v;
  CommTraceBuilder b;
  trace::CommInfo info = commInfo(CommType::kAllToAllV, static_cast<uint64_t>(in_rows * kRow),
                                  static_cast<uint64_t>(out_rows * kRow));
  info.in_splits = in_splits;
  info.out_splits = out_splits;
  const auto id = b.add(info);
  c.comm.prepare(b.trace());
  std::vector<float> send;
  for (int d = 0; d < c.n; ++d) {
    for (int64_t k = 0; k < in_splits[static_cast<size_t>(d)] * kRow; ++k) {
      send.push_back(static_cast<float>(c.rank * 10000 + d * 100 + k));
    }
  }
  at::Tensor in = at::tensor(send).view({in_rows, kRow});
  at::Tensor out = at::full({out_rows, kRow}, -1.0f);
  runNode(c.comm, b.trace(), id, {in}, {out});
  const float* got = out.data_ptr<float>();
  int64_t pos = 0, wrong = 0;
  for (int s = 0; s < c.n; ++s) {
    for (int64_t k = 0; k < out_splits[static_cast<size_t>(s)] * kRow; ++k, ++pos) {
      wrong += got[pos] != static_cast<float>(s * 10000 + c.rank * 100 + k);
    }
  }
  EXPECT_EQ(pos, out.numel());
  EXPECT_EQ(wrong, 0) << "elements from the wrong origin on rank " << c.rank;
}

TEST(Collectives, AllToAllEqualBlocks) {
  Ctx c;
  const int64_t block = 5, total = block * c.n;
  CommTraceBuilder b;
  const auto id = b.add(commInfo(CommType::kAllToAll, static_cast<uint64_t>(total),
                                 static_cast<uint64_t>(total)));
  c.comm.prepare(b.trace());
  at::Tensor in = iota(total, c.rank * 1000.0), out = at::zeros({total});
  runNode(c.comm, b.trace(), id, {in}, {out});
  for (int s = 0; s < c.n; ++s) {
    EXPECT_TRUE(at::equal(out.slice(0, s * block, (s + 1) * block),
                          iota(block, s * 1000.0 + c.rank * block)));
  }
}

TEST(Collectives, BroadcastCopiesTheRoot) {
  Ctx c;
  CommTraceBuilder b;
  trace::CommInfo info = commInfo(CommType::kBroadcast, 777, 777);
  info.root = c.n - 1;
  const auto id = b.add(info);
  c.comm.prepare(b.trace());
  at::Tensor t = iota(777, c.rank * 1000.0);
  runNode(c.comm, b.trace(), id, {t}, {t});
  EXPECT_TRUE(at::equal(t, iota(777, (c.n - 1) * 1000.0)));
}

TEST(Collectives, AllGatherIntoTensorAndReduceScatter) {
  Ctx c;
  CommTraceBuilder b;
  const auto ag = b.add(commInfo(CommType::kAllGather, 10, static_cast<uint64_t>(10 * c.n)));
  const auto rs = b.add(commInfo(CommType::kReduceScatter, static_cast<uint64_t>(10 * c.n), 10));
  c.comm.prepare(b.trace());
  at::Tensor out = at::zeros({10 * c.n});
  runNode(c.comm, b.trace(), ag, {iota(10, c.rank * 1000.0)}, {out});
  for (int r = 0; r < c.n; ++r) {
    EXPECT_TRUE(at::equal(out.slice(0, r * 10, (r + 1) * 10), iota(10, r * 1000.0)));
  }
  at::Tensor chunk = at::zeros({10});
  runNode(c.comm, b.trace(), rs, {iota(10 * c.n, c.rank)}, {chunk});
  // Element j of the input is rank + j; chunk r sums j = 10r..10r+9 over ranks.
  const double rank_sum = c.n * (c.n - 1) / 2.0;
  EXPECT_TRUE(at::equal(chunk, at::arange(10, at::kDouble).add_(c.rank * 10).mul_(c.n)
                                   .add_(rank_sum).to(at::kFloat)));
}

TEST(Collectives, GatherAndScatterAtTheRoot) {
  Ctx c;
  CommTraceBuilder b;
  trace::CommInfo g = commInfo(CommType::kGather, 4, static_cast<uint64_t>(4 * c.n));
  g.root = 0;
  const auto gid = b.add(g);
  trace::CommInfo s = commInfo(CommType::kScatter, static_cast<uint64_t>(4 * c.n), 4);
  s.root = 1;
  const auto sid = b.add(s);
  c.comm.prepare(b.trace());
  at::Tensor gathered = at::zeros({4 * c.n});
  runNode(c.comm, b.trace(), gid, {iota(4, c.rank * 100.0)}, {gathered});
  if (c.rank == 0) {
    std::vector<float> want;
    for (int r = 0; r < c.n; ++r) {
      for (int i = 0; i < 4; ++i) want.push_back(static_cast<float>(r * 100 + i));
    }
    EXPECT_TRUE(at::equal(gathered, at::tensor(want)));
  }
  at::Tensor part = at::zeros({4});
  runNode(c.comm, b.trace(), sid, {iota(4 * c.n, c.rank * 1000.0)}, {part});
  EXPECT_TRUE(at::equal(part, iota(4, 1000.0 + c.rank * 4)));
}

TEST(Collectives, SendRecvRing) {
  Ctx c;
  CommTraceBuilder b;
  trace::CommInfo send = commInfo(CommType::kSend, 50, 50);
  send.peer = (c.rank + 1) % c.n;
  send.is_async = true;
  const auto sid = b.add(send);
  trace::CommInfo recv = commInfo(CommType::kRecv, 50, 50);
  recv.peer = (c.rank + c.n - 1) % c.n;
  const auto rid = b.add(recv);
  c.comm.prepare(b.trace());
  at::Tensor out = at::zeros({50});
  replay::CommCall call;
  call.trace = &b.trace();
  call.node = b.trace().find(sid);
  call.inputs = {iota(50, c.rank * 1000.0)};
  auto work = c.comm.run(call);
  ASSERT_TRUE(work);
  runNode(c.comm, b.trace(), rid, {}, {out});
  work->wait();
  EXPECT_TRUE(at::equal(out, iota(50, ((c.rank + c.n - 1) % c.n) * 1000.0)));
}

TEST(Collectives, UnboundBuffersUseScratchForEveryType) {
  Ctx c;
  CommTraceBuilder b;
  const uint64_t n = static_cast<uint64_t>(c.n);
  std::vector<trace::NodeId> ids;
  for (CommType t : {CommType::kAllReduce, CommType::kBroadcast, CommType::kReduce,
                     CommType::kAllGather, CommType::kReduceScatter, CommType::kAllToAll,
                     CommType::kGather, CommType::kScatter, CommType::kBarrier}) {
    trace::CommInfo info = commInfo(t, 64 * n, 64 * n, DType::kBFloat16);
    if (t == CommType::kAllGather || t == CommType::kGather) info.in_elems = 64;
    if (t == CommType::kReduceScatter || t == CommType::kScatter) info.out_elems = 64;
    ids.push_back(b.add(info));
  }
  c.comm.prepare(b.trace());
  c.comm.resetStats();
  for (int iter = 0; iter < 3; ++iter) {
    for (auto id : ids) runNode(c.comm, b.trace(), id, {}, {});
  }
  EXPECT_EQ(c.comm.stats().calls, 3 * ids.size());
}

TEST(Collectives, StatsFollowNcclTestsDefinitions) {
  Ctx c;
  CommTraceBuilder b;
  const auto id = b.add(commInfo(CommType::kAllReduce, 1 << 16, 1 << 16));
  c.comm.prepare(b.trace());
  c.comm.clearCollectiveStats();
  for (int iter = 0; iter < 3; ++iter) {
    c.comm.resetStats();
    runNode(c.comm, b.trace(), id, {}, {});
    runNode(c.comm, b.trace(), id, {}, {});
  }
  const replay::CommStats s = c.comm.stats();
  EXPECT_EQ(s.calls, 2u);
  EXPECT_EQ(s.bytes, 2u * (1u << 18));
  EXPECT_GT(s.busy_us, 0);
  const auto coll = c.comm.collectiveStats();
  ASSERT_EQ(coll.size(), 1u);
  EXPECT_EQ(coll[0].type, "all_reduce");
  EXPECT_EQ(coll[0].group, "world");
  EXPECT_EQ(coll[0].bytes, 1u << 18);
  EXPECT_EQ(coll[0].count, 2u);
  EXPECT_NEAR(coll[0].algbw_gbps, coll[0].bytes / (coll[0].time_us * 1e3), 1e-9);
  EXPECT_NEAR(coll[0].busbw_gbps, coll[0].algbw_gbps * 2.0 * (c.n - 1) / c.n, 1e-9);
}

// The suite runs once per backend (ETB_TEST_COMM): a backend that silently
// fell back to MPI would pass everything else without being tested.
TEST(Collectives, RunsOnTheRequestedBackend) {
  const char* want = std::getenv("ETB_TEST_COMM");
  EXPECT_EQ(testComm().backendName(), want ? want : "mpi");
}

TEST(Collectives, GatherToRootCollectsEveryRankInOrder) {
  Ctx c;
  const auto all = c.comm.gatherToRoot("rank" + std::to_string(c.rank));
  if (c.rank != 0) {
    EXPECT_TRUE(all.empty());
    return;
  }
  ASSERT_EQ(all.size(), static_cast<size_t>(c.n));
  for (int r = 0; r < c.n; ++r) EXPECT_EQ(all[static_cast<size_t>(r)], "rank" + std::to_string(r));
}

}  // namespace
}  // namespace etb::test
