// SPDX-License-Identifier: MIT
// changeDtype() (declared in scale.h): needs the dispatcher's schemas to
// find ScalarType arguments, which the recording writes as plain Ints.
#include <ATen/core/dispatch/Dispatcher.h>

#include <map>

#include "composer/node_work.h"
#include "composer/scale.h"
#include "composer/schema_args.h"
#include "composer/shape_check.h"
#include "core/base/error.h"
#include "replayer/arg_decoder.h"
#include "replayer/op_plan.h"

namespace etb::compose {
namespace {
using trace::DType;
using trace::Node;
using trace::Trace;
using trace::Value;
using trace::ValueKind;

// The caffe2 TypeMeta name the observer writes inside "Tensor(...)".
std::string_view typeMetaName(DType d) {
  switch (d) {
    case DType::kFloat: return "float";
    case DType::kDouble: return "double";
    case DType::kHalf: return "c10::Half";
    case DType::kBFloat16: return "c10::BFloat16";
    case DType::kInt64: return "long int";
    case DType::kInt32: return "int";
    case DType::kInt16: return "short int";
    case DType::kInt8: return "signed char";
    case DType::kUInt8: return "unsigned char";
    case DType::kBool: return "bool";
    default: return "";
  }
}

// "Tensor(float)" -> "Tensor(c10::BFloat16)", also inside list types.
std::string retype(std::string text, DType from, DType to) {
  const std::string old = "Tensor(" + std::string(typeMetaName(from)) + ")";
  const std::string now = "Tensor(" + std::string(typeMetaName(to)) + ")";
  for (size_t at = text.find(old); at != std::string::npos; at = text.find(old, at + now.size())) {
    text.replace(at, old.size(), now);
  }
  return text;
}

void retypeValue(Trace& t, Value& v, DType from, DType to, std::map<trace::StrId, trace::StrId>* memo) {
  auto [it, fresh] = memo->try_emplace(v.type, v.type);
  if (fresh) it->second = t.strings.intern(retype(std::string(t.str(v.type)), from, to));
  v.type = it->second;
  for (Value& x : v.items) retypeValue(t, x, from, to, memo);
}

bool outputsHave(const Trace& t, const Node& n, DType d) {
  for (const Value& v : n.outputs) {
    if (v.kind == ValueKind::kTensor && t.tensors[v.tensor].dtype == d) return true;
  }
  return false;
}

// A tensor's type string after deriveOutputDtypes gave its ref another
// dtype ("Tensor(c10::BFloat16)" -> "Tensor(float)"); a list's follows its
// items.
bool retypeDerived(Trace& t, Value& v) {
  bool changed = false;
  for (Value& x : v.items) changed = retypeDerived(t, x) || changed;
  if (v.kind == ValueKind::kTensor) {
    const std::string_view name = typeMetaName(t.tensors[v.tensor].dtype);
    const std::string want = "Tensor(" + std::string(name) + ")";
    const std::string_view have = t.str(v.type);
    if (!name.empty() && have.substr(0, 7) == "Tensor(" && have != want) {
      v.type = t.strings.intern(want);
      changed = true;
    }
  } else if (changed && (v.kind == ValueKind::kList || v.kind == ValueKind::kTuple)) {
    const std::string_view have = t.str(v.type);
    const size_t open = have.find('[');
    if (open != std::string_view::npos) {
      std::string text(have.substr(0, open + 1));
      for (size_t i = 0; i < v.items.size(); ++i) text += (i ? "," : "") + std::string(t.str(v.items[i].type));
      v.type = t.strings.intern(text + "]");
    }
  }
  return changed;
}

void retypeComm(Trace& t, Node& n, DType from, DType to) {
  trace::CommInfo& c = t.comms[static_cast<size_t>(n.comm)];
  if (c.dtype != from && c.dtype != DType::kUnknown) return;
  const auto old_size = static_cast<uint64_t>(trace::dtypeSize(c.dtype == DType::kUnknown ? from : c.dtype));
  c.dtype = to;
  if (c.bytes > 0 && old_size > 0) c.bytes = c.bytes / old_size * static_cast<uint64_t>(trace::dtypeSize(to));
  const std::string name = c10::toString(replay::detail::toScalarType(to));
  for (trace::Attr& a : n.attrs) {
    if (t.str(a.name) == "dtype" && a.value.kind == ValueKind::kString) a.value.s = t.strings.intern(name);
  }
}
}  // namespace

DtypeStats changeDtype(Trace& t, DType from, DType to) {
  DtypeStats stats;
  if (typeMetaName(to).empty()) {
    ETB_INPUT_ERROR(SourceLoc{"--dtype"}, "cannot convert to ", trace::dtypeName(to));
  }
  std::vector<double> bytes_before(t.nodes.size());
  for (size_t i = 0; i < t.nodes.size(); ++i) bytes_before[i] = nodeWork(t, t.nodes[i]);
  for (trace::TensorRef& r : t.tensors) {
    if (r.dtype != from) continue;
    r.dtype = to;
    r.itemsize = static_cast<uint32_t>(trace::dtypeSize(to));
    ++stats.tensors;
  }
  if (stats.tensors == 0) {
    ETB_INPUT_ERROR(SourceLoc{t.path}, "no tensor has dtype ", trace::dtypeName(from));
  }
  const int64_t from_code = static_cast<int64_t>(replay::detail::toScalarType(from));
  const int64_t to_code = static_cast<int64_t>(replay::detail::toScalarType(to));
  // ScalarType arguments, optional or not.
  SchemaArgs scalar_args([](const c10::Argument& a) { return realKind(a) == c10::TypeKind::ScalarTypeType; });
  std::map<trace::StrId, trace::StrId> memo;
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    Node& n = t.nodes[i];
    for (Value& v : n.inputs) retypeValue(t, v, from, to, &memo);
    for (Value& v : n.outputs) retypeValue(t, v, from, to, &memo);
    for (size_t a : scalar_args.of(t, n)) {
      if (a >= n.inputs.size()) continue;
      Value& arg = n.inputs[a];
      // dtype=None made the default (float) dtype: name the new one.
      if (arg.kind == ValueKind::kNone && outputsHave(t, n, to)) arg = trace::makeInt(t, from_code);
      if (arg.kind == ValueKind::kInt && arg.i == from_code) {
        arg.i = to_code;
        ++stats.scalar_args;
      }
    }
    if (n.comm >= 0) {
      retypeComm(t, n, from, to);
      ++stats.comms;
    }
  }
  stats.derived = deriveOutputDtypes(t);
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    Node& n = t.nodes[i];
    if (stats.derived > 0) {
      for (Value& v : n.inputs) retypeDerived(t, v);
      for (Value& v : n.outputs) retypeDerived(t, v);
    }
    if (n.dur_us > 0 && bytes_before[i] > 0 && !isMatmulLike(t, n)) {
      n.dur_us *= nodeWork(t, n) / bytes_before[i];
    }
  }
  return stats;
}

}  // namespace etb::compose
