// SPDX-License-Identifier: MIT
//
// Which 4-D tensors of a trace are channels-last (NHWC strides) when each op
// runs. A convolution's kernel path follows its input's layout: on a CPU a
// depthwise 7x7 backward over 768 channels of 2x2 maps took 15 ms
// channels-last and 1.1 ms contiguous, one over 96 channels of 16x16 maps
// 1.0 ms and 3.4. Networks get there by converting themselves
// (to(memory_format=channels_last)) or by permuting around a LayerNorm
// (ConvNeXt: every block's output is a permuted NHWC tensor, and so is the
// next block's input).
//
// ET 1.1.1+ records strides, and those say it. Older traces (torch 1.13's
// 1.0.1) record shapes only: the layouts are carried forward from the ops
// that made each tensor, as ATen lays them out: permute and transpose
// reorder their input's dims; an op with a memory_format argument takes it;
// a convolution's output is channels-last when its input or weight is;
// layer norm, softmax and the matrix products write contiguous outputs;
// other ops (elementwise, batch norm, pooling, in-place updates) follow the
// first input of the output's shape (TensorIterator's rule: a broadcast
// operand does not decide), or, for cat, inputs that all agree; a view that
// changes the rank of a reordered tensor is taken as the copy reshape makes.
// Tensors first seen as inputs (parameters, data) are contiguous.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/trace.h"

namespace etb::predict {

// For every node (by index into Trace::nodes): bit a set when input
// argument a (a < 32) is a channels-last 4-D tensor as the node runs.
std::vector<uint32_t> channelsLastInputs(const trace::Trace& trace);

// For every node: bit a set when input argument a (a < 32) is a 2-D
// tensor stored column by column (its first dim the inner one), as
// W.t() of a [n, k] weight is when mm / addmm take it: a BLAS packs such a
// B otherwise (HwProfile::gemm_nt). From recorded strides, else carried
// from the ops that made it: t, a transpose of its two dims and
// permute([1, 0]) flip it; detach, alias, slice, narrow, expand and the
// resolve_ ops keep it; other ops' outputs are contiguous, and so are
// tensors first seen as inputs. Unlike the channels-last pass, calls
// inside another op count: lstm's own t() of its weights is what its own
// addmm calls take in a replay too.
std::vector<uint32_t> transposedInputs(const trace::Trace& trace);

// Strides of a [N, C, H, W] tensor in NHWC order, and not also contiguous
// ones (a single channel or a 1x1 map is both, and ATen takes it as
// contiguous).
bool isChannelsLast(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides);

}  // namespace etb::predict
