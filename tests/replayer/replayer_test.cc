// SPDX-License-Identifier: MIT
#include "replayer/replayer.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <malloc.h>

#include <fstream>
#include <iterator>
#include <string>

#include "core/base/error.h"
#include "core/trace_io.h"
#include "replayer/threads.h"
#include "tests/test_util.h"
#include "tests/replayer/replay_helpers.h"
#include "tests/replayer/trace_builder.h"

namespace etb::replay {
namespace {
using trace::DType;

// 64 MiB is above glibc's largest dynamic mmap threshold (32 MiB), so each
// iteration maps fresh pages for the output of ones() and touches each once:
// 16384 faults of 4 KiB pages per iteration, counted over the measured
// iterations only. Transparent huge pages ("always") would fault per 2 MiB.
TEST(Replayer, MinorFaultsPerIterationCountFreshPages) {
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  const std::string mode((std::istreambuf_iterator<char>(thp)), std::istreambuf_iterator<char>());
  if (mode.find("[always]") != std::string::npos) {
    GTEST_SKIP() << "transparent huge pages are always on: faults are per 2 MiB here";
  }
  constexpr int64_t kFloats = int64_t{16} << 20;
  // ctest runs each test in a process of its own. Run after others in one
  // process (the whole executable), the heap may hold a free chunk that
  // serves the output without mapping anything fresh after the first time.
  if (mallinfo2().fordblks >= static_cast<size_t>(kFloats) * 4) {
    GTEST_SKIP() << "this process's heap already holds " << (mallinfo2().fordblks >> 20)
                 << " MiB free: the output need not be mapped fresh (run it alone)";
  }
  const ReplayResult r =
      test::replayLocal(test::onesTrace(kFloats), test::replayOptions(2, 3, test::Verify::kNo));
  const double pages = kFloats * 4 / 4096.0;
  EXPECT_GE(r.system.minor_faults_per_iter, 0.95 * pages);
  EXPECT_LE(r.system.minor_faults_per_iter, 1.25 * pages);
}

TEST(Replayer, RunsResolvedOpsAndMatchesRecordedOutputs) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto x = b.tensor({4, 8}), w = b.tensor({8, 3}), y = b.tensor({4, 3});
  const auto z = b.tensor({4, 3});
  b.op("aten::mm(Tensor self, Tensor mat2) -> Tensor", {x, w}, {y});
  b.op("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
       {y, y, trace::makeInt(t, 1)}, {z});
  b.op("aten::relu_(Tensor(a!) self) -> Tensor(a!)", {z}, {z});
  ReplayDiagnostics diag;
  const ReplayResult r = test::replayLocal(b.finish(), test::quickOptions(), &diag);
  EXPECT_EQ(r.coverage.operators, 3u);
  EXPECT_EQ(r.coverage.replayed, 3u);
  EXPECT_TRUE(diag.output_mismatches.empty()) << diag.output_mismatches[0];
  EXPECT_EQ(diag.outputs_checked, 3u);
  ASSERT_EQ(r.ops.size(), 3u);
  EXPECT_EQ(r.ops[1].overload, "Tensor");
  EXPECT_EQ(r.replay_iter_ms.samples.size(), 2u);
  EXPECT_GT(r.system.peak_tensor_bytes, 0u);
}

TEST(Replayer, ReportsWrongRecordedShapeAsMismatch) {
  test::TraceBuilder b;
  const auto x = b.tensor({4, 8}), w = b.tensor({8, 3}), y = b.tensor({4, 5});
  b.op("aten::mm(Tensor self, Tensor mat2) -> Tensor", {x, w}, {y});
  ReplayDiagnostics diag;
  test::replayLocal(b.finish(), test::quickOptions(), &diag);
  ASSERT_EQ(diag.output_mismatches.size(), 1u);
  EXPECT_NE(diag.output_mismatches[0].find("shape"), std::string::npos);
}

// The same trace through the et_replay binary: the mismatch is logged
// either way, and only --verify makes it the exit status (1). Catches
// --verify ignored (exit 1 without it: the flag did nothing until now) or
// a verifying run that exits 0.
TEST(Replayer, VerifyMakesAnOutputMismatchTheExitStatus) {
  test::TraceBuilder b;
  const auto x = b.tensor({4, 8}), w = b.tensor({8, 3}), y = b.tensor({4, 5});
  b.op("aten::mm(Tensor self, Tensor mat2) -> Tensor", {x, w}, {y});
  const std::string path = test::makeTempDir("verify") + "/wrong_shape.et.json";
  trace::writeTrace(b.finish(), path);
  const std::string cmd = ETB_BINARY_DIR "/replayer/et_replay " + path + " --threads 1 --iters 1 --quiet";
  std::string out;
  EXPECT_EQ(test::runCommand(cmd, &out), 0) << out;
  EXPECT_NE(out.find("shape"), std::string::npos) << "mismatch not logged without --verify:\n" << out;
  EXPECT_EQ(test::runCommand(cmd + " --verify", &out), 1) << out;
  EXPECT_NE(out.find("shape"), std::string::npos) << out;
}

TEST(Replayer, SkipsUnknownOpAndSynthesisesItsOutput) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto x = b.tensor({2, 2}), y = b.tensor({2, 2}), z = b.tensor({2, 2});
  b.op("etb_test::no_such_op(Tensor self) -> Tensor", {x}, {y});
  b.op("aten::mul.Tensor(Tensor self, Tensor other) -> Tensor", {y, y}, {z});
  b.op("aten::mul.Scalar(Tensor self, Scalar other) -> Tensor", {z, makeString(t, "x")}, {z});
  ReplayDiagnostics diag;
  const ReplayResult r = test::replayLocal(b.finish(), test::quickOptions(), &diag);
  EXPECT_EQ(r.coverage.operators, 3u);
  EXPECT_EQ(r.coverage.replayed, 1u);
  ASSERT_EQ(r.coverage.skipped_ops.size(), 2u);
  EXPECT_EQ(r.coverage.skipped_ops[0].reason, "op not in this libtorch (needs etb_test)");
  EXPECT_EQ(r.coverage.skipped_by_reason.at("expected a Scalar"), 1u);
  EXPECT_TRUE(diag.output_mismatches.empty());
}

