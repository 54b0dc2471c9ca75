// SPDX-License-Identifier: MIT
//
// Views must be replayed into their base's storage, as recorded: a write
// through one is seen in the other. Observed from outside the replayer: a
// communication node hands the replayed tensors to the Communicator, and
// this probe (the local communicator plus a copy of what it was given)
// keeps them for the checks. The same probe counts the iterations a replay
// runs (one collective each), for the warm-up's minimum time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "replayer/op_plan.h"
#include "replayer/replayer.h"
#include "tests/replayer/replay_helpers.h"
#include "tests/replayer/trace_builder.h"

namespace etb::replay {
namespace {

class ProbeCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int worldSize() const override { return 1; }
  std::string backendName() const override { return "probe"; }
  void prepare(const trace::Trace& t) override { local_->prepare(t); }
  std::shared_ptr<Work> run(CommCall& call) override {
    seen = call.inputs;  // the replay's own tensors, not copies
    values.clear();
    for (const at::Tensor& t : call.inputs) values.push_back(t.clone());
    history.push_back(values);
    return local_->run(call);
  }
  void barrier() override {}
  CommStats stats() const override { return local_->stats(); }
  void resetStats() override { local_->resetStats(); }
  std::vector<std::string> gatherToRoot(const std::string& mine) override { return {mine}; }
  // The other ranks of a pretend world: in the k-th agreement they ask for
  // peer_asks[k] (nothing once those run out).
  double maxOverRanks(double mine) override {
    const double peer = agreements < peer_asks.size() ? peer_asks[agreements] : 0;
    ++agreements;
    return std::max(mine, peer);
  }
  [[noreturn]] void abortJob(const std::string& m, int code) override {
    local_->abortJob(m, code);
    std::abort();  // not reached; tells the compiler so
  }

  std::vector<at::Tensor> seen, values;
  std::vector<std::vector<at::Tensor>> history;  // values, one entry per call
  std::vector<double> peer_asks;
  size_t agreements = 0;

 private:
  std::unique_ptr<Communicator> local_ = makeLocalCommunicator();
};

// A record_param_comms all_reduce whose inputs are `inputs`.
void addComm(test::TraceBuilder& b, std::vector<trace::Value> inputs) {
  trace::CommInfo info;
  info.type = trace::CommType::kAllReduce;
  info.dtype = trace::DType::kFloat;
  info.in_elems = info.out_elems = 16;
  b.collective(900, info, std::move(inputs));
}

TEST(Replayer, ViewsShareTheirRecordedStorage) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto base = b.tensor({4, 4}, trace::DType::kFloat, 999);
  auto row = b.tensor({4}, trace::DType::kFloat, 999);
  t.tensors[row.tensor].offset = 4;  // row 1 of the same storage
  b.op("aten::zero_(Tensor(a!) self) -> Tensor(a!)", {base}, {base});
  b.op("aten::add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
       {row, trace::makeInt(t, 5), trace::makeInt(t, 1)}, {row});
  addComm(b, {base, row});
  ProbeCommunicator probe;
  ReplayDiagnostics diag;
  const ReplayResult r = replayTrace(b.finish(), test::quickOptions(), probe, &diag);
  EXPECT_EQ(r.coverage.replayed, 2u);
  EXPECT_TRUE(diag.output_mismatches.empty());
  ASSERT_EQ(probe.seen.size(), 2u);
  const at::Tensor& got_base = probe.seen[0];
  const at::Tensor& got_row = probe.seen[1];
  // Same allocation, the row 4 floats into it: the recorded offset.
  EXPECT_TRUE(got_row.storage().is_alias_of(got_base.storage()));
  EXPECT_EQ(static_cast<const char*>(got_row.data_ptr()),
            static_cast<const char*>(got_base.data_ptr()) + 4 * sizeof(float));
  // zero_ on the base, then += 5 through the view: row 1 of the base is 5.
  at::Tensor want = at::zeros({4, 4});
  want[1].fill_(5);
  EXPECT_TRUE(at::equal(probe.values[0], want)) << probe.values[0];
  EXPECT_TRUE(at::equal(probe.values[1], at::full({4}, 5.0f))) << probe.values[1];
}

// One all_reduce per iteration: the communicator sees every iteration run,
// warm-up ones included.
trace::Trace oneCollective() {
  test::TraceBuilder b;
  const auto x = b.tensor({16});
  b.op("aten::relu_(Tensor(a!) self) -> Tensor(a!)", {x}, {x});
  addComm(b, {x});
  return b.finish();
}

