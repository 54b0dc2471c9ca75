// SPDX-License-Identifier: MIT
//
// The gloo backend against the MPI backend in the same job: the same
// per-rank inputs through both give the same results, and both equal the
// value every rank computes on its own by regenerating every other rank's
// input (a rank-seeded generator), so neither backend is its own reference.
// Integer-valued data keeps sums exact whatever order a backend adds in.
#include <gtest/gtest.h>

#include <algorithm>

#include "etb/config.h"
#include "tests/mpi/mpi_test_util.h"

namespace etb::test {
namespace {
using trace::CommType;
using trace::DType;
using trace::ReduceOp;

struct Pair {
  std::unique_ptr<replay::Communicator> mpi, gloo;
};

Pair& backends() {
  static Pair p = [] {
    replay::CommOptions o;
    o.backend = "mpi";
    Pair out;
    out.mpi = replay::makeCommunicator(o);
    o.backend = "gloo";
    out.gloo = replay::makeCommunicator(o);
    return out;
  }();
  return p;
}

// Rank r's input for call `salt`: integers in [-range, range].
at::Tensor input(int r, int salt, int64_t n, at::ScalarType type, int range = 1000) {
  at::Generator gen = at::detail::createCPUGenerator(static_cast<uint64_t>(1000 * salt + r + 1));
  return at::randint(-range, range + 1, {n}, gen, at::TensorOptions().dtype(at::kLong)).to(type);
}

// Runs node `id` on `comm` with a copy of `in` (in place) and returns it.
at::Tensor inPlace(replay::Communicator& comm, const trace::Trace& t, trace::NodeId id,
                   const at::Tensor& in) {
  at::Tensor buf = in.clone();
  runNode(comm, t, id, {buf}, {buf});
  return buf;
}

class GlooVsMpi : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ETB_WITH_GLOO) GTEST_SKIP() << "built without gloo";
    ASSERT_EQ(backends().gloo->backendName(), "gloo");
    ASSERT_EQ(backends().mpi->backendName(), "mpi");
  }
  replay::Communicator& mpi() { return *backends().mpi; }
  replay::Communicator& gloo() { return *backends().gloo; }
  void prepare(const trace::Trace& t) {
    mpi().prepare(t);
    gloo().prepare(t);
  }
  int rank() { return mpi().rank(); }
  int world() { return mpi().worldSize(); }
};

TEST_F(GlooVsMpi, AllReduceSumMinMaxProductAndAverage) {
  CommTraceBuilder b;
  const std::vector<ReduceOp> ops = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax,
                                     ReduceOp::kProduct, ReduceOp::kAvg};
  std::vector<trace::NodeId> ids;
  for (ReduceOp op : ops) {
    for (DType dt : {DType::kFloat, DType::kInt64, DType::kBFloat16}) {
      trace::CommInfo c = commInfo(CommType::kAllReduce, 257, 257, dt);
      c.reduce_op = op;
      ids.push_back(b.add(c));
    }
  }
  prepare(b.trace());
  size_t k = 0;
  for (size_t o = 0; o < ops.size(); ++o) {
    for (at::ScalarType st : {at::kFloat, at::kLong, at::kBFloat16}) {
      // Small integers: exact in every dtype (bfloat16 up to 256) and order.
      const int salt = static_cast<int>(k);
      const int range = ops[o] == ReduceOp::kProduct ? 2 : st == at::kBFloat16 ? 30 : 100;
      at::Tensor want = input(0, salt, 257, at::kDouble, range);
      for (int r = 1; r < world(); ++r) {
        const at::Tensor x = input(r, salt, 257, at::kDouble, range);
        if (ops[o] == ReduceOp::kMin) want = at::minimum(want, x);
        else if (ops[o] == ReduceOp::kMax) want = at::maximum(want, x);
        else if (ops[o] == ReduceOp::kProduct) want = want * x;
        else want = want + x;
      }
      if (ops[o] == ReduceOp::kAvg) want = st == at::kLong ? want.div(world(), "trunc") : want / world();
      const at::Tensor mine = input(rank(), salt, 257, st, range);
      const at::Tensor m = inPlace(mpi(), b.trace(), ids[k], mine);
      const at::Tensor g = inPlace(gloo(), b.trace(), ids[k], mine);
      EXPECT_TRUE(at::equal(g, m)) << "op " << o << " dtype " << st;
      EXPECT_TRUE(at::equal(g, want.to(st))) << "op " << o << " dtype " << st;
      ++k;
    }
  }
}

