// SPDX-License-Identifier: MIT
#include "core/chakra/chakra_values.h"

#include <cmath>
#include <cstring>
#include <optional>

#include "core/chakra/py_literal.h"

namespace etb::trace::chakra {
namespace {
using pylit::Kind;
using pylit::Lit;

bool startsWith(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

// "GenericList[Tensor(float),Int]" -> {"Tensor(float)", "Int"}; splits at
// the top-level commas inside the outer brackets.
std::vector<std::string_view> elementTypes(std::string_view type) {
  std::vector<std::string_view> out;
  const size_t open = type.find('[');
  if (open == std::string_view::npos || type.back() != ']') return out;
  std::string_view inner = type.substr(open + 1, type.size() - open - 2);
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < inner.size(); ++i) {
    const char c = inner[i];
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(inner.substr(start, i - start));
      start = i + 1;
    }
  }
  if (!inner.empty()) out.push_back(inner.substr(start));
  return out;
}

Lit intLit(int64_t v) { Lit l; l.kind = Kind::kInt; l.i = v; return l; }
Lit strLit(std::string_view v) { Lit l; l.kind = Kind::kString; l.s = v; return l; }
Lit listLit() { Lit l; l.kind = Kind::kList; return l; }

Lit intsLit(const std::vector<int64_t>& v) {
  Lit l = listLit();
  for (int64_t x : v) l.items.push_back(intLit(x));
  return l;
}

Lit valueLit(const Trace& t, const Value& v) {
  Lit l;
  switch (v.kind) {
    case ValueKind::kNone: break;
    case ValueKind::kInt: l = intLit(v.i); break;
    case ValueKind::kDouble: l.kind = Kind::kFloat; l.d = v.d; break;
    case ValueKind::kBool: l.kind = Kind::kBool; l.b = v.b; break;
    case ValueKind::kString:
    case ValueKind::kDevice:
    case ValueKind::kOpaque: l = strLit(t.str(v.s)); break;
    case ValueKind::kTensor: {
      const TensorRef& r = t.tensors[v.tensor];
      l = listLit();
      for (uint64_t x : {r.tensor_id, r.storage_id, r.offset, r.numel,
                         static_cast<uint64_t>(r.itemsize)}) {
        l.items.push_back(intLit(static_cast<int64_t>(x)));
      }
      if (r.has_device) l.items.push_back(strLit(t.str(r.device)));
      break;
    }
    case ValueKind::kList:
    case ValueKind::kTuple:
      l = listLit();
      for (const Value& x : v.items) l.items.push_back(valueLit(t, x));
      break;
  }
  return l;
}

// Shapes (strides when `strides`) mirror the value's nesting; tensors that
// did not record strides give None.
Lit shapeLit(const Trace& t, const Value& v, bool strides) {
  if (v.kind == ValueKind::kTensor) {
    const TensorRef& r = t.tensors[v.tensor];
    if (strides && !r.has_strides) return Lit{};
    return intsLit(t.list(strides ? r.strides : r.shape));
  }
  Lit l = listLit();
  if (v.kind == ValueKind::kList || v.kind == ValueKind::kTuple) {
    for (const Value& x : v.items) l.items.push_back(shapeLit(t, x, strides));
  }
  return l;
}

// [kind, 'type', [children]] for every value: decodes without guessing.
Lit treeLit(const Trace& t, const Value& v) {
  Lit l = listLit();
  l.items.push_back(intLit(static_cast<int64_t>(v.kind)));
  l.items.push_back(strLit(t.str(v.type)));
  Lit kids = listLit();
  for (const Value& x : v.items) kids.items.push_back(treeLit(t, x));
  l.items.push_back(std::move(kids));
  return l;
}

bool hasStrides(const Trace& t, const Value& v) {
  if (v.kind == ValueKind::kTensor) return t.tensors[v.tensor].has_strides;
  for (const Value& x : v.items) {
    if (hasStrides(t, x)) return true;
  }
  return false;
}

std::string render(const Trace& t, const std::vector<Value>& values,
                   Lit (*fn)(const Trace&, const Value&, bool), bool flag) {
  Lit l = listLit();
  for (const Value& v : values) l.items.push_back(fn(t, v, flag));
  std::string out;
  pylit::append(out, l);
  return out;
}

const Lit* itemAt(const Lit* l, size_t i) {
  if (l == nullptr || l->kind != Kind::kList || i >= l->items.size()) return nullptr;
  return &l->items[i];
}

std::vector<int64_t> intsOf(const Lit* l, bool* ok) {
  std::vector<int64_t> out;
  *ok = l != nullptr && l->kind == Kind::kList;
  if (!*ok) return out;
  for (const Lit& x : l->items) {
    if (x.kind != Kind::kInt) { *ok = false; return {}; }
    out.push_back(x.i);
  }
  return out;
}

struct Decoder {
  Trace& t;