TEST(Replayer, AWarmUpShorterThanTheMinimumTimeRunsMoreIterationsUntilItIsNot) {
  ReplayOptions o = test::replayOptions(2, 3, test::Verify::kNo);
  o.min_warmup_s = 0.2;
  ProbeCommunicator probe;
  const ReplayResult r = replayTrace(oneCollective(), o, probe);
  // A microsecond iteration: thousands more to fill 0.2 s, each one run.
  EXPECT_GT(r.warmup, 100);
  EXPECT_GE(r.warmup_ms, 200);
  EXPECT_LT(r.warmup_ms, 2000);  // rounds sized by the last: no runaway
  EXPECT_EQ(probe.history.size(), static_cast<size_t>(r.warmup + r.iters));

  o.min_warmup_s = 0;  // the count asked for, no more
  ProbeCommunicator exact;
  const ReplayResult e = replayTrace(oneCollective(), o, exact);
  EXPECT_EQ(e.warmup, 2);
  EXPECT_EQ(exact.history.size(), 5u);

  o.warmup = 0;  // the first iteration measured: no warm-up, whatever the time
  o.min_warmup_s = 0.2;
  ProbeCommunicator none;
  const ReplayResult n = replayTrace(oneCollective(), o, none);
  EXPECT_EQ(n.warmup, 0);
  EXPECT_EQ(none.history.size(), 3u);
  EXPECT_EQ(none.agreements, 0u);
}

// --min-iters-s: after --iters' iterations, as many more as their time per
// iteration says fill it, each one run and measured (a sample each); none
// more with 0. The ranks agree: a rank whose own clock asks for fewer
// runs the count another rank asked for. Catches the added iterations
// left out of the report, run without their collectives, or not agreed.
TEST(Replayer, MeasuredIterationsShorterThanTheMinimumTimeAreFollowedByMore) {
  ReplayOptions o = test::replayOptions(2, 3, test::Verify::kNo);
  o.min_iters_s = 0.05;
  ProbeCommunicator probe;
  const ReplayResult r = replayTrace(oneCollective(), o, probe);
  EXPECT_GT(r.iters, 30);  // microsecond iterations: many more for 50 ms
  EXPECT_LE(r.iters, 3 + 10000);
  EXPECT_EQ(r.replay_iter_ms.samples.size(), static_cast<size_t>(r.iters));
  EXPECT_EQ(probe.history.size(), static_cast<size_t>(r.warmup + r.iters));

  o.min_iters_s = 0;
  ProbeCommunicator exact;
  const ReplayResult e = replayTrace(oneCollective(), o, exact);
  EXPECT_EQ(e.iters, 3);
  EXPECT_EQ(exact.history.size(), 5u);

  o.min_iters_s = 1e-9;  // this rank: none more; another asks for 40 in all
  ProbeCommunicator agreed;
  agreed.peer_asks = {0, 40};  // the warm-up's agreement, then the measured iterations'
  const ReplayResult a = replayTrace(oneCollective(), o, agreed);
  EXPECT_EQ(a.iters, 40);
  EXPECT_EQ(a.replay_iter_ms.samples.size(), 40u);
  EXPECT_EQ(agreed.history.size(), static_cast<size_t>(2 + 40));
}

// Ranks run the same iterations: a rank whose own clock says the warm-up is
// long enough still runs the count another rank asked for.
TEST(Replayer, EveryRankRunsTheLargestWarmUpCountAnyRankAskedFor) {
  ReplayOptions o = test::replayOptions(2, 3, test::Verify::kNo);
  o.min_warmup_s = 0;
  ProbeCommunicator probe;
  probe.peer_asks = {40};
  const ReplayResult r = replayTrace(oneCollective(), o, probe);
  EXPECT_EQ(r.warmup, 2 + 40);
  EXPECT_EQ(probe.history.size(), static_cast<size_t>(2 + 40 + 3));
  EXPECT_EQ(probe.agreements, 2u);  // the round of 40, then all ranks done
}

// A 1.0.x trace records no strides. `w` and the views of it (made by
// children of an op the replay runs whole) share one storage; `views` are
// the children's outputs, taken by the replay as leaves.
struct UnstridedViews {
  trace::Trace trace;
  std::vector<trace::Value> probed;  // w, then each view, then extra
};

// linear(x[2,4], w) -> [2,6], replayed whole: the nodes added after it with
// childOf() are its children, which the replay does not run.
trace::NodeId addLinear(test::TraceBuilder& b, const trace::Value& w) {
  const auto x = b.tensor({2, 4}), y = b.tensor({2, 6});
  return b.op("aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
              {x, w, trace::makeNone(b.trace())}, {y});
}

