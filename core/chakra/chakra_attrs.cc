// SPDX-License-Identifier: MIT
#include "core/chakra/chakra_attrs.h"

#include <string>

#include "core/chakra/chakra_values.h"
#include "core/chakra/py_literal.h"

namespace etb::trace::chakra {
namespace {
using AP = ChakraProtoMsg::AttributeProto;
constexpr std::string_view kDocPrefix = "etb:";

template <typename List>
Value intList(Trace& t, const List& list, std::string_view elem) {
  Value v;
  v.kind = ValueKind::kList;
  for (auto x : list.values()) v.items.push_back(makeInt(t, static_cast<int64_t>(x), elem));
  return v;
}

template <typename List>
Value doubleList(Trace& t, const List& list, std::string_view elem) {
  Value v;
  v.kind = ValueKind::kList;
  for (auto x : list.values()) {
    Value d = makeDouble(t, static_cast<double>(x));
    d.type = t.strings.intern(elem);
    v.items.push_back(d);
  }
  return v;
}

Value scalarString(Trace& t, std::string_view s, std::string_view type) {
  Value v = makeString(t, s);
  v.type = t.strings.intern(type);
  return v;
}

// The plain reading: kind name as the type, value by kind.
Attr plainAttr(Trace& t, const AP& p) {
  Attr a;
  a.name = t.strings.intern(p.name());
  std::string kind;
  Value& v = a.value;
  switch (p.value_case()) {
    case AP::kDoubleVal: kind = "double"; v = makeDouble(t, p.double_val()); break;
    case AP::kFloatVal: kind = "float"; v = makeDouble(t, p.float_val()); break;
    case AP::kInt32Val: kind = "int32"; v = makeInt(t, p.int32_val(), kind); break;
    case AP::kInt64Val: kind = "int64"; v = makeInt(t, p.int64_val(), kind); break;
    case AP::kUint32Val: kind = "uint32"; v = makeInt(t, p.uint32_val(), kind); break;
    case AP::kUint64Val:
      kind = "uint64";
      v = makeInt(t, static_cast<int64_t>(p.uint64_val()), kind);
      break;
    case AP::kSint32Val: kind = "sint32"; v = makeInt(t, p.sint32_val(), kind); break;
    case AP::kSint64Val: kind = "sint64"; v = makeInt(t, p.sint64_val(), kind); break;
    case AP::kFixed32Val: kind = "fixed32"; v = makeInt(t, p.fixed32_val(), kind); break;
    case AP::kFixed64Val:
      kind = "fixed64";
      v = makeInt(t, static_cast<int64_t>(p.fixed64_val()), kind);
      break;
    case AP::kSfixed32Val: kind = "sfixed32"; v = makeInt(t, p.sfixed32_val(), kind); break;
    case AP::kSfixed64Val: kind = "sfixed64"; v = makeInt(t, p.sfixed64_val(), kind); break;
    case AP::kBoolVal: kind = "bool"; v = makeBool(t, p.bool_val()); break;
    case AP::kStringVal: kind = "string"; v = scalarString(t, p.string_val(), kind); break;
    case AP::kBytesVal: kind = "bytes"; v = scalarString(t, p.bytes_val(), kind); break;
    case AP::kDoubleList: kind = "double_list"; v = doubleList(t, p.double_list(), "double"); break;
    case AP::kFloatList: kind = "float_list"; v = doubleList(t, p.float_list(), "float"); break;
    case AP::kInt32List: kind = "int32_list"; v = intList(t, p.int32_list(), "int32"); break;
    case AP::kInt64List: kind = "int64_list"; v = intList(t, p.int64_list(), "int64"); break;
    case AP::kUint32List: kind = "uint32_list"; v = intList(t, p.uint32_list(), "uint32"); break;
    case AP::kUint64List: kind = "uint64_list"; v = intList(t, p.uint64_list(), "uint64"); break;
    case AP::kSint32List: kind = "sint32_list"; v = intList(t, p.sint32_list(), "sint32"); break;
    case AP::kSint64List: kind = "sint64_list"; v = intList(t, p.sint64_list(), "sint64"); break;
    case AP::kFixed32List: kind = "fixed32_list"; v = intList(t, p.fixed32_list(), "fixed32"); break;
    case AP::kFixed64List: kind = "fixed64_list"; v = intList(t, p.fixed64_list(), "fixed64"); break;
    case AP::kSfixed32List: kind = "sfixed32_list"; v = intList(t, p.sfixed32_list(), "sfixed32"); break;
    case AP::kSfixed64List: kind = "sfixed64_list"; v = intList(t, p.sfixed64_list(), "sfixed64"); break;
    case AP::kBoolList:
      kind = "bool_list";
      v.kind = ValueKind::kList;
      for (bool b : p.bool_list().values()) v.items.push_back(makeBool(t, b));
      break;
    case AP::kStringList:
    case AP::kBytesList: {
      const bool str = p.value_case() == AP::kStringList;
      kind = str ? "string_list" : "bytes_list";
      v.kind = ValueKind::kList;
      const auto& vals = str ? p.string_list().values() : p.bytes_list().values();
      for (const std::string& s : vals) v.items.push_back(scalarString(t, s, str ? "string" : "bytes"));
      break;
    }
    case AP::VALUE_NOT_SET: kind = "none"; v = makeNone(t); break;
  }
  a.type = t.strings.intern(kind);
  if (v.kind == ValueKind::kList) v.type = a.type;
  return a;
}

// doc_string "etb:['<attr type>', <kind/type tree>]" + a string_val holding
// the value's Python literal: exact for anything.
bool docAttr(Trace& t, const AP& p, Attr* out) {
  const std::string& doc = p.doc_string();
  if (doc.compare(0, kDocPrefix.size(), kDocPrefix) != 0) return false;
  const std::optional<pylit::Lit> head = pylit::parse(std::string_view(doc).substr(kDocPrefix.size()));
  if (!head || head->kind != pylit::Kind::kList || head->items.size() != 2 ||
      head->items[0].kind != pylit::Kind::kString) {
    return false;
  }
  IoText io;
  io.values = "[" + (p.value_case() == AP::kStringVal ? p.string_val() : std::string()) + "]";
  pylit::append(io.tree, pylit::Lit{pylit::Kind::kList, false, 0, 0, {}, {head->items[1]}});
  std::vector<Value> vals;
  if (!decodeIo(t, io, &vals) || vals.size() != 1) return false;
  out->name = t.strings.intern(p.name());
  out->type = t.strings.intern(head->items[0].s);
  out->value = std::move(vals[0]);
  return true;
}

bool isKind(std::string_view type, std::initializer_list<std::string_view> kinds) {
  for (std::string_view k : kinds) {
    if (type == k) return true;
  }
  return false;
}

template <typename List>
void fillInts(const Value& v, List* list) {
  for (const Value& x : v.items) list->add_values(static_cast<decltype(list->values(0))>(x.i));
}

// Writes the value in the kind named by `type`; false when the value does
// not fit that kind.
bool writePlain(const Trace& t, std::string_view type, const Value& v, AP* p) {
  const bool i = v.kind == ValueKind::kInt;
  const bool s = v.kind == ValueKind::kString;
  const bool l = v.kind == ValueKind::kList;
  if (i && type == "int32") { p->set_int32_val(static_cast<int32_t>(v.i)); return true; }
  if (i && type == "int64") { p->set_int64_val(v.i); return true; }
  if (i && type == "uint32") { p->set_uint32_val(static_cast<uint32_t>(v.i)); return true; }
  if (i && type == "uint64") { p->set_uint64_val(static_cast<uint64_t>(v.i)); return true; }
  if (i && type == "sint32") { p->set_sint32_val(static_cast<int32_t>(v.i)); return true; }
  if (i && type == "sint64") { p->set_sint64_val(v.i); return true; }
  if (i && type == "fixed32") { p->set_fixed32_val(static_cast<uint32_t>(v.i)); return true; }
  if (i && type == "fixed64") { p->set_fixed64_val(static_cast<uint64_t>(v.i)); return true; }
  if (i && type == "sfixed32") { p->set_sfixed32_val(static_cast<int32_t>(v.i)); return true; }
  if (i && type == "sfixed64") { p->set_sfixed64_val(v.i); return true; }
  if (v.kind == ValueKind::kDouble && type == "double") { p->set_double_val(v.d); return true; }
  if (v.kind == ValueKind::kDouble && type == "float") { p->set_float_val(static_cast<float>(v.d)); return true; }
  if (v.kind == ValueKind::kBool && type == "bool") { p->set_bool_val(v.b); return true; }
  if (s && type == "string") { p->set_string_val(std::string(t.str(v.s))); return true; }
  if (s && type == "bytes") { p->set_bytes_val(std::string(t.str(v.s))); return true; }
  if (!l) return false;
  if (type == "int32_list") { fillInts(v, p->mutable_int32_list()); return true; }
  if (type == "int64_list") { fillInts(v, p->mutable_int64_list()); return true; }
  if (type == "uint32_list") { fillInts(v, p->mutable_uint32_list()); return true; }
  if (type == "uint64_list") { fillInts(v, p->mutable_uint64_list()); return true; }
  if (type == "sint64_list") { fillInts(v, p->mutable_sint64_list()); return true; }
  if (type == "bool_list") {
    for (const Value& x : v.items) p->mutable_bool_list()->add_values(x.b);
    return true;
  }
  if (type == "string_list") {
    for (const Value& x : v.items) p->mutable_string_list()->add_values(std::string(t.str(x.s)));
    return true;
  }
  if (type == "double_list") {
    for (const Value& x : v.items) p->mutable_double_list()->add_values(x.d);
    return true;
  }
  return false;
}

// The kind a JSON-typed attr is written in when its type is not a proto kind.
std::string_view nativeKind(const Value& v) {
  switch (v.kind) {
    case ValueKind::kInt: return "int64";
    case ValueKind::kDouble: return "double";
    case ValueKind::kBool: return "bool";
    case ValueKind::kString: return "string";
    default: return "";
  }
}
}  // namespace

Attr attrFromProto(Trace& trace, const AP& proto) {
  Attr a;
  if (docAttr(trace, proto, &a)) return a;
  return plainAttr(trace, proto);
}

void attrToProto(const Trace& trace, const Attr& attr, AP* proto) {
  proto->Clear();
  proto->set_name(std::string(trace.str(attr.name)));
  const std::string_view type = trace.str(attr.type);
  bool ok = writePlain(trace, type, attr.value, proto);
  if (!ok && !isKind(type, {"int32", "int64", "uint32", "uint64", "double", "bool", "string"})) {
    ok = writePlain(trace, nativeKind(attr.value), attr.value, proto);
  }
  if (ok) {
    // Read it back; if that is not the same Attr, use the exact form.
    Trace scratch;
    const Attr back = plainAttr(scratch, *proto);
    if (scratch.str(back.type) == type &&
        sameValue(trace, attr.value, scratch, back.value)) {
      return;
    }
  }
  const std::string name = proto->name();
  proto->Clear();
  proto->set_name(name);
  IoText io = encodeIo(trace, {attr.value});
  // io.values is "[<lit>]": keep the literal alone.
  proto->set_string_val(io.values.substr(1, io.values.size() - 2));
  std::string doc(kDocPrefix);
  doc += "[";
  pylit::appendString(doc, type);
  doc += ", ";
  doc += treeOf(trace, attr.value);
  doc += "]";
  proto->set_doc_string(doc);
}

std::optional<int64_t> protoInt(const AP& p) {
  switch (p.value_case()) {
    case AP::kInt32Val: return p.int32_val();
    case AP::kInt64Val: return p.int64_val();
    case AP::kUint32Val: return p.uint32_val();
    case AP::kUint64Val: return static_cast<int64_t>(p.uint64_val());
    case AP::kSint32Val: return p.sint32_val();
    case AP::kSint64Val: return p.sint64_val();
    case AP::kFixed32Val: return p.fixed32_val();
    case AP::kFixed64Val: return static_cast<int64_t>(p.fixed64_val());
    case AP::kSfixed32Val: return p.sfixed32_val();
    case AP::kSfixed64Val: return p.sfixed64_val();
    case AP::kBoolVal: return p.bool_val() ? 1 : 0;
    default: return std::nullopt;
  }
}

std::optional<std::string_view> protoString(const AP& p) {
  if (p.value_case() == AP::kStringVal) return std::string_view(p.string_val());
  if (p.value_case() == AP::kBytesVal) return std::string_view(p.bytes_val());
  return std::nullopt;
}

void setInt64(AP* p, std::string_view name, int64_t v) { p->set_name(std::string(name)); p->set_int64_val(v); }
void setUint64(AP* p, std::string_view name, uint64_t v) { p->set_name(std::string(name)); p->set_uint64_val(v); }
void setInt32(AP* p, std::string_view name, int32_t v) { p->set_name(std::string(name)); p->set_int32_val(v); }
void setBool(AP* p, std::string_view name, bool v) { p->set_name(std::string(name)); p->set_bool_val(v); }
void setDouble(AP* p, std::string_view name, double v) { p->set_name(std::string(name)); p->set_double_val(v); }
void setString(AP* p, std::string_view name, std::string_view v) {
  p->set_name(std::string(name));
  p->set_string_val(std::string(v));
}

}  // namespace etb::trace::chakra
