// SPDX-License-Identifier: MIT
#include "replayer/arg_decoder.h"

#include <ATen/core/jit_type.h>

#include <vector>

namespace etb::replay::detail {
namespace {
using c10::TypeKind;
using trace::ValueKind;

bool fail(std::string* why, std::string text) {
  *why = std::move(text);
  return false;
}

bool asInt(const trace::Value& v, int64_t* out) {
  if (v.kind == ValueKind::kInt) *out = v.i;
  else if (v.kind == ValueKind::kBool) *out = v.b ? 1 : 0;
  else return false;
  return true;
}

bool asDouble(const trace::Value& v, double* out) {
  if (v.kind == ValueKind::kDouble) *out = v.d;
  else if (v.kind == ValueKind::kInt) *out = static_cast<double>(v.i);
  else return false;
  return true;
}

// A Scalar keeps the recorded kind: add_(x, 2) and add_(x, 2.0) differ for
// integer tensors.
bool asScalar(const trace::Value& v, c10::IValue* out) {
  if (v.kind == ValueKind::kInt) *out = c10::IValue(v.i);
  else if (v.kind == ValueKind::kDouble) *out = c10::IValue(v.d);
  else if (v.kind == ValueKind::kBool) *out = c10::IValue(v.b);
  else return false;
  return true;
}

// int[] / float[] / bool[] / Scalar[]; an int recorded for int[N] is broadcast (the
// schema allows "stride=1" for int[2]).
bool decodeList(const trace::Value& v, const c10::TypePtr& elem, int n,
                c10::IValue* out, std::string* why) {
  std::vector<trace::Value> single;
  const std::vector<trace::Value>* items = &v.items;
  if (v.kind != ValueKind::kList && v.kind != ValueKind::kTuple) {
    single.assign(static_cast<size_t>(n > 0 ? n : 1), v);
    items = &single;
  }
  const TypeKind k = elem->kind();
  if (k == TypeKind::IntType || k == TypeKind::SymIntType) {
    std::vector<int64_t> xs(items->size());
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!asInt((*items)[i], &xs[i])) return fail(why, "int list holds a non-int");
    }
    *out = c10::IValue(xs);
  } else if (k == TypeKind::FloatType) {
    std::vector<double> xs(items->size());
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!asDouble((*items)[i], &xs[i])) return fail(why, "float list holds a non-number");
    }
    *out = c10::IValue(xs);
  } else if (k == TypeKind::BoolType) {
    c10::List<bool> xs;
    for (const trace::Value& x : *items) {
      int64_t b = 0;
      if (!asInt(x, &b)) return fail(why, "bool list holds a non-bool");
      xs.push_back(b != 0);
    }
    *out = c10::IValue(xs);
  } else if (k == TypeKind::NumberType) {
    // Scalar[] (the _foreach_* ScalarList overloads): the kernel reads it as
    // a list typed Scalar, so the list must carry that element type.
    c10::impl::GenericList xs(c10::NumberType::get());
    for (const trace::Value& x : *items) {
      c10::IValue s;
      if (!asScalar(x, &s)) return fail(why, "Scalar list holds a non-number");
      xs.push_back(std::move(s));
    }
    *out = c10::IValue(std::move(xs));
  } else {
    return fail(why, "unsupported list type " + elem->str() + "[]");
  }
  return true;
}

bool decodeConst(const DecodeContext& ctx, const trace::Value& v,
                 const c10::TypePtr& type, int n, c10::IValue* out, std::string* why) {
  const TypeKind k = type->kind();
  if (k == TypeKind::OptionalType) {
    if (v.kind == ValueKind::kNone) {
      *out = c10::IValue();
      return true;
    }
    return decodeConst(ctx, v, type->castRaw<c10::OptionalType>()->getElementType(),
                       n, out, why);
  }
  if (k == TypeKind::GeneratorType || k == TypeKind::NoneType) {
    *out = c10::IValue();  // replay draws from the default generator
    return true;
  }
  if (v.kind == ValueKind::kOpaque) {
    return fail(why, "opaque value " + std::string(ctx.trace->str(v.s)));
  }
  switch (k) {
    case TypeKind::IntType:
    case TypeKind::SymIntType:
    case TypeKind::ScalarTypeType:
    case TypeKind::LayoutType:
    case TypeKind::MemoryFormatType: {
      int64_t x = 0;
      if (!asInt(v, &x)) return fail(why, "expected an int for " + type->str());
      *out = c10::IValue(x);
      return true;
    }
    case TypeKind::FloatType: {
      double x = 0;
      if (!asDouble(v, &x)) return fail(why, "expected a float");
      *out = c10::IValue(x);
      return true;
    }
    case TypeKind::BoolType: {
      int64_t x = 0;
      if (!asInt(v, &x)) return fail(why, "expected a bool");
      *out = c10::IValue(x != 0);
      return true;
    }
    case TypeKind::NumberType:
      if (!asScalar(v, out)) return fail(why, "expected a Scalar");
      return true;
    case TypeKind::StringType:
      if (v.kind != ValueKind::kString) return fail(why, "expected a string");
      *out = c10::IValue(std::string(ctx.trace->str(v.s)));
      return true;
    case TypeKind::DeviceObjType:
      // Recorded devices ("cuda:3") name the original machine's devices.
      *out = c10::IValue(ctx.device);
      return true;
    case TypeKind::StreamObjType:
      // The recorded stream is the original's; the replay runs on the
      // device's default stream.
      *out = c10::IValue(c10::Stream(c10::Stream::DEFAULT, ctx.device));
      return true;
    case TypeKind::ListType:
      return decodeList(v, type->castRaw<c10::ListType>()->getElementType(), n, out, why);
    default:
      return fail(why, "unsupported argument type " + type->str());
  }
}