  bool tensor(const Lit& v, const Lit* shape, const Lit* stride, Value* out) {
    if (v.kind != Kind::kList || v.items.size() < 5 || v.items.size() > 6) return false;
    for (size_t i = 0; i < 5; ++i) {
      if (v.items[i].kind != Kind::kInt) return false;
    }
    TensorRef r;
    r.tensor_id = static_cast<uint64_t>(v.items[0].i);
    r.storage_id = static_cast<uint64_t>(v.items[1].i);
    r.offset = static_cast<uint64_t>(v.items[2].i);
    r.numel = static_cast<uint64_t>(v.items[3].i);
    r.itemsize = static_cast<uint32_t>(v.items[4].i);
    if (v.items.size() == 6) {
      if (v.items[5].kind != Kind::kString) return false;
      r.has_device = true;
      r.device = t.strings.intern(v.items[5].s);
    }
    r.dtype = dtypeOfTensorType(t.str(out->type));
    bool ok = false;
    std::vector<int64_t> dims = intsOf(shape, &ok);
    if (ok) r.shape = t.lists.intern(dims);
    dims = intsOf(stride, &ok);
    if (ok) {
      r.has_strides = true;
      r.strides = t.lists.intern(dims);
    }
    out->kind = ValueKind::kTensor;
    out->tensor = static_cast<uint32_t>(t.tensors.size());
    t.tensors.push_back(r);
    return true;
  }

  // Without a tree: the literal's own kind decides, the type breaks ties.
  ValueKind guessKind(const Lit& v, std::string_view type) {
    switch (v.kind) {
      case Kind::kNone: return ValueKind::kNone;
      case Kind::kBool: return ValueKind::kBool;
      case Kind::kInt: return ValueKind::kInt;
      case Kind::kFloat: return ValueKind::kDouble;
      case Kind::kString:
        if (type == "String") return ValueKind::kString;
        if (type == "Device") return ValueKind::kDevice;
        return ValueKind::kOpaque;
      case Kind::kList:
        if (startsWith(type, "Tensor")) return ValueKind::kTensor;
        return startsWith(type, "Tuple") ? ValueKind::kTuple : ValueKind::kList;
    }
    return ValueKind::kNone;
  }

  bool scalar(const Lit& v, ValueKind kind, Value* out) {
    out->kind = kind;
    switch (kind) {
      case ValueKind::kNone: return true;
      case ValueKind::kInt:
        if (v.kind == Kind::kBool) { out->i = v.b; return true; }
        out->i = v.i;
        return v.kind == Kind::kInt;
      case ValueKind::kDouble:
        if (v.kind == Kind::kInt) { out->d = static_cast<double>(v.i); return true; }
        out->d = v.d;
        return v.kind == Kind::kFloat;
      case ValueKind::kBool:
        out->b = v.b;
        return v.kind == Kind::kBool;
      default:
        out->s = t.strings.intern(v.s);
        return v.kind == Kind::kString;
    }
  }

  bool value(const Lit& v, const Lit* shape, const Lit* stride,
             std::string_view type, const Lit* tree, Value* out, int depth) {
    if (depth > 64) return false;
    ValueKind kind = guessKind(v, type);
    const Lit* kids = nullptr;
    if (tree != nullptr) {
      const Lit* k = itemAt(tree, 0);
      const Lit* ty = itemAt(tree, 1);
      kids = itemAt(tree, 2);
      if (k == nullptr || k->kind != Kind::kInt || k->i < 0 ||
          k->i > static_cast<int64_t>(ValueKind::kOpaque) || ty == nullptr ||
          ty->kind != Kind::kString) {
        return false;
      }
      kind = static_cast<ValueKind>(k->i);
      type = ty->s;
    }
    out->type = t.strings.intern(type);
    if (kind == ValueKind::kTensor) return tensor(v, shape, stride, out);
    if (kind != ValueKind::kList && kind != ValueKind::kTuple) return scalar(v, kind, out);
    if (v.kind != Kind::kList) return false;
    out->kind = kind;
    const std::vector<std::string_view> elem = elementTypes(type);
    out->items.resize(v.items.size());
    for (size_t i = 0; i < v.items.size(); ++i) {
      const std::string_view et = i < elem.size() ? elem[i] : std::string_view();
      if (!value(v.items[i], itemAt(shape, i), itemAt(stride, i), et,
                 itemAt(kids, i), &out->items[i], depth + 1)) {
        return false;
      }
    }
    return true;
  }
};

std::optional<Lit> parseList(const std::string& text) {
  if (text.empty()) return Lit{Kind::kList, false, 0, 0, {}, {}};
  std::optional<Lit> l = pylit::parse(text);
  if (!l || l->kind != Kind::kList) return std::nullopt;
  return l;
}
}  // namespace