// all_to_allv with splits that differ per (source, destination) pair and
// include empty chunks; every element names its origin (s*64 + d*8 + k, exact
// in bfloat16 too, which gloo 1.13 moves as bytes with byte-scaled splits).
TEST_F(GlooVsMpi, AllToAllVSplits) {
  const int n = world();
  auto split = [](int s, int d) { return static_cast<int64_t>((s * 7 + d * 3) % 5); };
  std::vector<int64_t> in_splits, out_splits;
  for (int d = 0; d < n; ++d) in_splits.push_back(split(rank(), d));
  for (int s = 0; s < n; ++s) out_splits.push_back(split(s, rank()));
  int64_t in_n = 0, out_n = 0;
  for (int64_t v : in_splits) in_n += v;
  for (int64_t v : out_splits) out_n += v;
  std::vector<float> send, want;
  for (int d = 0; d < n; ++d) {
    for (int64_t k = 0; k < split(rank(), d); ++k) send.push_back(static_cast<float>(rank() * 64 + d * 8 + k));
  }
  for (int s = 0; s < n; ++s) {
    for (int64_t k = 0; k < split(s, rank()); ++k) want.push_back(static_cast<float>(s * 64 + rank() * 8 + k));
  }
  for (DType dt : {DType::kInt64, DType::kBFloat16}) {
    const at::ScalarType st = dt == DType::kInt64 ? at::kLong : at::kBFloat16;
    CommTraceBuilder b;
    trace::CommInfo c = commInfo(CommType::kAllToAllV, static_cast<uint64_t>(in_n),
                                 static_cast<uint64_t>(out_n), dt);
    c.in_splits = in_splits;
    c.out_splits = out_splits;
    const auto id = b.add(c);
    prepare(b.trace());
    for (replay::Communicator* comm : {&mpi(), &gloo()}) {
      at::Tensor out = at::full({out_n}, -1, at::TensorOptions().dtype(st));
      runNode(*comm, b.trace(), id, {at::tensor(send).to(st)}, {out});
      EXPECT_TRUE(at::equal(out, at::tensor(want).to(st))) << comm->backendName() << " " << st;
    }
  }
}

// Two overlapping sub-groups ({even ranks}, {0 and the last rank}) and the
// world: each sum covers exactly its members.
TEST_F(GlooVsMpi, SubGroupsSumOnlyTheirMembers) {
  const int n = world();
  std::vector<int64_t> evens, ends = {0, n - 1};
  for (int r = 0; r < n; r += 2) evens.push_back(r);
  auto member = [&](const std::vector<int64_t>& g) {
    return std::find(g.begin(), g.end(), rank()) != g.end();
  };
  // A rank's trace holds the calls of its own groups only, as a recording does.
  CommTraceBuilder b;
  const int32_t ge = b.addGroup("1", evens);
  const int32_t gx = b.addGroup("2", ends);
  trace::NodeId ide = 0, idx = 0;
  if (member(evens)) ide = b.add(commInfo(CommType::kAllReduce, 64, 64, DType::kFloat, ge));
  if (member(ends)) idx = b.add(commInfo(CommType::kAllReduce, 64, 64, DType::kFloat, gx));
  const auto idw = b.add(commInfo(CommType::kAllReduce, 64, 64, DType::kFloat));
  prepare(b.trace());
  auto expect = [&](const std::vector<int64_t>& members, trace::NodeId id, int salt) {
    if (!member(members)) return;
    at::Tensor want = at::zeros({64}, at::kDouble);
    for (int64_t r : members) want += input(static_cast<int>(r), salt, 64, at::kDouble);
    const at::Tensor mine = input(rank(), salt, 64, at::kFloat);
    const at::Tensor m = inPlace(mpi(), b.trace(), id, mine);
    const at::Tensor g = inPlace(gloo(), b.trace(), id, mine);
    EXPECT_TRUE(at::equal(g, m)) << "group of node " << id;
    EXPECT_TRUE(at::equal(g, want.to(at::kFloat))) << "group of node " << id;
  };
  std::vector<int64_t> all;
  for (int r = 0; r < n; ++r) all.push_back(r);
  expect(evens, ide, 1);
  expect(ends, idx, 2);
  expect(all, idw, 3);
}

// An async all_reduce returns a Work; the result is there after wait().
TEST_F(GlooVsMpi, AsyncCompletesAtWait) {
  CommTraceBuilder b;
  trace::CommInfo c = commInfo(CommType::kAllReduce, 1 << 16, 1 << 16);
  c.is_async = true;
  const auto id = b.add(c);
  prepare(b.trace());
  at::Tensor t = at::full({1 << 16}, static_cast<float>(rank() + 1));
  replay::CommCall call;
  call.trace = &b.trace();
  call.node = b.trace().find(id);
  call.inputs = {t};
  call.outputs = {t};
  gloo().resetStats();
  std::shared_ptr<replay::Work> work = gloo().run(call);
  ASSERT_TRUE(work);
  work->wait();
  EXPECT_TRUE(at::equal(t, at::full({1 << 16}, world() * (world() + 1) / 2.0f)));
  EXPECT_EQ(gloo().stats().calls, 1u);
  EXPECT_EQ(gloo().stats().bytes, 4u << 16);
}

}  // namespace
}  // namespace etb::test
