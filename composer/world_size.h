// SPDX-License-Identifier: MIT
//
// Changing the world size of a multi-rank trace set. The model is held
// fixed and the job grows or shrinks around it:
//  - a group that spans the whole old world spans the whole new one;
//    smaller groups (tensor/pipeline-parallel) keep their size and are
//    tiled over the new ranks (new world a multiple of the old), named
//    after the originals' numbers;
//  - all_reduce, broadcast, reduce and barrier keep their sizes (data-
//    parallel gradient buckets do not depend on the number of replicas);
//  - all_gather keeps its gathered output and shrinks/grows the per-rank
//    shard (in = out / N); reduce_scatter keeps its input (out = in / N);
//    gather/scatter keep the per-rank part; all_to_all(v) keeps each rank's
//    send and receive totals and splits them evenly over the N peers;
//  - new rank r is a copy of old rank r mod W (its template).
// Collective tensors, comm attributes and the process-group config node are
// rewritten so that the ET JSON reads back with the new sizes, and the
// CommInfos so that the Chakra output carries them too.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/trace.h"

namespace etb::compose {

struct WorldStats {
  int64_t old_world = 0;
  int64_t new_world = 0;
  uint64_t resized = 0;  // collective calls whose sizes changed (all ranks)
  uint64_t kept = 0;     // collective calls whose sizes stayed
};

// One trace per new rank. `ranks` holds the old per-rank traces (one trace
// stands for every rank of its recorded world). Throws InputError naming the
// node when a size does not divide by the new world, or when sub-groups
// cannot be tiled.
std::vector<trace::Trace> changeWorldSize(const std::vector<trace::Trace>& ranks,
                                          int64_t new_world, WorldStats* stats = nullptr);

// The world size a trace set was recorded with: the number of traces when
// more than one, else the trace's world size, else its largest group.
int64_t recordedWorld(const std::vector<trace::Trace>& ranks);

}  // namespace etb::compose
