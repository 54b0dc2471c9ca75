// SPDX-License-Identifier: MIT
// The cross-rank schedule against hand-computed timelines.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "predictor/schedule.h"

namespace etb::predict {
namespace {

Step compute(size_t op, double us) {
  Step s;
  s.op = op;
  s.us = us;
  return s;
}

Step collective(size_t op, double us, const std::string& key, int members, bool async = false) {
  Step s = compute(op, us);
  s.kind = Step::Kind::kCollective;
  s.key = key;
  s.members = members;
  s.async = async;
  s.pg = 0;
  s.seq = 7;
  return s;
}

Step waitFor(size_t op) {
  Step s = compute(op, 0);
  s.kind = Step::Kind::kWait;
  s.pg = 0;
  s.seq = 7;
  return s;
}

std::vector<RankPrediction> ranks(size_t n, size_t ops) {
  std::vector<RankPrediction> r(n);
  for (auto& rp : r) rp.ops.resize(ops);
  return r;
}

TEST(Schedule, TheSlowestRankSetsWhenASynchronousCollectiveEnds) {
  std::vector<RankPrediction> r = ranks(2, 2);
  runSchedule({{compute(0, 10), collective(1, 5, "g#0", 2)},
               {compute(0, 30), collective(1, 5, "g#0", 2)}},
              r);
  EXPECT_DOUBLE_EQ(r[0].iter_us, 35);
  EXPECT_DOUBLE_EQ(r[1].iter_us, 35);
  EXPECT_DOUBLE_EQ(r[0].exposed_comm_us, 25);  // waited 20 for rank 1, then 5
  EXPECT_DOUBLE_EQ(r[1].exposed_comm_us, 5);
  EXPECT_DOUBLE_EQ(r[0].ops[1].start_us, 10);
}

TEST(Schedule, AnAsyncCollectiveOverlapsComputeUntilItsWait) {
  std::vector<RankPrediction> r = ranks(2, 3);
  // Posted at 0 on both ranks, 5 us transfer; rank 0 computes 20 before its
  // wait (no exposure), rank 1 only 2 (blocked 3 more).
  runSchedule({{collective(0, 5, "g#0", 2, true), compute(1, 20), waitFor(2)},
               {collective(0, 5, "g#0", 2, true), compute(1, 2), waitFor(2)}},
              r);
  EXPECT_DOUBLE_EQ(r[0].iter_us, 20);
  EXPECT_DOUBLE_EQ(r[0].exposed_comm_us, 0);
  EXPECT_DOUBLE_EQ(r[1].iter_us, 5);
  EXPECT_DOUBLE_EQ(r[1].exposed_comm_us, 3);
}

// Two ranks on one core: while both compute each runs at half speed; once
// rank 0 blocks in the collective, rank 1 has the core alone. Rank 0's 10
// us end at 20 (rank 1 has done 10 of its 30), rank 1's last 20 at 40.
TEST(Schedule, RanksSharingACoreTimeSliceWhileBothCompute) {
  std::vector<RankPrediction> r = ranks(2, 2);
  const std::vector<std::vector<Step>> steps = {{compute(0, 10), collective(1, 5, "g#0", 2)},
                                                {compute(0, 30), collective(1, 5, "g#0", 2)}};
  runSchedule(steps, r, 1);
  EXPECT_DOUBLE_EQ(r[0].ops[1].start_us, 20);
  EXPECT_DOUBLE_EQ(r[1].ops[1].start_us, 40);
  EXPECT_DOUBLE_EQ(r[0].iter_us, 45);
  EXPECT_DOUBLE_EQ(r[1].iter_us, 45);
  EXPECT_DOUBLE_EQ(r[0].exposed_comm_us, 25);
  EXPECT_DOUBLE_EQ(r[1].exposed_comm_us, 5);
  // As many cores as ranks: no sharing (the unshared timeline above).
  std::vector<RankPrediction> two = ranks(2, 2);
  runSchedule(steps, two, 2);
  EXPECT_DOUBLE_EQ(two[0].iter_us, 35);
}

// On one core an async collective overlapping compute takes its share of
// the core: 2 ranks x 10 us of compute plus a 5 us collective is 25 us of
// work on one core, all of it done at 25 (the collective at 15: three jobs
// at a third each for 15 us).
TEST(Schedule, ACollectiveInFlightSharesTheCoresWithTheComputeItOverlaps) {
  std::vector<RankPrediction> r = ranks(2, 3);
  runSchedule({{collective(0, 5, "g#0", 2, true), compute(1, 10), waitFor(2)},
               {collective(0, 5, "g#0", 2, true), compute(1, 10), waitFor(2)}},
              r, 1);
  EXPECT_DOUBLE_EQ(r[0].iter_us, 25);
  EXPECT_DOUBLE_EQ(r[1].iter_us, 25);
  EXPECT_DOUBLE_EQ(r[0].exposed_comm_us, 0);
}

TEST(Schedule, AnUnwaitedAsyncCollectiveEndsTheIteration) {
  std::vector<RankPrediction> r = ranks(1, 2);
  runSchedule({{compute(0, 1), collective(1, 9, "g#0", 1, true)}}, r);
  EXPECT_DOUBLE_EQ(r[0].iter_us, 10);
}

TEST(Schedule, CollectiveSequencesThatNeverMatchNameTheRankAndNode) {
  std::vector<RankPrediction> r = ranks(2, 1);
  r[1].ops[0].node_id = 42;
  r[1].ops[0].name = "record_param_comms";
  try {
    runSchedule({{compute(0, 1)}, {collective(0, 5, "g#0", 2)}}, r);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.loc().node_id, 42u);
    EXPECT_EQ(e.loc().file, "rank 1");
  }
}

}  // namespace
}  // namespace etb::predict
