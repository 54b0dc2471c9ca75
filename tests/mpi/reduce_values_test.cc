// SPDX-License-Identifier: MIT
//
// Every reduction op on every dtype the MPI backend maps, value-checked:
// rank r holds v(r, i) = r + 1 + (i mod 3), so over n ranks element i must
// be, in closed form,
//   sum  n (n + 1) / 2 + n (i mod 3)     min  1 + (i mod 3)
//   prod prod_r (r + 1 + (i mod 3))      max  n + (i mod 3)
// Small integers: exact in Half and BFloat16 too (the user ops that add in
// float), so any wrong element is a wrong reduction, not rounding. The odd
// length puts a non-trivial value in the last element.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/mpi/mpi_test_util.h"

namespace etb::test {
namespace {
using trace::CommType;
using trace::DType;
using trace::ReduceOp;

constexpr int64_t kCount = 61;

const std::vector<DType> kDtypes = {DType::kFloat, DType::kDouble, DType::kInt64,
                                    DType::kInt32, DType::kHalf,   DType::kBFloat16};
const std::vector<ReduceOp> kOps = {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin,
                                    ReduceOp::kMax};

at::ScalarType scalarOf(DType d) {
  switch (d) {
    case DType::kDouble: return at::kDouble;
    case DType::kInt64: return at::kLong;
    case DType::kInt32: return at::kInt;
    case DType::kHalf: return at::kHalf;
    case DType::kBFloat16: return at::kBFloat16;
    default: return at::kFloat;
  }
}

std::string label(DType d, ReduceOp op) {
  static const char* names[] = {"sum", "prod", "min", "max", "avg", "?"};
  return std::string(trace::dtypeName(d)) + " " + names[static_cast<int>(op)];
}

at::Tensor iMod3() { return at::remainder(at::arange(kCount, at::kDouble), 3); }

at::Tensor rankInput(int rank, DType d) { return iMod3().add(rank + 1).to(scalarOf(d)); }

// The closed form above, computed in double and cast once at the end.
at::Tensor expected(ReduceOp op, int n, DType d) {
  const at::Tensor m = iMod3();
  at::Tensor e;
  switch (op) {
    case ReduceOp::kSum: e = m.mul(n).add(n * (n + 1) / 2.0); break;
    case ReduceOp::kMin: e = m.add(1); break;
    case ReduceOp::kMax: e = m.add(n); break;
    default:
      e = at::ones({kCount}, at::kDouble);
      for (int r = 0; r < n; ++r) e.mul_(m.add(r + 1));
  }
  return e.to(scalarOf(d));
}

// Wrong elements, and the first one, for a readable failure.
std::string diff(const at::Tensor& got, const at::Tensor& want) {
  const at::Tensor g = got.to(at::kDouble), w = want.to(at::kDouble);
  const at::Tensor bad = g.ne(w).nonzero();
  if (bad.numel() == 0) return "";
  const int64_t i = bad[0][0].item<int64_t>();
  return std::to_string(bad.size(0)) + " wrong elements, first [" + std::to_string(i) + "] = " +
         std::to_string(g[i].item<double>()) + ", want " + std::to_string(w[i].item<double>());
}

struct Reduction {
  trace::NodeId id;
  DType dtype;
  ReduceOp op;
};

// One `type` node of kCount elements per dtype and op (rooted at `root`,
// -1 = none), prepared on `comm`.
std::vector<Reduction> everyDtypeAndOp(replay::Communicator& comm, CommTraceBuilder& b,
                                       CommType type, int64_t root = -1) {
  std::vector<Reduction> out;
  for (DType d : kDtypes) {
    for (ReduceOp op : kOps) {
      trace::CommInfo info = commInfo(type, kCount, kCount, d);
      info.reduce_op = op;
      info.root = root;
      out.push_back({b.add(info), d, op});
    }
  }
  comm.prepare(b.trace());
  return out;
}

TEST(ReduceValues, AllReduceEveryOpAndDtype) {
  replay::Communicator& comm = testComm();
  const int n = comm.worldSize(), rank = comm.rank();
  CommTraceBuilder b;
  for (const Reduction& r : everyDtypeAndOp(comm, b, CommType::kAllReduce)) {
    at::Tensor t = rankInput(rank, r.dtype);
    runNode(comm, b.trace(), r.id, {t}, {t});
    EXPECT_EQ(diff(t, expected(r.op, n, r.dtype)), "") << label(r.dtype, r.op) << " on rank " << rank;
  }
}

// kReduce: the root (the last rank, so not the default 0) gets the
// reduction; every other rank's buffer is left as it was.
TEST(ReduceValues, ReduceToRootEveryOpAndDtype) {
  replay::Communicator& comm = testComm();
  const int n = comm.worldSize(), rank = comm.rank();
  CommTraceBuilder b;
  for (const Reduction& r : everyDtypeAndOp(comm, b, CommType::kReduce, n - 1)) {
    at::Tensor t = rankInput(rank, r.dtype);
    runNode(comm, b.trace(), r.id, {t}, {t});
    // c10d's gloo reduce (like torch.distributed.reduce) leaves non-root
    // buffers unspecified: it reduces through them. Only MPI promises them.
    if (rank != n - 1 && comm.backendName() == "gloo") continue;
    const at::Tensor want = rank == n - 1 ? expected(r.op, n, r.dtype) : rankInput(rank, r.dtype);
    EXPECT_EQ(diff(t, want), "") << "reduce " << label(r.dtype, r.op) << " on rank " << rank
                                 << (rank == n - 1 ? " (root)" : " (not root)");
  }
}

// Reduce-scatter with the 16-bit user ops: chunk r of the reduction lands
// on rank r, so a wrong element anywhere in the vector shows on some rank.
TEST(ReduceValues, ReduceScatterSixteenBitMinMax) {
  replay::Communicator& comm = testComm();
  const int n = comm.worldSize(), rank = comm.rank();
  for (DType d : {DType::kHalf, DType::kBFloat16}) {
    for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kSum}) {
      CommTraceBuilder b;
      trace::CommInfo info = commInfo(CommType::kReduceScatter,
                                      static_cast<uint64_t>(kCount * n), kCount, d);
      info.reduce_op = op;
      const auto id = b.add(info);
      comm.prepare(b.trace());
      at::Tensor in = at::cat(std::vector<at::Tensor>(static_cast<size_t>(n), rankInput(rank, d)));
      at::Tensor out = at::zeros({kCount}, scalarOf(d));
      runNode(comm, b.trace(), id, {in}, {out});
      EXPECT_EQ(diff(out, expected(op, n, d)), "") << "reduce_scatter " << label(d, op)
                                                   << " on rank " << rank;
    }
  }
}

}  // namespace
}  // namespace etb::test