bool decodeIo(Trace& trace, const IoText& text, std::vector<Value>* out) {
  out->clear();
  const std::optional<Lit> values = parseList(text.values);
  const std::optional<Lit> shapes = parseList(text.shapes);
  const std::optional<Lit> types = parseList(text.types);
  const std::optional<Lit> strides = parseList(text.strides);
  const std::optional<Lit> tree = parseList(text.tree);
  if (!values || !shapes || !types || !strides || !tree) return false;
  const size_t tensors_before = trace.tensors.size();
  Decoder d{trace};
  out->resize(values->items.size());
  for (size_t i = 0; i < values->items.size(); ++i) {
    const Lit* type = itemAt(&*types, i);
    if (type != nullptr && type->kind != Kind::kString) return false;
    const std::string_view ty = type != nullptr ? std::string_view(type->s) : "";
    const Lit* tr = text.tree.empty() ? nullptr : itemAt(&*tree, i);
    if (!text.tree.empty() && tr == nullptr) return false;
    const Lit* st = text.strides.empty() ? nullptr : itemAt(&*strides, i);
    if (!d.value(values->items[i], itemAt(&*shapes, i), st, ty, tr, &(*out)[i], 0)) {
      out->clear();
      trace.tensors.resize(tensors_before);
      return false;
    }
  }
  return true;
}

IoText encodeIo(const Trace& trace, const std::vector<Value>& values) {
  IoText text;
  if (values.empty()) return text;
  text.values = render(
      trace, values, [](const Trace& t, const Value& v, bool) { return valueLit(t, v); },
      false);
  text.shapes = render(trace, values, shapeLit, false);
  Lit types = listLit();
  bool strides = false;
  for (const Value& v : values) {
    types.items.push_back(strLit(trace.str(v.type)));
    strides = strides || hasStrides(trace, v);
  }
  pylit::append(text.types, types);
  if (strides) text.strides = render(trace, values, shapeLit, true);
  // Decode what we wrote; only if that does not give the same values back
  // do we pay for the kind/type tree.
  Trace scratch;
  std::vector<Value> back;
  bool same = decodeIo(scratch, text, &back) && back.size() == values.size();
  for (size_t i = 0; same && i < values.size(); ++i) {
    same = sameValue(trace, values[i], scratch, back[i]);
  }
  if (!same) {
    text.tree = render(
        trace, values, [](const Trace& t, const Value& v, bool) { return treeLit(t, v); },
        false);
  }
  return text;
}

std::string treeOf(const Trace& trace, const Value& value) {
  std::string out;
  pylit::append(out, treeLit(trace, value));
  return out;
}

bool sameValue(const Trace& ta, const Value& a, const Trace& tb, const Value& b) {
  if (a.kind != b.kind || ta.str(a.type) != tb.str(b.type)) return false;
  switch (a.kind) {
    case ValueKind::kNone: return true;
    case ValueKind::kInt: return a.i == b.i;
    case ValueKind::kDouble:
      return std::memcmp(&a.d, &b.d, sizeof(double)) == 0 ||
             (std::isnan(a.d) && std::isnan(b.d));
    case ValueKind::kBool: return a.b == b.b;
    case ValueKind::kString:
    case ValueKind::kDevice:
    case ValueKind::kOpaque: return ta.str(a.s) == tb.str(b.s);
    case ValueKind::kTensor: {
      const TensorRef& x = ta.tensors[a.tensor];
      const TensorRef& y = tb.tensors[b.tensor];
      return x.tensor_id == y.tensor_id && x.storage_id == y.storage_id &&
             x.offset == y.offset && x.numel == y.numel && x.itemsize == y.itemsize &&
             x.dtype == y.dtype && x.has_device == y.has_device &&
             x.has_strides == y.has_strides && ta.str(x.device) == tb.str(y.device) &&
             ta.list(x.shape) == tb.list(y.shape) &&
             (!x.has_strides || ta.list(x.strides) == tb.list(y.strides));
    }
    case ValueKind::kList:
    case ValueKind::kTuple:
      if (a.items.size() != b.items.size()) return false;
      for (size_t i = 0; i < a.items.size(); ++i) {
        if (!sameValue(ta, a.items[i], tb, b.items[i])) return false;
      }
      return true;
  }
  return false;
}

}  // namespace etb::trace::chakra
