// SPDX-License-Identifier: MIT
//
// Splicing: repeating a trace's iterations, concatenating traces, and
// interleaving the compute of one trace with the communication of another.
// Every result has fresh, consecutive node ids (renumber()), so ids and
// dependencies stay consistent and ProfilerStep markers still open their
// iterations.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/model/trace.h"

namespace etb::compose {

struct RepeatStats {
  size_t copies = 0;
  size_t chained = 0;  // inputs of a copy bound to the previous copy's outputs
};

// Each iteration's body (everything between its marker and the next, or the
// whole trace without markers) becomes `k` consecutive copies. Copy c > 0
// gets fresh tensor and storage ids (so weights and activations of copies
// never alias), fresh rf_ids, and starts shifted by c times the body's
// recorded span; durations are the original's. Inputs of the body that no
// op of the body produces are bound to the previous copy's final outputs
// when shape and dtype match (a layer's input to the previous layer's
// output), so copies are chained through their data. k >= 1.
// Takes `t` by value: pass std::move(t) to spare a copy of a large trace.
trace::Trace repeatTrace(trace::Trace t, int k, RepeatStats* stats = nullptr);

// `b` after `a`: b's root nodes merge into a's roots of the same name, b's
// tensors get ids past a's, process groups merge by name (the same name with
// other ranks is an InputError).
trace::Trace concatTraces(const trace::Trace& a, const trace::Trace& b);

// The compute of `compute` with the communication of `comm`: compute's own
// collectives are dropped, comm's collectives (with their waits) are placed
// between compute's top-level ops at even spacing in the first iteration.
trace::Trace interleaveTraces(const trace::Trace& compute, const trace::Trace& comm);

}  // namespace etb::compose
