// SPDX-License-Identifier: MIT
//
// Stand-ins for operators newer than this libtorch, so that a trace recorded
// with torch 2.x replays on an older one (Debian's 1.13): the recorded op's
// own schema, registered under the namespace etb_compat and computed from ops
// this libtorch has. Used only where the recorded op is missing; the plan
// lists each use as adapted (coverage.adapted_ops).
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <string>

namespace etb::replay::detail {

// The stand-in for `name` ("aten::scaled_dot_product_attention") and its
// overload, when there is one; `what` says how it computes.
c10::optional<c10::OperatorHandle> compatOp(const std::string& name, const std::string& overload,
                                            std::string* what);

}  // namespace etb::replay::detail