void childOf(test::TraceBuilder& b, trace::NodeId parent) { b.trace().nodes.back().parent = parent; }

ReplayResult replayProbed(UnstridedViews& u, ProbeCommunicator& probe) {
  for (trace::TensorRef& r : u.trace.tensors) r.has_strides = false;
  return replayTrace(std::move(u.trace), test::replayOptions(0, 1, test::Verify::kNo), probe);
}

TEST(Replayer, UnstridedLeafViewsTakeTheLayoutOfTheirRecordedViewOp) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const uint64_t kW = 500, kP = 501;
  const auto w = b.tensor({6, 4}, trace::DType::kFloat, kW);
  const auto wt = b.tensor({4, 6}, trace::DType::kFloat, kW);     // w.t()
  const auto back = b.tensor({6, 4}, trace::DType::kFloat, kW);   // w.t().t()
  const auto p = b.tensor({2, 3, 5}, trace::DType::kFloat, kP);
  const auto pp = b.tensor({5, 2, 3}, trace::DType::kFloat, kP);  // p.permute(2, 0, 1)
  const auto ptr = b.tensor({2, 5, 3}, trace::DType::kFloat, kP); // p.transpose(-1, 1)
  // linear(x, w) is replayed whole; its child t(w) is not, so w.t() is a leaf.
  const trace::NodeId linear = addLinear(b, w);
  b.op("aten::t(Tensor(a) self) -> Tensor(a)", {w}, {wt});
  childOf(b, linear);
  b.op("aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)", {p, test::intList(t, {2, 0, 1})},
       {pp});
  childOf(b, linear);
  b.op("aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
       {p, trace::makeInt(t, -1), trace::makeInt(t, 1)}, {ptr});
  childOf(b, linear);
  // The backward's own t() of the saved w.t(): replayed, it gives w back.
  b.op("aten::t(Tensor(a) self) -> Tensor(a)", {wt}, {back});
  addComm(b, {w, wt, p, pp, ptr, back});
  UnstridedViews u{b.finish(), {}};
  ProbeCommunicator probe;
  const ReplayResult r = replayProbed(u, probe);
  EXPECT_EQ(r.coverage.skipped, 0u);
  ASSERT_EQ(probe.seen.size(), 6u);
  const at::Tensor &gw = probe.seen[0], &gwt = probe.seen[1], &gp = probe.seen[2];
  // Strides in closed form: w is [6,4] row-major, p is [2,3,5] row-major.
  EXPECT_EQ(gw.strides().vec(), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(gwt.strides().vec(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(probe.seen[3].strides().vec(), (std::vector<int64_t>{1, 15, 5}));
  EXPECT_EQ(probe.seen[4].strides().vec(), (std::vector<int64_t>{15, 1, 5}));
  EXPECT_TRUE(probe.seen[5].is_contiguous()) << probe.seen[5].strides();
  // And they alias as recorded: the views read the same elements.
  EXPECT_TRUE(at::equal(probe.values[1], probe.values[0].t()));
  EXPECT_TRUE(at::equal(probe.values[3], probe.values[2].permute({2, 0, 1})));
  EXPECT_TRUE(at::equal(probe.values[4], probe.values[2].transpose(-1, 1)));
  EXPECT_EQ(gwt.data_ptr(), gw.data_ptr());
  EXPECT_EQ(probe.seen[3].data_ptr(), gp.data_ptr());
}

TEST(Replayer, AViewOpWhoseShapesDisagreeLeavesTheLeafContiguous) {
  // A recorded t() whose output shape is not its input's transposed (a
  // reused tensor id, a hand-edited trace) says nothing about the layout.
  test::TraceBuilder b;
  const auto w = b.tensor({6, 4}, trace::DType::kFloat, 600);
  const auto odd = b.tensor({3, 8}, trace::DType::kFloat, 600);
  const trace::NodeId linear = addLinear(b, w);
  b.op("aten::t(Tensor(a) self) -> Tensor(a)", {w}, {odd});
  childOf(b, linear);
  addComm(b, {odd});
  UnstridedViews u{b.finish(), {}};
  ProbeCommunicator probe;
  replayProbed(u, probe);
  ASSERT_EQ(probe.seen.size(), 1u);
  EXPECT_EQ(probe.seen[0].strides().vec(), (std::vector<int64_t>{8, 1}));
}

// A GPU replay keeps the CPU tensors of a GPU trace on the CPU (libtorch 2.11's
// efficient-attention backward read its CPU philox seed through a pointer to
// GPU memory and crashed when they were moved) and moves a CPU trace's all.
// No GPU needed: only the decision is checked.
TEST(LeafDevices, AGpuTracesCpuTensorsStayOnTheCpuACpuTraceMovesWhole) {
  using detail::LeafDevices;
  const at::Device cuda(at::kCUDA, 0);
  test::TraceBuilder cpu_trace;
  cpu_trace.tensor({4});
  cpu_trace.tensor({2, 2});
  trace::Trace& ct = cpu_trace.trace();
  const trace::StrId cpu = ct.strings.intern("cpu");
  const LeafDevices from_cpu_trace(ct, cuda);
  EXPECT_EQ(from_cpu_trace.of(cpu), cuda);
  EXPECT_EQ(LeafDevices(ct, at::Device(at::kCPU)).of(cpu), at::Device(at::kCPU));

  test::TraceBuilder gpu_trace;
  gpu_trace.tensor({8, 64});
  gpu_trace.tensor({});  // a philox seed: int64 scalar on the CPU
  trace::Trace& gt = gpu_trace.trace();
  const trace::StrId on_gpu = gt.strings.intern("cuda:0");
  const trace::StrId on_cpu = gt.strings.intern("cpu");
  gt.tensors[0].device = on_gpu;
  const LeafDevices from_gpu_trace(gt, cuda);
  EXPECT_EQ(from_gpu_trace.of(on_gpu), cuda);
  EXPECT_EQ(from_gpu_trace.of(on_cpu), at::Device(at::kCPU));
  // Replayed on the CPU (--device cpu, a functional replay of a GPU trace).
  EXPECT_EQ(LeafDevices(gt, at::Device(at::kCPU)).of(on_gpu), at::Device(at::kCPU));
}

// A recorded storage id names an address, and the allocator gives a freed
// address to the next allocation: tensors on one id are one allocation only
// where they could be (views, tensors made before the recording), and the
// replay's leaves share a buffer only then. Before, a replayed resnet18 read
// a batch norm's save_mean through the buffer of a later gradient (1e33)
// and ran on NaN from its first backward on.
TEST(Replayer, AStorageIdTheRecordingReusedIsOneBufferPerAllocation) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const uint64_t kS = 700;
  constexpr const char* kRelu = "aten::relu(Tensor self) -> Tensor";
  // Made before the recording: a tensor and a view of its second half.
  const auto a = b.tensor({4}, trace::DType::kFloat, kS);
  auto half = b.tensor({2}, trace::DType::kFloat, kS);
  t.tensors[half.tensor].offset = 2;
  const auto y = b.tensor({4}), y2 = b.tensor({2}), z = b.tensor({4});
  b.op(kRelu, {a}, {y});
  b.op(kRelu, {half}, {y2});
  // Later the address serves a new allocation, made by a child of a replayed
  // op (a leaf to the replay), and a view of it made by another child.
  const auto later = b.tensor({4}, trace::DType::kFloat, kS);
  const auto later_view = b.tensor({4}, trace::DType::kFloat, kS);
  const trace::NodeId parent = b.op(kRelu, {y}, {z});
  b.op("aten::ones_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
       {y, trace::makeNone(t), trace::makeNone(t), trace::makeNone(t), trace::makeNone(t),
        trace::makeNone(t)},
       {later});
  childOf(b, parent);
  b.op("aten::alias(Tensor(a) self) -> Tensor(a)", {later}, {later_view});
  childOf(b, parent);
  // Then a scalar that no recorded op made (a Python number, wrapped).
  const auto scalar = b.tensor({}, trace::DType::kFloat, kS);
  const auto w = b.tensor({4});
  b.op("aten::mul.Tensor(Tensor self, Tensor other) -> Tensor", {z, scalar}, {w});
  addComm(b, {a, half, later, later_view, scalar});
  ProbeCommunicator probe;
  const ReplayResult r = replayTrace(b.finish(), test::quickOptions(), probe);
  EXPECT_EQ(r.coverage.skipped, 0u);
  ASSERT_EQ(probe.seen.size(), 5u);
  const auto shared = [&](size_t i, size_t j) {
    return probe.seen[i].storage().is_alias_of(probe.seen[j].storage());
  };
  EXPECT_TRUE(shared(0, 1)) << "a view made before the recording shares its base's buffer";
  EXPECT_TRUE(shared(2, 3)) << "a view of the later allocation shares its buffer";
  EXPECT_FALSE(shared(0, 2)) << "the later allocation at the same address is another buffer";
  EXPECT_FALSE(shared(4, 0));
  EXPECT_FALSE(shared(4, 2)) << "a wrapped scalar is its own allocation";
}

// Every iteration starts from the values the first one did: a leaf an op
// updates in place is drawn again (with the same values) before each one;
// --state carry lets the updates accumulate, as a training loop would.
TEST(Replayer, EveryIterationStartsFromTheSameLeafValues) {
  const auto build = [] {
    test::TraceBuilder b;
    trace::Trace& t = b.trace();
    const auto w = b.tensor({8}, trace::DType::kFloat, 800);
    b.op("aten::add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
         {w, trace::makeInt(t, 5), trace::makeInt(t, 1)}, {w});
    addComm(b, {w});
    return b.finish();
  };
  ReplayOptions o = test::replayOptions(0, 3, test::Verify::kNo);
  ProbeCommunicator reset;
  const ReplayResult r = replayTrace(build(), o, reset);
  ASSERT_EQ(reset.history.size(), 3u);
  EXPECT_EQ(r.state, "reset");
  EXPECT_EQ(r.state_reset_bytes, 8 * 4);
  const at::Tensor first = reset.history[0][0];
  // Drawn from [0, 1), then + 5 once.
  EXPECT_GE(first.min().item<float>(), 5.0f);
  EXPECT_LT(first.max().item<float>(), 6.0f);
  for (size_t i = 1; i < 3; ++i) EXPECT_TRUE(at::equal(reset.history[i][0], first)) << i;

  o.carry_state = true;
  ProbeCommunicator carry;
  replayTrace(build(), o, carry);
  ASSERT_EQ(carry.history.size(), 3u);
  EXPECT_TRUE(at::allclose(carry.history[1][0], carry.history[0][0] + 5));
  EXPECT_TRUE(at::allclose(carry.history[2][0], carry.history[0][0] + 10));
}

// A layer's weight is drawn as PyTorch initialises one: zero-mean, within
// 1/sqrt(fan_in). All-positive weights from [0, 1) made gradients grow by
// about fan_in / 2 per layer, to inf in a resnet18's first backward.
TEST(Replayer, LayerWeightsAreDrawnZeroMeanWithinOneOverRootFanIn) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto x = b.tensor({2, 3, 8, 8}), w = b.tensor({16, 3, 3, 3}), y = b.tensor({2, 16, 6, 6});
  b.op("aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
       "int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor",
       {x, w, trace::makeNone(t), test::intList(t, {1, 1}), test::intList(t, {0, 0}),
        test::intList(t, {1, 1}), trace::makeInt(t, 1)},
       {y});
  const auto lx = b.tensor({2, 64}), lw = b.tensor({32, 64}), ly = b.tensor({2, 32});
  b.op("aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
       {lx, lw, trace::makeNone(t)}, {ly});
  addComm(b, {x, w, lw});
  ProbeCommunicator probe;
  replayTrace(b.finish(), test::quickOptions(), probe);
  ASSERT_EQ(probe.values.size(), 3u);
  const auto within = [](const at::Tensor& v, double bound) {
    EXPECT_GE(v.min().item<double>(), -bound);
    EXPECT_LT(v.max().item<double>(), bound);
    EXPECT_LT(v.min().item<double>(), 0.0) << "zero-mean: some negative";
  };
  within(probe.values[1], 1.0 / std::sqrt(3.0 * 3 * 3));  // fan_in = C * kh * kw
  within(probe.values[2], 1.0 / 8);                       // fan_in = 64
  EXPECT_GE(probe.values[0].min().item<double>(), 0.0) << "an input keeps [0, 1)";
}

// An op that makes NaN out of NaN-free inputs is listed (first iteration):
// here the log of values below zero.
TEST(Replayer, OpsThatMakeNanAreListed) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto x = b.tensor({16}), shifted = b.tensor({16}), logged = b.tensor({16}),
             doubled = b.tensor({16});
  b.op("aten::sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
       {x, trace::makeInt(t, 2), trace::makeInt(t, 1)}, {shifted});
  const trace::NodeId log = b.op("aten::log(Tensor self) -> Tensor", {shifted}, {logged});
  b.op("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
       {logged, logged, trace::makeInt(t, 1)}, {doubled});
  const ReplayResult r = test::replayLocal(b.finish());
  EXPECT_EQ(r.coverage.nan_outputs, 1u) << "the add of NaN is not listed: its input held it";
  ASSERT_EQ(r.coverage.nan_ops.size(), 1u);
  EXPECT_EQ(r.coverage.nan_ops[0].node_id, log);
  EXPECT_EQ(r.coverage.nan_ops[0].name, "aten::log");
}

}  // namespace
}  // namespace etb::replay
