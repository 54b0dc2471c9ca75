// SPDX-License-Identifier: MIT
//
// The check every composition passes before it is written: each replayable
// operator runs on the meta device (shapes and dtypes only, no data) with
// the recorded input shapes, and its outputs must have the recorded shapes.
// Operators libtorch 1.13 has no meta kernel for (convolution_backward,
// _embedding_bag_dense_backward, ...) run on the CPU instead, on
// uninitialised tensors of the claimed shapes (integer tensors zeroed so
// that they are valid indices). Collectives are checked by the size rule of
// their type against their group. What could not be checked is counted with
// its reason, never passed in silence.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/model/trace.h"

namespace etb::compose {

struct CheckReport {
  // "meta", "cpu (no meta kernel)", "collective size rule",
  // "unchecked: <reason>" -> number of ops.
  std::map<std::string, uint64_t> by_method;
  // For the unchecked ones: "<op>: <reason>" -> count.
  std::map<std::string, uint64_t> unchecked;
  // Every op not checked on meta: "<method>: <op>[: reason]" -> count.
  std::map<std::string, uint64_t> detail;
  uint64_t ops = 0;
  uint64_t cached = 0;  // identical calls checked once
};

// Calls already checked (signature -> method), shared across the ranks of
// one composition: 64 ranks of the same model check each call once.
using CheckCache = std::unordered_map<std::string, std::string>;

struct CheckOptions {
  // A CPU fallback allocates its inputs; above this many bytes the op is
  // counted unchecked ("too large for a CPU check") instead.
  uint64_t cpu_limit_bytes = uint64_t{1} << 30;
  CheckCache* cache = nullptr;  // null: one per call of checkShapes
};

// Checks every iteration of `t`. Throws InputError (exit 2) at the first op
// whose recorded shapes cannot be right, naming the node, the op, its input
// shapes and libtorch's reason (or the output that differs).
CheckReport checkShapes(const trace::Trace& t, const CheckOptions& options = {});

// A view or reshape as recorded before a substitution: the node, its input's
// shape and its size argument.
struct RecordedReshape {
  size_t node;
  std::vector<int64_t> input, sizes;
};

// Gives every output whose shape libtorch derives from its inputs the shape
// it derives now, and the later uses of that tensor too (after a dimension
// substitution: a DDP bucket's flatten_dense_tensors sums its inputs' sizes,
// which no recorded size equal to the old dimension says). Ops that fail on
// the meta device are left as they are, for checkShapes to report, and so
// are the refs `keep` marks (those a substitution wrote: where libtorch
// disagrees with one, the composition is wrong, not stale).
//
// Before each of `reshapes` runs, its size argument is refitted to its input
// as it is then: the recorded sizes are matched to the input's dims they
// merge or split, and a group whose input now holds more elements grows
// with it: a merged dim takes the group's new product ([seq, batch, 4h] ->
// [seq * batch, 4h]); of a split one, the size equal to `from` grows, else
// the one at the end (outer or inner) where the grown input dims are ([s,
// b, d] -> [s, b * heads, d / heads]), else the first multiple of `from`.
// Sizes with -1 are libtorch's to infer. Returns the outputs given a new
// shape.
uint64_t deriveOutputShapes(trace::Trace& t, const std::vector<bool>& keep = {},
                            const std::vector<RecordedReshape>& reshapes = {}, int64_t from = 0);

// The sizes `sizes` (a reshape of `old_input`) become when that input has
// the shape `input` (same rank), as above; empty when the grouping cannot
// be told.
std::vector<int64_t> refitReshape(const std::vector<int64_t>& old_input, const std::vector<int64_t>& sizes,
                                  const std::vector<int64_t>& input, int64_t from);

// The same for dtypes after a dtype change: every output takes the dtype
// libtorch gives it from its converted inputs (abs of a complex tensor stays
// float; bincount with bfloat16 weights counts in double), and its later
// uses too. The tensors' type strings are the caller's to rewrite. Returns
// the outputs given a new dtype or shape.
uint64_t deriveOutputDtypes(trace::Trace& t);

// True when libtorch's error `what` says the backend has no kernel for the op
// (then checked on the CPU instead), false for a shape error.
bool isMissingKernel(const std::string& what);

// Adds `b`'s counts to `a` (per-rank reports into one).
void mergeReports(CheckReport& a, const CheckReport& b);

}  // namespace etb::compose