bool isTensorType(const c10::TypePtr& t) { return t->kind() == TypeKind::TensorType; }

bool isOptionalTensor(const c10::TypePtr& t) {
  return t->kind() == TypeKind::OptionalType &&
         isTensorType(t->castRaw<c10::OptionalType>()->getElementType());
}

bool tensorSlot(const DecodeContext& ctx, const trace::Value& v, int32_t* slot,
                std::string* why) {
  if (v.kind == ValueKind::kNone || isUndefinedTensor(*ctx.trace, v)) {
    *slot = kNoSlot;
    return true;
  }
  if (v.kind != ValueKind::kTensor) return fail(why, "expected a tensor");
  *slot = ctx.input_slot(v.tensor);
  return true;
}
}  // namespace

bool isUndefinedTensor(const trace::Trace& trace, const trace::Value& value) {
  if (value.kind != ValueKind::kTensor) return false;
  return trace.str(value.type).find("nullptr") != std::string_view::npos;
}

bool decodeArg(const DecodeContext& ctx, const trace::Value& value,
               const c10::Argument& arg, ArgSource* out, std::string* why) {
  const c10::TypePtr& type = arg.type();
  if (isTensorType(type) || (isOptionalTensor(type) && value.kind != ValueKind::kNone)) {
    out->kind = ArgKind::kTensor;
    out->slots.assign(1, kNoSlot);
    return tensorSlot(ctx, value, &out->slots[0], why);
  }
  if (type->kind() == TypeKind::ListType) {
    const c10::TypePtr& elem = type->castRaw<c10::ListType>()->getElementType();
    const bool opt = isOptionalTensor(elem);
    if (isTensorType(elem) || opt) {
      if (value.kind != ValueKind::kList && value.kind != ValueKind::kTuple) {
        return fail(why, "expected a tensor list");
      }
      out->kind = opt ? ArgKind::kOptTensorList : ArgKind::kTensorList;
      out->slots.assign(value.items.size(), kNoSlot);
      for (size_t i = 0; i < value.items.size(); ++i) {
        if (!tensorSlot(ctx, value.items[i], &out->slots[i], why)) return false;
      }
      return true;
    }
  }
  if (type->kind() == TypeKind::StorageType) {
    // Recorded as "<Storage>": the storage the op makes its output view
    // (set_), so the output's recorded storage, taken from a leaf shaped
    // like that output.
    out->kind = ArgKind::kStorage;
    out->slots.assign(1, ctx.output_storage_slot ? ctx.output_storage_slot() : kNoSlot);
    return out->slots[0] != kNoSlot || fail(why, "Storage argument but no recorded output tensor");
  }
  out->kind = ArgKind::kConst;
  return decodeConst(ctx, value, type, arg.N() ? *arg.N() : 0, &out->value, why);
}

bool parseSchemaName(std::string_view schema, std::string* name, std::string* overload) {
  const size_t paren = schema.find('(');
  if (paren == std::string_view::npos || paren == 0) return false;
  std::string_view full = schema.substr(0, paren);
  const size_t ns = full.find("::");
  const size_t dot = full.find('.', ns == std::string_view::npos ? 0 : ns + 2);
  *name = std::string(full.substr(0, dot));
  *overload = dot == std::string_view::npos ? "" : std::string(full.substr(dot + 1));
  return !name->empty();
}

}  // namespace etb::replay::detail
