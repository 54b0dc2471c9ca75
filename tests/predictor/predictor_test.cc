// SPDX-License-Identifier: MIT
// predictIteration on built and recorded traces: one rank sums its ops; an
// op this libtorch lacks is skipped (as et_replay skips it); nothing of the
// trace runs while predicting.
#include <gtest/gtest.h>

#include <cmath>

#include <ATen/ATen.h>

#include "core/base/error.h"
#include "core/trace_io.h"
#include "predictor/aten_call_counter.h"
#include "predictor/op_model.h"
#include "predictor/predictor.h"
#include "replayer/comm/communicator.h"
#include "tests/replayer/trace_builder.h"

namespace etb::predict {
namespace {
using test::TraceBuilder;

HwProfile smallProfile() {
  HwProfile hw;
  hw.dispatch_us = 1.0;
  hw.view_us = 0.5;
  hw.gemm = {{1, 64, 32, 128, 40.0}, {1, 8, 8, 8, 1.5}};
  hw.bandwidth["unary"] = {{1000, 2}, {4000, 4}};
  return hw;
}

TEST(AtenCallCounter, CountsTheOpsThatRunWhileAlive) {
  const at::Tensor a = at::ones({4});
  const AtenCallCounter counter;
  const at::Tensor b = at::relu(a);
  EXPECT_GE(counter.calls(), 1u);
}

// An mm of a measured shape, a relu on the unary curve, and an op this
// libtorch does not have.
trace::Trace mmReluAndAnOpThisBuildLacks() {
  TraceBuilder b;
  const auto a = b.tensor({64, 128}), w = b.tensor({128, 32}), y = b.tensor({64, 32});
  b.op("aten::mm(Tensor self, Tensor mat2) -> Tensor", {a, w}, {y});
  const auto r = b.tensor({500}), out = b.tensor({500});
  b.op("aten::relu(Tensor self) -> Tensor", {r}, {out});
  b.op("fbgemm::not_in_this_build(Tensor self) -> Tensor", {r}, {out});
  return b.finish();
}

TEST(Predictor, OneRankTakesTheSumOfItsOpsAndSkipsOpsThisLibtorchLacks) {
  const trace::Trace t = mmReluAndAnOpThisBuildLacks();
  const Prediction p = predictIteration({&t}, smallProfile(), {});
  EXPECT_EQ(p.ops, 3u);
  EXPECT_EQ(p.skipped, 1u);
  EXPECT_NEAR(p.iter_ms, (40.0 + 4.0) / 1e3, 1e-9);  // mm (measured) + relu (curve)
  EXPECT_EQ(p.aten_calls, 0u);
}

// Chakra's converter numbers the parts of an op it split around kernels
// ("aten::mm(0)", with aten::mm's schema); et_replay calls the schema's op.
// So must the predictor: the same sum, nothing more skipped, and the kind
// reported as aten::mm. Catches the node's name used to resolve or model.
TEST(Predictor, AnOpNumberedByChakraIsTheOpItsSchemaNames) {
  trace::Trace t = mmReluAndAnOpThisBuildLacks();
  for (trace::Node& n : t.nodes) {
    if (t.name(n) == "aten::mm") n.name = t.strings.intern("aten::mm(0)");
  }
  const Prediction p = predictIteration({&t}, smallProfile(), {});
  EXPECT_EQ(p.skipped, 1u);
  EXPECT_NEAR(p.iter_ms, (40.0 + 4.0) / 1e3, 1e-9);
  ASSERT_FALSE(p.ranks.empty());
  EXPECT_EQ(p.ranks[0].ops.front().name, "aten::mm");
}

// et_replay's own cost per op (replay_step_us) joins every op it runs, not
// the ones it skips: closed form over the same built trace.
TEST(Predictor, EachReplayedOpPaysTheReplayStep) {
  const trace::Trace t = mmReluAndAnOpThisBuildLacks();
  HwProfile hw = smallProfile();
  hw.replay_step_us = 0.75;
  const Prediction p = predictIteration({&t}, hw, {});
  EXPECT_NEAR(p.iter_ms, (40.0 + 4.0 + 2 * 0.75) / 1e3, 1e-9);
}

// The first op after a long step pays what the caches lost meanwhile
// (HwProfile::cold_after), by the previous step's predicted time: the relu
// after the 40 us mm pays the curve at 40 us, the mm (first) nothing, and
// the skipped op runs nothing. Catches the cost taken at the op's own time
// (4 us: 0.8), paid by every op (mm too), or not at all.
TEST(Predictor, AnOpAfterALongStepPaysTheColdCallCost) {
  const trace::Trace t = mmReluAndAnOpThisBuildLacks();
  HwProfile hw = smallProfile();
  hw.cold_after = {{10, 2}, {100, 6}};
  const Prediction p = predictIteration({&t}, hw, {});
  const double after_mm = 2 + 4 * std::log(40.0 / 10) / std::log(100.0 / 10);
  EXPECT_NEAR(p.iter_ms, (40.0 + 4.0 + after_mm) / 1e3, 1e-9);
}

// Kernel curves are median calls; the profile's stall share (the time its
// loops lost beyond them) scales every op's time by 1 / (1 - share), not
// the replay step, measured in a replay that paid it already. Catches the
// share ignored (45.5), multiplied (35.7) or applied to the step (56.875).
TEST(Predictor, OpTimesPayTheStallShareTheMediansLeaveOut) {
  const trace::Trace t = mmReluAndAnOpThisBuildLacks();
  HwProfile hw = smallProfile();
  hw.replay_step_us = 0.75;
  hw.stall_share = 0.2;
  const Prediction p = predictIteration({&t}, hw, {});
  EXPECT_NEAR(p.iter_ms, ((40.0 + 4.0) / 0.8 + 2 * 0.75) / 1e3, 1e-9);
}

// With the share by call length (stall_by_call), each op pays its own
// bin's: the 40 us mm the bin up to 100 us (0.5), the 4 us relu the one up
// to 10 us (0.2); the global share is then unused, and a call longer than
// every bin takes the last. Catches the global share kept (47.8 us), the
// bins swapped (59.5), a bin taken by its lower end (the mm at 0.2, the
// relu at the share below it) or the step scaled (87.4).
TEST(Predictor, OpTimesPayTheStallShareOfTheirCallLength) {
  const trace::Trace t = mmReluAndAnOpThisBuildLacks();
  HwProfile hw = smallProfile();
  hw.replay_step_us = 0.75;
  hw.stall_share = 0.05;
  hw.stall_by_call = {{10, 0.2}, {100, 0.5}};
  const Prediction p = predictIteration({&t}, hw, {});
  EXPECT_NEAR(p.iter_ms, (40.0 / 0.5 + 4.0 / 0.8 + 2 * 0.75) / 1e3, 1e-9);
  EXPECT_DOUBLE_EQ(stallShareFor(hw, 1e6), 0.5);
  EXPECT_DOUBLE_EQ(stallShareFor(hw, 10), 0.2);
  hw.stall_by_call.clear();
  EXPECT_DOUBLE_EQ(stallShareFor(hw, 40), 0.05);
}

// A profile whose guard saw the machine run 1.25x slower on average (its
// first tries' probes) scales what each CPU op computes beyond a trivial
// call (dispatch_us): the call's fixed cost and et_replay's step stay as
// measured. Catches the slowdown ignored (45.5) or taken by the whole op,
// step included (56.875).
TEST(Predictor, OpTimesRunAtTheSpeedTheMachineKeptWhileProfiling) {
  const trace::Trace t = mmReluAndAnOpThisBuildLacks();
  HwProfile hw = smallProfile();
  hw.replay_step_us = 0.75;
  hw.speed_guard.slowdown = 1.25;
  const Prediction p = predictIteration({&t}, hw, {});
  EXPECT_NEAR(p.iter_ms, ((40.0 + 4.0 - 2 * hw.dispatch_us) * 1.25 + 2 * hw.dispatch_us + 2 * 0.75) / 1e3, 1e-9);
}

// A slowdown asked for (et_predict --speed now) takes the profile's place
// for every CPU op and is reported with whose it was. Catches it ignored
// (56.0), multiplied into the profile's (108.5) or reported as the
// profile's.
TEST(Predictor, OpTimesRunAtTheSpeedAskedForInsteadOfTheProfiles) {
  const trace::Trace t = mmReluAndAnOpThisBuildLacks();
  HwProfile hw = smallProfile();
  hw.replay_step_us = 0.75;
  hw.speed_guard.slowdown = 1.25;
  PredictOptions o;
  o.slowdown = 2.0;
  const Prediction p = predictIteration({&t}, hw, o);
  EXPECT_NEAR(p.iter_ms, ((40.0 + 4.0 - 2 * hw.dispatch_us) * 2.0 + 2 * hw.dispatch_us + 2 * 0.75) / 1e3, 1e-9);
  EXPECT_EQ(p.speed_from, "now");
  EXPECT_DOUBLE_EQ(p.slowdown, 2.0);
  EXPECT_DOUBLE_EQ(p.profile_slowdown, 1.25);
  const Prediction at_profile = predictIteration({&t}, hw, {});
  EXPECT_EQ(at_profile.speed_from, "profile");
  EXPECT_DOUBLE_EQ(at_profile.slowdown, 1.25);
}

// One all_reduce of 1 MB between two ranks on a process group recorded as
// gloo, after a relu (4 us on each rank).
trace::Trace glooAllReduce() {
  TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto r = b.tensor({500}), out = b.tensor({500});
  b.op("aten::relu(Tensor self) -> Tensor", {r}, {out});
  t.process_groups.push_back({"0", "default_pg", "cpu:gloo", {0, 1}, 2});
  trace::CommInfo info;
  info.type = trace::CommType::kAllReduce;
  info.dtype = trace::DType::kFloat;
  info.pg = 0;
  info.in_elems = info.out_elems = 250000;
  b.collective(900, info);
  return b.finish();
}

HwProfile twoBackends(bool with_gloo) {
  HwProfile hw = smallProfile();
  hw.collectives = {{"all_reduce", 2, 1e6, 100, "mpi"}, {"all_reduce", 2, 4e6, 400, "mpi"}};
  if (with_gloo) {
    hw.collectives.push_back({"all_reduce", 2, 1e6, 900, "gloo"});
    hw.collectives.push_back({"all_reduce", 2, 4e6, 3000, "gloo"});
  }
  return hw;
}

// A gloo-recorded trace is replayed on gloo (replay::pickCommBackend), so
// its collectives read the gloo curve; --comm mpi reads MPI's.
// A GPU profile: the smallProfile curves as device time, and the host's
// launch of each measured op (launch_us), et_replay's step of 1 us on top.
HwProfile gpuProfile() {
  HwProfile hw = smallProfile();
  hw.identity.device = "cuda";
  hw.replay_step_us = 1;
  hw.launch_us = {{"aten::mm", 10}, {"aten::relu", 6}, {"aten::view", 2}, {"aten::add", 5}};
  hw.view_us = 0;  // a view's device time
  return hw;
}

PredictOptions onGpu() {
  PredictOptions o;
  o.device = "cuda";
  return o;
}

// On a GPU an op's kernels start once the host has launched them and the
// device is free; the iteration ends when the device is done. The mm (11
// us to launch, 40 on the device) keeps the device busy while the relu (7,
// 4) is launched: 11 + 40 + 4. Planted faults: the CPU sum (46), launches
// and kernels added (62), launches only (18), kernels only (44).
TEST(Predictor, OnAGpuTheDeviceRunsBehindTheLaunchesAndTheIterationWaitsForIt) {
  const trace::Trace t = mmReluAndAnOpThisBuildLacks();
  const Prediction p = predictIteration({&t}, gpuProfile(), onGpu());
  EXPECT_NEAR(p.iter_ms, (11 + 40 + 4) / 1e3, 1e-9);
  ASSERT_EQ(p.ranks.size(), 1u);
  EXPECT_NEAR(p.ranks[0].device_us, 44, 1e-9);
  EXPECT_NEAR(p.ranks[0].ops[0].launch_us, 11, 1e-9);
  EXPECT_NEAR(p.ranks[0].ops[1].device_us, 4, 1e-9);
  EXPECT_EQ(p.skipped, 1u);
}

// Tiny kernels: the device waits for each launch, so five relus take five
// launches and the last kernel (5 x 7 + 4). Catches the device time summed
// instead (20), a launch and a kernel per op (55), or the last kernel
// dropped (35).
TEST(Predictor, OnAGpuTinyKernelsWaitForTheirLaunches) {
  TraceBuilder b;
  for (int i = 0; i < 5; ++i) {
    const auto r = b.tensor({500}), out = b.tensor({500});
    b.op("aten::relu(Tensor self) -> Tensor", {r}, {out});
  }
  const trace::Trace t = b.finish();
  const Prediction p = predictIteration({&t}, gpuProfile(), onGpu());
  EXPECT_NEAR(p.iter_ms, (5 * 7 + 4) / 1e3, 1e-9);
}

// The mm of the tests above, a scalar read back to the host, a relu.
trace::Trace mmScalarReadRelu() {
  TraceBuilder b;
  const auto a = b.tensor({64, 128}), w = b.tensor({128, 32}), y = b.tensor({64, 32});
  b.op("aten::mm(Tensor self, Tensor mat2) -> Tensor", {a, w}, {y});
  const auto one = b.tensor({1});
  b.op("aten::_local_scalar_dense(Tensor self) -> Scalar", {one}, {});
  const auto r = b.tensor({500}), out = b.tensor({500});
  b.op("aten::relu(Tensor self) -> Tensor", {r}, {out});
  return b.finish();
}

// An op whose result the host reads (_local_scalar_dense, .item()) returns
// when the device has caught up, so the next launch starts after the mm's
// kernel: 11 + 40 + d + 7 + 4, where d is the scalar read's own kernel.
// Without the wait the relu is launched during the mm and it would be
// 11 + 40 + d + 4.
TEST(Predictor, OnAGpuAnOpThatReadsAResultOnTheHostWaitsForTheDevice) {
  const trace::Trace t = mmScalarReadRelu();
  const Prediction p = predictIteration({&t}, gpuProfile(), onGpu());
  ASSERT_EQ(p.ranks[0].ops.size(), 3u);
  const double d = p.ranks[0].ops[1].device_us;
  EXPECT_GE(d, 0);
  EXPECT_NEAR(p.iter_ms, (11 + 40 + d + 7 + 4) / 1e3, 1e-9);
}

// A replayed call's host time is its hot-loop launch times the profile's
// launch scale plus the step; a host read of a result, and the iteration's
// end, wait the sync latency beyond the device. mm: 10 x 2 + 1 = 21 to
// launch, on the device until 61; the scalar read returns at 61 + d + 3; the
// relu launches by 61 + d + 3 + 13 and runs 4 us; the end sees it 3 us
// later: 84 + d. Catches the scale or the latency left out (at a read: 81
// + d; at the end: 81 + d), or the step scaled.
TEST(Predictor, OnAGpuLaunchesScaleAndHostReadsWaitTheSyncLatency) {
  const trace::Trace t = mmScalarReadRelu();
  HwProfile hw = gpuProfile();
  hw.launch_scale = 2;
  hw.sync_latency_us = 3;
  const Prediction p = predictIteration({&t}, hw, onGpu());
  ASSERT_EQ(p.ranks[0].ops.size(), 3u);
  EXPECT_NEAR(p.ranks[0].ops[0].launch_us, 21, 1e-9);
  const double d = p.ranks[0].ops[1].device_us;
  EXPECT_NEAR(p.iter_ms, (84 + d) / 1e3, 1e-9);
}

// relu, relu, mm, relu: a kind called twice in a row, another between.
trace::Trace reluReluMmRelu() {
  TraceBuilder b;
  const auto r = b.tensor({500}), o1 = b.tensor({500}), o2 = b.tensor({500}), o3 = b.tensor({500});
  const auto a = b.tensor({64, 128}), w = b.tensor({128, 32}), y = b.tensor({64, 32});
  b.op("aten::relu(Tensor self) -> Tensor", {r}, {o1});
  b.op("aten::relu(Tensor self) -> Tensor", {o1}, {o2});
  b.op("aten::mm(Tensor self, Tensor mat2) -> Tensor", {a, w}, {y});
  b.op("aten::relu(Tensor self) -> Tensor", {o2}, {o3});
  return b.finish();
}

// On a CPU a call after an op of another kind pays the profile's cold call:
// relu, relu, mm, relu with call_cold_us 3: the first relu, the mm and the
// last relu pay it, the second relu (after a relu) does not: 44 + 3 x 3.
// Catches it paid by every op (+12) or by none (44), or keyed by node
// rather than by kind (+12).
TEST(Predictor, OnACpuACallAfterAnotherKindPaysTheColdCall) {
  const trace::Trace t = reluReluMmRelu();
  const Prediction base = predictIteration({&t}, smallProfile(), {});
  HwProfile hw = smallProfile();
  hw.call_cold_us = 3;
  const Prediction p = predictIteration({&t}, hw, {});
  ASSERT_EQ(p.ranks[0].ops.size(), 4u);
  EXPECT_NEAR(p.iter_ms - base.iter_ms, 9 / 1e3, 1e-9);
  EXPECT_NEAR(p.ranks[0].ops[1].us, base.ranks[0].ops[1].us, 1e-9);
  EXPECT_NEAR(p.ranks[0].ops[2].us, base.ranks[0].ops[2].us + 3, 1e-9);
}

// A view pays the profile's view level after another kind, not the
// kernels' call_cold_us: relu, t, t, relu with call_cold_us 3 and
// call_cold_view_us 0.5: the first t pays 0.5, the second (after a t)
// nothing, the last relu 3. Catches the view charged call_cold_us (+2.5),
// nothing (-0.5), or the view level kept for the relu after it (-2.5).
TEST(Predictor, OnACpuAViewAfterAnotherKindPaysTheViewsColdCall) {
  TraceBuilder b;
  const auto r = b.tensor({500}), o1 = b.tensor({500}), w = b.tensor({4, 4});
  const auto wt = b.tensor({4, 4}), wtt = b.tensor({4, 4}), o2 = b.tensor({500});
  b.op("aten::relu(Tensor self) -> Tensor", {r}, {o1});
  b.op("aten::t(Tensor(a) self) -> Tensor(a)", {w}, {wt});
  b.op("aten::t(Tensor(a) self) -> Tensor(a)", {wt}, {wtt});
  b.op("aten::relu(Tensor self) -> Tensor", {o1}, {o2});
  const trace::Trace t = b.finish();
  const Prediction base = predictIteration({&t}, smallProfile(), {});
  HwProfile hw = smallProfile();
  hw.call_cold_us = 3;
  hw.call_cold_view_us = 0.5;
  const Prediction p = predictIteration({&t}, hw, {});
  ASSERT_EQ(p.ranks[0].ops.size(), 4u);
  EXPECT_EQ(p.ranks[0].ops[1].family, "view");
  EXPECT_NEAR(p.ranks[0].ops[1].cold_code_us, 0.5, 1e-12);
  EXPECT_NEAR(p.ranks[0].ops[2].cold_code_us, 0, 1e-12);
  EXPECT_NEAR(p.ranks[0].ops[3].cold_code_us, 3, 1e-12);
  EXPECT_NEAR(p.iter_ms - base.iter_ms, (3 + 0.5 + 3) / 1e3, 1e-9);
  // A profile without the view level: the view pays call_cold_us.
  hw.call_cold_view_us = -1;
  EXPECT_NEAR(predictIteration({&t}, hw, {}).ranks[0].ops[1].cold_code_us, 3, 1e-12);
}

// A float mul_ by a 0-dim int (a Python scalar as the trace records it)
// pays the profile's cast_input_us over the same by a 0-dim float, and the
// slowdown leaves that unscaled; a float add of an int tensor with
// dimensions pays the cast and the int tensor's copy on the unary curve
// (2 x 2000 bytes: 4 us on smallProfile's, 8 at the 2x slowdown) too; a
// 0-dim int times a float tensor casts the scalar alone. Catches the charge
// missing, scaled by the slowdown (+1.5 at 2x), the copy left out (-8), or
// the first input taken for the type computed in (the last: +9.5).
TEST(Predictor, AnInputOfAnotherTypeCostsItsCastUnscaled) {
  const auto one = [](trace::DType other) {
    TraceBuilder b;
    const auto x = b.tensor({500}), s = b.tensor({}, other), y = b.tensor({500}), z = b.tensor({500});
    b.op("aten::mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", {x, s}, {x});
    const auto l = b.tensor({500}, other);
    b.op("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", {y, l}, {z});
    const auto s2 = b.tensor({}, other), w = b.tensor({500});
    b.op("aten::mul.Tensor(Tensor self, Tensor other) -> Tensor", {s2, z}, {w});
    return b.finish();
  };
  HwProfile hw = smallProfile();
  hw.bandwidth["inplace"] = {{1000, 2}, {4000, 4}};
  hw.bandwidth["elementwise"] = {{1000, 2}, {4000, 4}};
  hw.cast_input_us = 1.5;
  hw.speed_guard.slowdown = 2;
  // int32 as the other type: the same bytes as float, so only the cast differs.
  const trace::Trace same = one(trace::DType::kFloat), mixed = one(trace::DType::kInt32);
  const Prediction a = predictIteration({&same}, hw, {}), m = predictIteration({&mixed}, hw, {});
  ASSERT_EQ(m.ranks[0].ops.size(), 3u);
  EXPECT_NEAR(m.ranks[0].ops[0].us - a.ranks[0].ops[0].us, 1.5, 1e-9);
  EXPECT_NEAR(m.ranks[0].ops[1].us - a.ranks[0].ops[1].us, 1.5 + 2 * 4, 1e-9);
  EXPECT_NEAR(m.ranks[0].ops[2].us - a.ranks[0].ops[2].us, 1.5, 1e-9);
  hw.cast_input_us = 0;  // older profiles: no charge
  EXPECT_NEAR(predictIteration({&mixed}, hw, {}).iter_ms, predictIteration({&same}, hw, {}).iter_ms, 1e-12);
}

// Ops that run no kernel take the profile's own call of their kind where
// it has one (call_us), else view_us: an expand at 1.75, a t at 0.25, a
// slice (not in the table) at view_us 0.5, an item of a 0-dim tensor at
// 0.125 instead of its children or a bytes guess. Catches the table
// ignored (every view at 0.5), the lookup keyed with the overload, or the
// item left to another model.
TEST(Predictor, AnOpThatRunsNoKernelTakesItsOwnMeasuredCall) {
  TraceBuilder b;
  const auto v = b.tensor({4}), e = b.tensor({4, 4}), et = b.tensor({4, 4}), sl = b.tensor({2, 4});
  const auto s = b.tensor({});
  b.op("aten::expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)",
       {v, test::intList(b.trace(), {4, 4}), trace::Value{}}, {e});
  b.op("aten::t(Tensor(a) self) -> Tensor(a)", {e}, {et});
  b.op("aten::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)",
       {et}, {sl});
  b.op("aten::item(Tensor self) -> Scalar", {s}, {});
  const trace::Trace t = b.finish();
  HwProfile hw = smallProfile();
  hw.call_us = {{"aten::expand", 1.75}, {"aten::t", 0.25}, {"aten::item", 0.125}};
  const Prediction p = predictIteration({&t}, hw, {});
  ASSERT_EQ(p.ranks[0].ops.size(), 4u);
  const double want[] = {1.75, 0.25, 0.5, 0.125};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(p.ranks[0].ops[i].family, "view") << i;
    EXPECT_NEAR(p.ranks[0].ops[i].us, want[i], 1e-12) << i;
  }
}

// A linear with a bias, one without, an addmm at the probe's shape and a
// larger linear pay the profile's call_extra_us entry of their variant,
// unscaled at a 2x slowdown, and the larger one also its bias copy's growth
// beyond the probe's [8, 16] output on the unary curve (closed form on
// smallProfile's {1000: 2, 4000: 4}: 2 x 1024 bytes read 2 x 2^(log 1.024 /
// log 4), 2 x 8192 the last point's rate), scaled; a mean and a zeros pay
// theirs, a sum (no entry) nothing. Catches an entry missed, the wrong one
// taken (the nobias linear paying the bias one's), the call scaled, or the
// copy left out.
TEST(Predictor, AnOpPaysItsMeasuredCallBeyondItsKernel) {
  TraceBuilder b;
  const auto x = b.tensor({8, 16}), w = b.tensor({16, 16}), bias = b.tensor({16}), wt = b.tensor({16, 16});
  const auto y1 = b.tensor({8, 16}), y2 = b.tensor({8, 16}), y3 = b.tensor({8, 16});
  const std::string linear = "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor";
  b.op(linear, {x, w, bias}, {y1});
  b.op(linear, {x, w, trace::Value{}}, {y2});
  b.op("aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
       {bias, x, wt}, {y3});
  const auto X = b.tensor({64, 128}), W = b.tensor({32, 128}), B = b.tensor({32}), Y = b.tensor({64, 32});
  b.op(linear, {X, W, B}, {Y});
  const auto r = b.tensor({32, 40}), m = b.tensor({32}), m2 = b.tensor({32}), z = b.tensor({64});
  b.op("aten::mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
       {r, test::intList(b.trace(), {-1})}, {m});
  b.op("aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
       {r, test::intList(b.trace(), {-1})}, {m2});
  b.op("aten::zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
       {test::intList(b.trace(), {64})}, {z});
  const trace::Trace t = b.finish();
  HwProfile hw = smallProfile();
  hw.speed_guard.slowdown = 2;
  const Prediction base = predictIteration({&t}, hw, {});
  hw.call_extra_us = {{"aten::addmm", 2}, {"aten::linear", 3}, {"aten::linear:nobias", 1.25},
                      {"aten::mean", 4}, {"aten::zeros", 0.75}};
  const Prediction p = predictIteration({&t}, hw, {});
  ASSERT_EQ(p.ranks[0].ops.size(), 7u);
  const auto extra = [&](size_t i) { return p.ranks[0].ops[i].us - base.ranks[0].ops[i].us; };
  EXPECT_NEAR(extra(0), 3, 1e-9);
  EXPECT_NEAR(extra(1), 1.25, 1e-9);
  EXPECT_NEAR(extra(2), 2, 1e-9);
  const double copy = 4 * 16384 / 4000.0 - 2 * std::pow(2.0, std::log(1.024) / std::log(4.0));
  EXPECT_NEAR(extra(3), 3 + 2 * copy, 1e-9);
  EXPECT_NEAR(extra(4), 4, 1e-9);
  EXPECT_NEAR(extra(5), 0, 1e-9);
  EXPECT_NEAR(extra(6), 0.75, 1e-9);
}

// Eighteen unary kinds, then the first again: in the steady state the
// first call follows the last (its own kind, no other between), every
// other has the seventeen other kinds since its kind last ran. With a
// cold_kinds curve of 1, 16 and 48 kinds at 0.5, 1 and 4 us, those eighteen
// pay the curve at 17 kinds (1 + 3 log(17/16) / log 3), the first call
// nothing; two kinds in turn pay the curve at one kind (0.5) each. And
// call_cold_us (3, a call after its round of sixteen kinds) is not charged
// where the curve is: over twelve small models recorded fresh a call after
// 1-16 other kinds replayed 0.0-0.2 us beyond its hot call where it charged
// 2.7. Catches call_cold_us charged as a floor under the curve (3 + ...
// each), the count of kinds off by one (1.0 at 16), and the iteration's
// first call charged as if nothing ran before it.
TEST(Predictor, OnACpuACallPaysItsCodesColdCostByTheKindsSinceItsKindRan) {
  const auto unary = [](const std::vector<std::string>& kinds) {
    TraceBuilder b;
    for (const std::string& k : kinds) {
      const auto in = b.tensor({500}), out = b.tensor({500});
      b.op("aten::" + k + "(Tensor self) -> Tensor", {in}, {out});
    }
    return b.finish();
  };
  const std::vector<std::string> kinds = {"relu", "sigmoid", "tanh", "neg", "abs", "exp", "sin",
                                          "cos", "log", "sqrt", "floor", "ceil", "round", "trunc",
                                          "erf", "expm1", "log1p", "rsqrt", "relu"};
  const trace::Trace t = unary(kinds);
  const Prediction base = predictIteration({&t}, smallProfile(), {});
  HwProfile hw = smallProfile();
  hw.cold_kinds = {{1, 0.5}, {16, 1}, {48, 4}};
  hw.call_cold_us = 3;
  const Prediction p = predictIteration({&t}, hw, {});
  ASSERT_EQ(p.ranks[0].ops.size(), kinds.size());
  EXPECT_EQ(p.skipped, 0u);
  const double each = 1 + 3 * std::log(17.0 / 16) / std::log(3.0);
  EXPECT_DOUBLE_EQ(p.ranks[0].ops[0].cold_code_us, 0);
  EXPECT_NEAR(p.ranks[0].ops[0].us, base.ranks[0].ops[0].us, 1e-9);
  for (size_t i = 1; i < kinds.size(); ++i) {
    EXPECT_NEAR(p.ranks[0].ops[i].cold_code_us, each, 1e-9) << kinds[i];
    EXPECT_NEAR(p.ranks[0].ops[i].us - base.ranks[0].ops[i].us, each, 1e-9) << kinds[i];
  }
  EXPECT_NEAR(p.iter_ms - base.iter_ms, 18 * each / 1e3, 1e-9);
  const trace::Trace turns = unary({"relu", "sigmoid", "relu", "sigmoid"});
  const Prediction q = predictIteration({&turns}, hw, {});
  ASSERT_EQ(q.ranks[0].ops.size(), 4u);
  for (const OpPrediction& op : q.ranks[0].ops) EXPECT_NEAR(op.cold_code_us, 0.5, 1e-9) << op.name;
}

// A kind's first call in the iteration launches at the profile's first-call
// scale, its later calls at the launch scale: relu, relu, mm, relu at 3x
// and 1.5x launch 6 x 3 + 1, 6 x 1.5 + 1, 10 x 3 + 1, 6 x 1.5 + 1. Catches
// the first scale on every call (19 for the second relu), on none (10 for
// the first), or kept per op rather than per kind (19 for the last relu).
TEST(Predictor, OnAGpuAKindsFirstCallInTheIterationLaunchesColder) {
  const trace::Trace t = reluReluMmRelu();
  HwProfile hw = gpuProfile();
  hw.launch_scale = 1.5;
  hw.launch_first_scale = 3;
  const Prediction p = predictIteration({&t}, hw, onGpu());
  ASSERT_EQ(p.ranks[0].ops.size(), 4u);
  EXPECT_NEAR(p.ranks[0].ops[0].launch_us, 19, 1e-9);
  EXPECT_NEAR(p.ranks[0].ops[1].launch_us, 10, 1e-9);
  EXPECT_NEAR(p.ranks[0].ops[2].launch_us, 31, 1e-9);
  EXPECT_NEAR(p.ranks[0].ops[3].launch_us, 10, 1e-9);
}

// An op the profile found waiting for the device inside its call (its curve
// is the synchronised call's host time) starts once the device's queue has
// drained and the sync latency passed, and holds the host throughout: the
// mm's kernel ends at 51, the relu runs 51 + 3 .. 58 and pays the step
// (59), and the end waits the latency again: 62. Catches the op launched
// like any other (58), or its curve added to a launch (65).
TEST(Predictor, OnAGpuAnOpThatWaitsInsideItsCallRunsAfterTheQueueDrains) {
  const trace::Trace t = mmReluAndAnOpThisBuildLacks();
  HwProfile hw = gpuProfile();
  hw.sync_latency_us = 3;
  hw.synchronising_ops = {"aten::relu"};
  const Prediction p = predictIteration({&t}, hw, onGpu());
  EXPECT_NEAR(p.iter_ms, 62 / 1e3, 1e-9);
  EXPECT_NEAR(p.ranks[0].ops[1].launch_us, 0, 1e-9);
}

// A composite et_replay calls (linear) launches what its recorded children
// launch, plus a dispatch of its own that launches nothing: t (a view, 2)
// and addmm (not measured by name: its family's op, mm, 10), plus 2, plus
// the step. Catches the family's launch taken for the composite (11) or
// the children left out.
TEST(Predictor, OnAGpuACompositeLaunchesWhatItsChildrenLaunch) {
  TraceBuilder b;
  const auto x = b.tensor({64, 128}), w = b.tensor({32, 128}), y = b.tensor({64, 32});
  const trace::NodeId linear = b.op(
      "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", {x, w}, {y});
  b.under(linear);
  const auto wt = b.tensor({128, 32});
  b.op("aten::t(Tensor(a) self) -> Tensor(a)", {w}, {wt});
  b.op("aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
       {y, x, wt}, {y});
  const trace::Trace t = b.finish();
  const Prediction p = predictIteration({&t}, gpuProfile(), onGpu());
  ASSERT_EQ(p.ranks[0].ops.size(), 1u);
  EXPECT_NEAR(p.ranks[0].ops[0].launch_us, 2 + 10 + 2 + 1, 1e-9);
  EXPECT_NEAR(p.ranks[0].ops[0].device_us, 40, 1e-9);
}

// An op whose recorded children only allocate (torch 2.x's native_dropout:
// two empty_like, its kernel its own) runs its own kernel: its bytes-moved
// estimate on the device, its family's launch (unary: relu's, 6) beside the
// children's (2 each), and the step; a view launches nothing on the device.
// Catches the op costed as the sum of its children (no kernel, 4 us of
// launches).
TEST(Predictor, OnAGpuAnOpWhoseChildrenOnlyAllocateRunsItsOwnKernel) {
  TraceBuilder b;
  const auto x = b.tensor({500}), y = b.tensor({500}), mask = b.tensor({500}, trace::DType::kBool);
  const trace::NodeId nd = b.op(
      "aten::native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)", {x}, {y, mask});
  b.under(nd);
  b.op("aten::empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
       "bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", {x}, {y});
  b.op("aten::empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
       "bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", {x}, {mask});
  b.under(2);
  const auto v = b.tensor({500});
  b.op("aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)", {y}, {v});
  const trace::Trace t = b.finish();
  const HwProfile hw = gpuProfile();
  const Prediction p = predictIteration({&t}, hw, onGpu());
  ASSERT_EQ(p.ranks[0].ops.size(), 2u);
  const OpModel model(hw, "uniform");
  const trace::Node* dropout = nullptr;
  for (const trace::Node& n : t.nodes) {
    if (n.id == nd) dropout = &n;
  }
  ASSERT_NE(dropout, nullptr);
  const OpEstimate own = model.estimate(t, *dropout);
  EXPECT_GT(own.us, 0);
  EXPECT_NEAR(p.ranks[0].ops[0].device_us, own.us, 1e-9);
  EXPECT_NEAR(p.ranks[0].ops[0].launch_us, 6 + 2 * 2 + 1, 1e-9);
  EXPECT_NEAR(p.ranks[0].ops[1].launch_us, 2 + 1, 1e-9);
  EXPECT_NEAR(p.ranks[0].ops[1].device_us, 0, 1e-9);
}

// logsumexp runs a kernel per pass (amax, sub, exp_, sum, log_, add_ here),
// which the trace records as its children: it costs their sum, each on its
// own model. Catches logsumexp priced as one reduction over its input.
TEST(Predictor, ALogsumexpCostsTheKernelsItsRecordedChildrenRun) {
  TraceBuilder b;
  trace::Trace& tr = b.trace();
  const auto x = b.tensor({64, 256}), y = b.tensor({64});
  const trace::NodeId lse = b.op("aten::logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor",
                                 {x, test::intList(tr, {1}), trace::makeBool(tr, false)}, {y});
  b.under(lse);
  const auto m = b.tensor({64, 1}), d = b.tensor({64, 256}), s = b.tensor({64}), ms = b.tensor({64});
  b.op("aten::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
       {x, test::intList(tr, {1}), trace::makeBool(tr, true)}, {m});
  b.op("aten::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
       {x, m, trace::makeInt(tr, 1)}, {d});
  b.op("aten::exp_(Tensor(a!) self) -> Tensor(a!)", {d}, {d});
  b.op("aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
       {d, test::intList(tr, {1}), trace::makeBool(tr, false), trace::makeNone(tr)}, {s});
  b.op("aten::log_(Tensor(a!) self) -> Tensor(a!)", {s}, {s});
  b.op("aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
       {s, ms, trace::makeInt(tr, 1)}, {s});
  const trace::Trace t = b.finish();
  HwProfile hw = smallProfile();
  hw.bandwidth["reduction"] = {{1000, 1}, {100000, 2}};
  hw.bandwidth["elementwise"] = {{1000, 3}, {100000, 30}};
  const Prediction p = predictIteration({&t}, hw, PredictOptions{});
  ASSERT_EQ(p.ranks[0].ops.size(), 1u);
  const OpModel model(hw, "uniform");
  double children = 0;
  for (const trace::Node& n : t.nodes) {
    if (n.parent == lse) children += model.estimate(t, n).us;
  }
  EXPECT_GT(children, 6 * hw.dispatch_us);
  EXPECT_NEAR(p.ranks[0].ops[0].us, children, 1e-9);
  EXPECT_EQ(p.ranks[0].ops[0].family, "composite");
}

TEST(Predictor, CollectivesReadTheCurvesOfTheBackendTheReplayUses) {
  if (!replay::commBackendBuilt("gloo")) GTEST_SKIP() << "built without gloo: et_replay uses MPI";
  const trace::Trace t = glooAllReduce();
  PredictOptions o;
  o.world_size = 2;
  const Prediction gloo = predictIteration({&t}, twoBackends(true), o);
  EXPECT_EQ(gloo.comm_backend, "gloo");
  EXPECT_NEAR(gloo.iter_ms, (4.0 + 900.0) / 1e3, 1e-9);
  o.comm = "mpi";
  const Prediction mpi = predictIteration({&t}, twoBackends(true), o);
  EXPECT_EQ(mpi.comm_backend, "mpi");
  EXPECT_NEAR(mpi.iter_ms, (4.0 + 100.0) / 1e3, 1e-9);
}

// A collective the trace counts but cannot size (comm info -1: torch 1.13's
// bare gloo:all_to_all, which et_replay does not run) takes no time and is
// reported; it was read as comms[-1].
TEST(Predictor, AnUnsizedCollectiveIsCountedAndTakesNoTime) {
  if (!replay::commBackendBuilt("gloo")) GTEST_SKIP() << "built without gloo: et_replay uses MPI";
  trace::Trace t = glooAllReduce();
  trace::Node bare = *t.find(900);
  bare.id = 901;
  bare.comm = -1;
  bare.name = t.strings.intern("gloo:all_to_all");
  t.nodes.push_back(bare);
  t.finalize();
  PredictOptions o;
  o.world_size = 2;
  const Prediction p = predictIteration({&t}, twoBackends(true), o);
  EXPECT_EQ(p.comms, 2u);
  EXPECT_EQ(p.comms_unsized, 1u);
  EXPECT_NEAR(p.iter_ms, (4.0 + 900.0) / 1e3, 1e-9);
}

// A collective of a group size the profile has no curve of reads the
// nearest measured size's curve by the ring factor, (n-1)/n over the
// measured (m-1)/m: 900 us x (3/4) / (1/2) for four ranks from two, and says
// so (Prediction::comm_groups_scaled, the report's coverage). A profile
// measured at four ranks is read as it is, and nothing is said.
TEST(Predictor, ACollectiveOfAGroupSizeTheProfileLacksIsScaledAndSaidToBe) {
  if (!replay::commBackendBuilt("gloo")) GTEST_SKIP() << "built without gloo: et_replay uses MPI";
  trace::Trace t = glooAllReduce();
  t.process_groups.front().ranks = {0, 1, 2, 3};
  t.process_groups.front().size = 4;
  PredictOptions o;
  o.world_size = 4;
  const Prediction scaled = predictIteration({&t}, twoBackends(true), o);
  EXPECT_NEAR(scaled.iter_ms, (4.0 + 900.0 * 1.5) / 1e3, 1e-9);
  EXPECT_EQ(scaled.comm_groups_scaled, (std::map<int, int>{{4, 2}}));
  HwProfile four = twoBackends(true);
  four.collectives.push_back({"all_reduce", 4, 1e6, 2000, "gloo"});
  four.collectives.push_back({"all_reduce", 4, 4e6, 7000, "gloo"});
  const Prediction measured = predictIteration({&t}, four, o);
  EXPECT_NEAR(measured.iter_ms, (4.0 + 2000.0) / 1e3, 1e-9);
  EXPECT_TRUE(measured.comm_groups_scaled.empty());
  // Two ranks on the four-rank profile: the two-rank curve is there.
  t.process_groups.front().ranks = {0, 1};
  t.process_groups.front().size = 2;
  o.world_size = 2;
  EXPECT_TRUE(predictIteration({&t}, four, o).comm_groups_scaled.empty());
}

// A profile without the backend's curves is refused by name, not read as
// free communication or as another backend's.
TEST(Predictor, AProfileWithoutTheBackendsCurvesIsRefused) {
  const trace::Trace t = glooAllReduce();
  PredictOptions o;
  o.comm = "gloo";  // as --comm gloo, also where this build lacks gloo
  o.world_size = 2;
  o.profile_path = "hw_mpi_only.json";
  try {
    predictIteration({&t}, twoBackends(false), o);
    FAIL() << "predicted a gloo collective from a profile with MPI curves only";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("hw_mpi_only.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no gloo collective curves"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("node 900"), std::string::npos) << e.what();
  }
}

TEST(Predictor, ARecordedSampleRunsNoAtenOpAndCoversEveryOp) {
  const trace::Trace t =
      trace::readTrace(std::string(ETB_SOURCE_DIR) + "/fleet_samples/resnet18/resnet18.et.json.gz");
  HwProfile hw = smallProfile();
  hw.conv = {{8, 64, 28, 28, 64, 3, 3, 1, 1, 100.0, 200.0}};
  const Prediction p = predictIteration({&t}, hw, {});
  EXPECT_EQ(p.aten_calls, 0u);
  EXPECT_GT(p.ops, 100u);
  EXPECT_EQ(p.skipped, 0u);
  EXPECT_GT(p.kinds.at("aten::convolution_backward").count, 0u);
  EXPECT_GT(p.iter_ms, 0);
}

}  // namespace
}  // namespace etb::predict
