// SPDX-License-Identifier: MIT
//
// Packed weights the trace records as an opaque "<Object>": the quantized
// Linear ops (quantized::linear_dynamic, linear, ...) take their weights
// and bias prepacked into a LinearPackedParamsBase, which the observer
// cannot write out. The replay packs a stand-in of the size the op's
// recorded input and output imply.
#pragma once

#include <ATen/core/ivalue.h>

#include <string>
#include <string_view>

#include "core/model/trace.h"

namespace etb::replay::detail {

// True when `type` is a packed-params class this file can make.
bool isPackedLinearParams(const c10::TypePtr& type);

// Packed params for `node` (an op named `name` with input 0 [..., in] and
// output 0 [..., out]): a random [out, in] weight quantized to int8 (float
// for the *_fp16 ops) and a zero bias, packed by this libtorch's
// quantized::linear_prepack[_fp16]. False with *why when the shapes are not
// recorded or the prepack op is missing or fails.
bool makePackedLinearParams(const trace::Trace& trace, const trace::Node& node,
                            std::string_view name, c10::IValue* out, std::string* why);

}  // namespace etb::replay::detail
