// SPDX-License-Identifier: MIT
//
// Turns recorded trace Values into boxed-call arguments, guided by the
// dispatcher schema's argument types (the recording's own type strings are
// too lossy: ScalarType, Layout and MemoryFormat are all "Int").
#pragma once

#include <ATen/core/function_schema.h>

#include <functional>
#include <string>

#include "core/model/trace.h"
#include "replayer/op_plan.h"

namespace etb::replay::detail {

struct DecodeContext {
  const trace::Trace* trace = nullptr;
  at::Device device = at::kCPU;
  // Slot for a recorded input tensor (trace tensor index); kNoSlot for an
  // undefined tensor.
  std::function<int32_t(uint32_t)> input_slot;
  // Slot whose storage a Storage argument passes (that of the op's first
  // recorded output tensor); kNoSlot when the op records none.
  std::function<int32_t()> output_storage_slot;
};

// Decodes `value` for `arg` into `out`. Returns false with the reason in
// *why ("opaque value <Object>", "unsupported argument type Dimname", ...).
bool decodeArg(const DecodeContext& ctx, const trace::Value& value,
               const c10::Argument& arg, ArgSource* out, std::string* why);

// "aten::add.Tensor(Tensor self, ...) -> Tensor" -> {"aten::add", "Tensor"};
// false when the text is not a schema.
bool parseSchemaName(std::string_view schema, std::string* name, std::string* overload);

// True for a recorded undefined tensor ("Tensor(nullptr (uninitialized))").
bool isUndefinedTensor(const trace::Trace& trace, const trace::Value& value);

}  // namespace etb::replay::detail
