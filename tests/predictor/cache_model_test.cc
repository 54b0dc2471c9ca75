// SPDX-License-Identifier: MIT
// What a replayed op meets that a hot loop does not, against closed forms:
// inputs last touched more than L2 ago ("@l3" curves), a measured retention
// curve in place of the LLC step, and the stall share the profile's median
// calls leave out. Expected values come from the hand-made curves below.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "core/base/error.h"
#include "predictor/hw_bench.h"
#include "predictor/op_model.h"
#include "predictor/reuse_model.h"
#include "predictor/timing.h"
#include "replayer/op_selection.h"
#include "replayer/timer.h"
#include "tests/predictor/profile_test_util.h"
#include "tests/replayer/trace_builder.h"

namespace etb::predict {
namespace {
using test::TraceBuilder;
constexpr double kMiB = 1024.0 * 1024;
const char* kRelu = "aten::relu(Tensor self) -> Tensor";

HwProfile l3Profile() {
  HwProfile hw;
  hw.dispatch_us = 0.5;
  hw.view_us = 0.5;
  hw.memory.l2_bytes = 1e4;
  hw.memory.llc_bytes = 1e8;
  hw.bandwidth["unary"] = {{1e3, 1}, {1e6, 100}};
  hw.bandwidth["unary@l3"] = {{1e3, 2}, {1e6, 150}};
  hw.bandwidth["op:exp"] = {{1e3, 5}, {1e6, 400}};
  return hw;
}

// relu (or exp) of n floats: 8n bytes read + written.
trace::Trace oneOp(const char* schema, int64_t n) {
  TraceBuilder b;
  const auto a = b.tensor({n}), r = b.tensor({n});
  b.op(schema, {a}, {r});
  return b.finish();
}

// Catches: the @l3 share ignored (100), applied as a multiple of the whole
// rotated time (250), or an unmeasured class not borrowing unary's extra.
TEST(CacheModel, InputsBeyondL2AddTheRotatedCurvesExtraTime) {
  const OpModel model(l3Profile(), "uniform");
  const trace::Trace relu = oneOp(kRelu, 125000);  // 1e6 bytes
  EXPECT_NEAR(model.estimate(relu, relu.nodes[2], 0, 0).us, 100, 1e-9);
  EXPECT_NEAR(model.estimate(relu, relu.nodes[2], 0, 1).us, 150, 1e-9);
  EXPECT_NEAR(model.estimate(relu, relu.nodes[2], 0, 0.5).us, 125, 1e-9);
  // exp has no rotated curve: the same bytes from the LLC cost unary's 50 us.
  const trace::Trace exp = oneOp("aten::exp(Tensor self) -> Tensor", 125000);
  EXPECT_NEAR(model.estimate(exp, exp.nodes[2], 0, 1).us, 450, 1e-9);
}

// Beyond the largest rotated size the extra share (0.5 at 1e6 bytes) tapers
// log-linearly to nothing at the LLC (1e8): half of it at 1e7 bytes, where
// the warm curve gives 1000 us. Catches no taper (1500) or a cut-off (1000).
TEST(CacheModel, TheL3ExtraTapersToNothingAtTheLlcSize) {
  const OpModel model(l3Profile(), "uniform");
  const trace::Trace relu = oneOp(kRelu, 1250000);  // 1e7 bytes
  EXPECT_NEAR(model.estimate(relu, relu.nodes[2], 0, 1).us, 1000 + 0.5 * 0.5 * 1000, 1e-6);
  const trace::Trace huge = oneOp(kRelu, 25000000);  // 2e8 bytes: past the LLC
  EXPECT_NEAR(model.estimate(huge, huge.nodes[2], 0, 1).us, 20000, 1e-6);
}

// log-linear between points: at 16 MiB on (4 MiB, 0) - (64 MiB, 1) the share
// is log(4) / log(16) = 0.5 (a linear rule would give 0.2); flat beyond.
TEST(CacheModel, EvictedShareIsLogLinearInTheDistance) {
  const std::vector<SizePoint> r = {{4 * kMiB, 0}, {64 * kMiB, 1}};
  EXPECT_NEAR(evictedShare(r, 16 * kMiB), 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(evictedShare(r, 1 * kMiB), 0);
  EXPECT_DOUBLE_EQ(evictedShare(r, 1e12), 1);
}

// y (1 MiB) read at once, then after a 16 MiB sum: with a measured curve
// flat at one half from 8 MiB on, half of y is cold (the LLC step of 32 MiB
// would call all of it warm; no curve, all of it warm too). Catches the
// curve ignored or applied to the wrong distance.
TEST(CacheModel, AMeasuredRetentionCurveSetsTheColdShare) {
  TraceBuilder b;
  const auto x = b.tensor({256 * 1024}), y = b.tensor({256 * 1024});
  b.op(kRelu, {x}, {y});
  const auto y2 = b.tensor({256 * 1024});
  b.op(kRelu, {y}, {y2});
  const auto big = b.tensor({4 * 1024 * 1024}), total = b.tensor({});
  b.op("aten::sum(Tensor self, *, ScalarType? dtype=None) -> Tensor",
       {big, trace::makeNone(b.trace())}, {total});
  const auto y3 = b.tensor({256 * 1024});
  b.op(kRelu, {y}, {y3});
  const trace::Trace t = b.finish();
  const auto sel = replay::selectNodes(t, replay::chooseIteration(t, 0));
  const std::vector<SizePoint> curve = {{4 * kMiB, 0}, {8 * kMiB, 0.5}, {1024 * kMiB, 0.5}};
  const std::vector<double> cold = coldInputShare(t, sel, curve);
  ASSERT_EQ(cold.size(), 4u);
  EXPECT_DOUBLE_EQ(cold[1], 0);      // y read at once: distance 0..1 MiB
  EXPECT_NEAR(cold[3], 0.5, 1e-12);  // y after 16 MiB and y2's 1 MiB
  EXPECT_DOUBLE_EQ(coldInputShare(t, sel, 32 * kMiB)[3], 0);
}

// Three calls of 100 us and one of 500 us, repeated: median 100, so the
// medians leave out 1 - 4 x 100 / 800 = 0.5 of the time. Catches the tally
// not kept (0) or kept from the median only. A preemption only adds time
// beyond the median (0.81 at load 4 once, 0.84 with two builds on the same
// core): the least of ten tallies (4 ms each).
TEST(CacheModel, TheStallTallyIsTheShareOfTimeBeyondTheMedianCalls) {
  double least = 1;
  for (int attempt = 0; attempt < 10; ++attempt) {
    resetStallTally();
    int i = 2;  // the two untimed warm-up calls take 2 and 3: timed groups start whole
    const auto spin = [&] {
      const double until = replay::nowUs() + (i++ % 4 == 3 ? 500 : 100);
      while (replay::nowUs() < until) {
      }
    };
    medianCallUs(spin, true);
    least = std::min(least, stallShare());
  }
  EXPECT_NEAR(least, 0.5, 0.08);
  resetStallTally();
  EXPECT_DOUBLE_EQ(stallShare(), 0);
}

// The profile's own threads are in the load it records: alone on 2 cores
// with 1 thread it reads about 1.0-1.3, which is not "other work" (the
// warning fired on every quiet profile while it compared with half the
// cores). Other work counts once it keeps half the free cores busy.
TEST(CacheModel, OtherWorkIsTheLoadBesideTheProfilesOwnThreads) {
  HwIdentity id;
  id.cores = 2, id.threads = 1;
  id.load_avg = 1.2;  // the profile alone
  EXPECT_NEAR(otherLoad(id), 0.2, 1e-12);
  EXPECT_FALSE(measuredBesideOtherWork(id));
  id.load_avg = 3.1;  // two builds beside it
  EXPECT_NEAR(otherLoad(id), 2.1, 1e-12);
  EXPECT_TRUE(measuredBesideOtherWork(id));
  id.cores = 16, id.threads = 4;
  id.load_avg = 9.0;  // 5 beside it on 12 free cores
  EXPECT_FALSE(measuredBesideOtherWork(id));
  id.load_avg = 11.0;  // 7 > 6
  EXPECT_TRUE(measuredBesideOtherWork(id));
  id.load_avg = -1;  // not recorded
  EXPECT_EQ(otherLoad(id), 0);
  EXPECT_FALSE(measuredBesideOtherWork(id));
}

// Cache sizes: sysfs wins; a machine whose sysfs lists no caches (sandboxed
// VMs, some containers) takes glibc's CPUID figures rather than running the
// whole model as if every input were cache-warm; a last level that is L2
// leaves no L3 term; nothing known stays unknown.
TEST(CacheModel, CacheSizesComeFromSysfsElseCpuid) {
  constexpr double kMiB = 1 << 20;
  using detail::CacheSizes;
  const CacheSizes none{0, 0, ""}, sysfs{1 * kMiB, 32 * kMiB, ""}, conf{1 * kMiB, 508 * kMiB, ""};
  CacheSizes c = detail::pickCacheSizes(sysfs, conf);
  EXPECT_EQ(c.source, "sysfs");
  EXPECT_DOUBLE_EQ(c.llc, 32 * kMiB);
  EXPECT_DOUBLE_EQ(c.l2, 1 * kMiB);
  c = detail::pickCacheSizes(none, conf);
  EXPECT_EQ(c.source, "sysconf");
  EXPECT_DOUBLE_EQ(c.llc, 508 * kMiB);
  EXPECT_DOUBLE_EQ(c.l2, 1 * kMiB);
  c = detail::pickCacheSizes(none, {2 * kMiB, 2 * kMiB, ""});  // L2 is the last level
  EXPECT_DOUBLE_EQ(c.llc, 2 * kMiB);
  EXPECT_DOUBLE_EQ(c.l2, 0);
  c = detail::pickCacheSizes(none, none);
  EXPECT_EQ(c.source, "");
  EXPECT_DOUBLE_EQ(c.llc, 0);
}

// A flush streams twice what the caches keep: the LLC, or less where the
// measured retention lost 90% of a buffer sooner (a package-wide 508 MiB
// L3 from CPUID with one core keeping about 32 MiB); never under 16 MiB.
TEST(CacheModel, AFlushCoversWhatTheCachesMeasurablyKeep) {
  constexpr double kMiB = 1 << 20;
  MemoryFacts m;
  m.llc_bytes = 32 * kMiB;
  EXPECT_DOUBLE_EQ(detail::flushBytes(m), 64 * kMiB);
  m.llc_bytes = 508 * kMiB;
  m.retention = {{4 * kMiB, 0}, {16 * kMiB, 0.3}, {63.5 * kMiB, 0.95}, {127 * kMiB, 1}};
  EXPECT_DOUBLE_EQ(detail::flushBytes(m), 127 * kMiB);
  EXPECT_DOUBLE_EQ(detail::cacheKeepsBytes(m), 63.5 * kMiB);
  m.retention = {{4 * kMiB, 0}, {1024 * kMiB, 0.95}};  // the LLC is smaller
  EXPECT_DOUBLE_EQ(detail::flushBytes(m), 1016 * kMiB);
  EXPECT_DOUBLE_EQ(detail::cacheKeepsBytes(m), 508 * kMiB);
  m = MemoryFacts{};
  EXPECT_DOUBLE_EQ(detail::flushBytes(m), 16 * kMiB);
  EXPECT_DOUBLE_EQ(detail::cacheKeepsBytes(m), 0);
  m.retention = {{4 * kMiB, 0.2}, {48 * kMiB, 0.92}};  // no LLC figure, a measured one
  EXPECT_DOUBLE_EQ(detail::cacheKeepsBytes(m), 48 * kMiB);
}

// The second pass over the classes' cold curves takes each point to the
// geometric mean of the two passes and adds none. A planted first pass of
// 1 s for a cold zero_ of 256 floats (1 KiB; its real call takes 0.1 us to
// 1 ms here) comes out at sqrt(1e6 x that), between 316 us and 31.6 ms:
// kept as it was it stays 1e6, replaced it falls under 1 ms, the arithmetic
// mean stays over 5e5. Curves the profile lacks are not made.
TEST(CacheModel, TheColdCurvesSecondPassTakesTheGeometricMeanOfBoth) {
  HwProfile hw;
  hw.bandwidth["fill@cold"] = {{1024, 1e6}, {4096, 0}};  // a point of 0: not measured, left
  ProfileOptions o;
  o.quick = true;
  detail::measureMemoryColdAgain(o, hw);
  ASSERT_EQ(hw.bandwidth["fill@cold"].size(), 2u);
  EXPECT_GT(hw.bandwidth["fill@cold"][0].us, 316);
  EXPECT_LT(hw.bandwidth["fill@cold"][0].us, 31623);
  EXPECT_EQ(hw.bandwidth["fill@cold"][1].us, 0);
  EXPECT_EQ(hw.bandwidth.size(), 1u);
}

// Calls of a second or more (a gigabyte embedding gradient zero-filled and
// faulted in) are timed after one warm-up, three times, hot or flushed;
// shorter ones after two warm-ups, at least five times (fifteen flushed).
// The threshold is lowered to 20 ms so that a sleep stands in for such a call.
TEST(CacheModel, LongCallsAreWarmedOnceAndTimedThrice) {
  int calls = 0;
  const auto sleepy = [&] {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  };
  const double us = medianCallUs(sleepy, false, 20e3);
  EXPECT_EQ(calls, 4);
  EXPECT_GE(us, 25e3);
  calls = 0;
  int flushes = 0;
  coldCallUs(sleepy, [&] { ++flushes; }, false, 20e3);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(flushes, 3);
  // The same calls under the default threshold are short ones.
  calls = flushes = 0;
  medianCallUs(sleepy, true);
  EXPECT_GE(calls, 7);
  calls = 0;
  coldCallUs(sleepy, [&] { ++flushes; }, false);
  EXPECT_EQ(calls, 16);
  EXPECT_EQ(flushes, 15);
}

// Where a profile's minutes went: its parts in order (and where its cache
// sizes came from), their sum, and a
// negative time refused naming the file and the field; profiles from before
// have none and read back as such.
TEST(CacheModel, AProfileKeepsTheTimeOfEachPartAndWhereItsCacheSizesCameFrom) {
  HwProfile hw = l3Profile();
  hw.memory.cache_source = "sysconf";
  hw.identity.sections_s = {{"gemm", 12.5}, {"embedding_bag", 300}, {"collectives:mpi", 4}};
  const HwProfile back = profileFromJson(profileToJson(hw), "hand.json");
  ASSERT_EQ(back.identity.sections_s.size(), 3u);
  EXPECT_EQ(back.identity.sections_s[1].first, "embedding_bag");
  EXPECT_DOUBLE_EQ(back.identity.sections_s[2].second, 4);
  EXPECT_DOUBLE_EQ(back.identity.tookSeconds(), 316.5);
  EXPECT_EQ(back.memory.cache_source, "sysconf");
  hw.identity.sections_s[0].second = -1;
  expectRefusedNaming(hw, "sections_s");
  hw.identity.sections_s.clear();
  EXPECT_EQ(profileToJson(hw).find("sections_s"), std::string::npos);
  EXPECT_DOUBLE_EQ(profileFromJson(profileToJson(hw), "old.json").identity.tookSeconds(), 0);
}

// The profile keeps the new facts and refuses impossible ones by name.
TEST(CacheModel, AProfileRoundTripsItsCacheFactsAndRefusesABadShare) {
  HwProfile hw = l3Profile();
  hw.memory.retention = {{4 * kMiB, 0}, {32 * kMiB, 0.8}};
  hw.stall_share = 0.1;
  // A flushed backward is kept; a point without one stays without (0).
  hw.embedding = {{1000, 16, 256, 8, "uniform", 10, 40, 30, 123, 7.5, 21},
                  {4000000, 16, 256, 8, "uniform", 10, 9e4, 60, 0}};
  hw.identity.load_avg = 2.5;
  const HwProfile back = profileFromJson(profileToJson(hw), "hand.json");
  EXPECT_DOUBLE_EQ(back.identity.load_avg, 2.5);
  hw.identity.load_avg = -1;  // not recorded: not written, read back as such
  EXPECT_EQ(profileToJson(hw).find("load_avg"), std::string::npos);
  EXPECT_DOUBLE_EQ(profileFromJson(profileToJson(hw), "old.json").identity.load_avg, -1);
  ASSERT_EQ(back.embedding.size(), 2u);
  EXPECT_DOUBLE_EQ(back.embedding[0].bwd_cold_us, 123);
  EXPECT_DOUBLE_EQ(back.embedding[1].bwd_cold_us, 0);
  EXPECT_DOUBLE_EQ(back.embedding[0].fill_us, 7.5);  // the gradient's own fill, when timed
  EXPECT_DOUBLE_EQ(back.embedding[1].fill_us, 0);
  EXPECT_DOUBLE_EQ(back.embedding[0].fwd_rows_cold_us, 21);  // the rows alone evicted, when timed
  EXPECT_DOUBLE_EQ(back.embedding[1].fwd_rows_cold_us, 0);
  const std::string text = profileToJson(hw);
  EXPECT_EQ(text.find("bwd_cold_us"), text.rfind("bwd_cold_us")) << "written for the point without one";
  EXPECT_DOUBLE_EQ(back.memory.l2_bytes, 1e4);
  ASSERT_EQ(back.memory.retention.size(), 2u);
  EXPECT_DOUBLE_EQ(back.memory.retention[1].us, 0.8);
  EXPECT_DOUBLE_EQ(back.stall_share, 0.1);
  hw.memory.retention[1].us = 1.5;
  expectRefusedNaming(hw, "retention");
  hw.memory.retention[1].us = 0.8;
  hw.stall_share = 1;
  EXPECT_THROW(profileFromJson(profileToJson(hw), "bad.json"), InputError);
  // The share by call length comes back sorted by its bins' upper ends;
  // a share of 1 or more is refused by name.
  hw.stall_share = 0.1;
  hw.stall_by_call = {{1e9, 0.01}, {3, 0.07}};
  const HwProfile bins = profileFromJson(profileToJson(hw), "hand.json");
  ASSERT_EQ(bins.stall_by_call.size(), 2u);
  EXPECT_DOUBLE_EQ(bins.stall_by_call[0].bytes, 3);
  EXPECT_DOUBLE_EQ(bins.stall_by_call[0].us, 0.07);
  EXPECT_DOUBLE_EQ(bins.stall_by_call[1].us, 0.01);
  EXPECT_TRUE(profileFromJson(profileToJson(l3Profile()), "hand.json").stall_by_call.empty());
  hw.stall_by_call[1].us = 1;
  expectRefusedNaming(hw, "stall_by_call");
}

}  // namespace
}  // namespace etb::predict
