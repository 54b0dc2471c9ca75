// SPDX-License-Identifier: MIT
//
// Which GPU a rank replays on: its local rank's, as the NCCL communicator
// sets it. With every rank on cuda:0, `mpirun -np 8 et_replay --device cuda`
// on an 8-GPU node put each rank's tensors on GPU 0 while its NCCL
// communicator ran on GPU <local rank>. No GPU needed: the choice is checked.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "replayer/comm/communicator.h"

namespace etb::replay {
namespace {

TEST(RankDevice, BareCudaIsTheLocalRanksGpuAnIndexIsKept) {
  EXPECT_EQ(rankDevice("cuda", 3, 8), "cuda:3");
  EXPECT_EQ(rankDevice("cuda", 9, 8), "cuda:1");  // more ranks than GPUs: round robin
  EXPECT_EQ(rankDevice("cuda", -1, 8), "cuda:0");  // no launcher: the first GPU
  EXPECT_EQ(rankDevice("cuda:2", 5, 8), "cuda:2");
  EXPECT_EQ(rankDevice("cpu", 5, 8), "cpu");
}

// Each launcher's variable, first one set wins (Open MPI's before the rest).
TEST(RankDevice, LocalRankFromTheLaunchersEnvironment) {
  const char* vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                        "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK"};
  for (const char* v : vars) unsetenv(v);
  EXPECT_EQ(launcherLocalRank(), -1);
  setenv("LOCAL_RANK", "5", 1);
  EXPECT_EQ(launcherLocalRank(), 5);
  setenv("SLURM_LOCALID", "2", 1);
  EXPECT_EQ(launcherLocalRank(), 2);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "7", 1);
  EXPECT_EQ(launcherLocalRank(), 7);
  for (const char* v : vars) unsetenv(v);
}

}  // namespace
}  // namespace etb::replay
