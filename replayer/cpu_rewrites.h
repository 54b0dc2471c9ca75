// SPDX-License-Identifier: MIT
//
// GPU-only operators with an exact CPU equivalent, used when a GPU trace is
// replayed with --device cpu (cudnn batch norm backward is the native one
// with its arguments reordered; pin_memory is a copy).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/model/trace.h"

namespace etb::replay::detail {

// When `name.overload` has a CPU equivalent, sets the target op and the
// target's inputs built from `inputs`, and returns true.
bool rewriteForCpu(std::string* name, std::string* overload,
                   const std::vector<trace::Value>& inputs, std::vector<trace::Value>* out);

// True for output `ret` of `op` whose shape is the device kernel's choice,
// not the data's: a GPU trace replayed on the CPU (or the reverse) gets
// another shape there by design, and the ops that read it (the op's own
// backward) run on the replay's device too.
bool deviceDependentOutput(std::string_view op, size_t ret);

}  // namespace etb::replay::detail