TEST(Replayer, EmbeddingIndicesStayInsideTheTable) {
  for (const std::string dist : {"uniform", "zipf:1.2"}) {
    test::TraceBuilder b;
    trace::Trace& t = b.trace();
    const auto table = b.tensor({7, 4}), idx = b.tensor({1000}, DType::kInt64);
    const auto out = b.tensor({1000, 4});
    b.op("aten::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, "
         "bool scale_grad_by_freq=False, bool sparse=False) -> Tensor",
         {table, idx, trace::makeInt(t, -1), trace::makeBool(t, false), trace::makeBool(t, false)},
         {out});
    const auto w2 = b.tensor({5, 3}), idx2 = b.tensor({40}, DType::kInt64);
    const auto off = b.tensor({8}, DType::kInt64), out2 = b.tensor({8, 3});
    b.op("aten::embedding_bag.padding_idx(Tensor weight, Tensor indices, Tensor offsets, "
         "bool scale_grad_by_freq, int mode, bool sparse, Tensor? per_sample_weights, "
         "bool include_last_offset, int? padding_idx) -> (Tensor, Tensor, Tensor, Tensor)",
         {w2, idx2, off, makeBool(t, false), makeInt(t, 0), makeBool(t, false), makeNone(t),
          makeBool(t, false), makeNone(t)},
         {out2});
    ReplayOptions o = test::quickOptions();
    o.index_dist = dist;
    ReplayDiagnostics diag;
    const ReplayResult r = test::replayLocal(b.finish(), o, &diag);
    EXPECT_EQ(r.coverage.replayed, 2u) << dist << ": "
        << (r.coverage.skipped_ops.empty() ? "" : r.coverage.skipped_ops[0].reason);
  }
}

TEST(Replayer, RejectsBadIndexDistribution) {
  EXPECT_THROW(parseIndexDist("zipf:"), InputError);
  EXPECT_THROW(parseIndexDist("normal"), InputError);
  EXPECT_DOUBLE_EQ(parseIndexDist("zipf:1.5"), 1.5);
}

// With denormals flushed, an op over denormal inputs computes zeros on every
// intra-op thread (a tensor large enough that ATen splits it over two);
// kept, the same op returns them. Catches the flush set on the calling
// thread alone (the other thread's half non-zero) or not at all.
TEST(Replayer, DenormalsAreFlushedOnEveryIntraOpThread) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  const at::Tensor tiny = at::full({1 << 20}, 1e-39f);  // below FLT_MIN (1.18e-38)
  ASSERT_TRUE(setFlushDenormal(true)) << "this CPU cannot flush denormals";
  EXPECT_EQ(at::mul(tiny, 1.0).count_nonzero().item<int64_t>(), 0);
  setFlushDenormal(false);
  EXPECT_EQ(at::mul(tiny, 1.0).count_nonzero().item<int64_t>(), tiny.numel());
  at::set_num_threads(threads);
}

}  // namespace
}  // namespace etb::replay
