// SPDX-License-Identifier: MIT
#include "core/pytorch_et/et_json_node.h"

#include <utility>

namespace etb::trace::detail {
namespace {
namespace dom = simdjson::dom;
using simdjson::dom::element_type;
using Elem = dom::element;

bool isInteger(const Elem& e) {
  return e.type() == element_type::INT64 || e.type() == element_type::UINT64;
}

uint64_t asU64(const Elem& e) {
  return e.type() == element_type::UINT64 ? e.get_uint64().value_unsafe()
                                          : static_cast<uint64_t>(e.get_int64().value_unsafe());
}

std::string_view kindTypeName(const Elem& e) {
  switch (e.type()) {
    case element_type::INT64: return "int64";
    case element_type::UINT64: return "uint64";
    case element_type::DOUBLE: return "double";
    case element_type::STRING: return "string";
    case element_type::BOOL: return "bool";
    default: return "json";
  }
}

// "1.0.1", "1.1.1-chakra.0.0.4": the pytorch part must be 1.0.x or 1.1.x.
bool supportedSchema(std::string_view schema) {
  const std::string_view v = schema.substr(0, schema.find('-'));
  if (v.size() < 5 || (v.substr(0, 4) != "1.0." && v.substr(0, 4) != "1.1.")) return false;
  for (char c : v.substr(4)) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

NodeSink::NodeSink(Trace& t, std::mutex& pools, std::vector<TensorRef>* tensors)
    : t_(t), pools_(&pools), tensors_(tensors), views_{std::string_view()} {
  strs_.insert(std::string_view(), 0);
}

void StrCache::insert(std::string_view s, StrId id) {
  if ((used_ + 1) * 2 > slots_.size()) {  // at most half full
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<size_t>(64, old.size() * 2), Slot{});
    mask_ = slots_.size() - 1;
    used_ = 0;
    for (const Slot& slot : old) {
      if (slot.id != kMissing) insert(slot.text, slot.id);
    }
  }
  const uint64_t h = hashOf(s);
  size_t i = h & mask_;
  while (slots_[i].id != kMissing) i = (i + 1) & mask_;
  slots_[i] = Slot{s, h, id};
  ++used_;
}

StrId NodeSink::strMiss(std::string_view s) {
  StrId id;
  std::string_view kept;
  {
    std::lock_guard<std::mutex> lock(*pools_);
    id = t_.strings.intern(s);
    kept = t_.strings.get(id);
  }
  strs_.insert(kept, id);
  if (views_.size() <= id) views_.resize(id + 1);
  views_[id] = kept;
  return id;
}

size_t NodeSink::ListHash::operator()(const std::vector<int64_t>* v) const {
  uint64_t h = 1469598103934665603ull ^ v->size();
  for (int64_t x : *v) h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ull;
  return static_cast<size_t>(h);
}

ListId NodeSink::list(const std::vector<int64_t>& values) {
  if (pools_ == nullptr) return t_.lists.intern(values);
  const auto it = lists_.find(&values);
  if (it != lists_.end()) return it->second;
  ListId id;
  const std::vector<int64_t>* kept;
  {
    std::lock_guard<std::mutex> lock(*pools_);
    id = t_.lists.intern(values);
    kept = &t_.lists.get(id);
  }
  lists_.emplace(kept, id);
  return id;
}

size_t countOf(dom::array a) {
  size_t n = a.size();
  if (n < 0xFFFFFF) return n;
  n = 0;
  for (Elem e : a) {
    (void)e;
    ++n;
  }
  return n;
}

dom::array readHeader(Elem root, Trace& t) {
  SourceLoc loc{t.path};
  if (!root.is_object()) ETB_INPUT_ERROR(loc, "the top level is not a JSON object");
  dom::object top = root.get_object().value_unsafe();
  Elem nodes;
  bool has_nodes = false, has_schema = false;
  for (dom::key_value_pair kv : top) {
    const Elem& v = kv.value;
    if (kv.key == "schema") {
      if (!v.is_string()) ETB_INPUT_ERROR(loc, "\"schema\" is not a string");
      t.schema = std::string(v.get_string().value_unsafe());
      has_schema = true;
    } else if (kv.key == "pid" && isInteger(v)) {
      t.pid = static_cast<int64_t>(asU64(v));
    } else if (kv.key == "time" && v.is_string()) {
      t.time = std::string(v.get_string().value_unsafe());
    } else if (kv.key == "start_ts" && isInteger(v)) {
      t.start_ts = asU64(v);
    } else if (kv.key == "finish_ts" && isInteger(v)) {
      t.finish_ts = asU64(v);
    } else if (kv.key == "nodes") {
      nodes = v;
      has_nodes = true;
    }
  }
  if (!has_schema) ETB_INPUT_ERROR(loc, "no \"schema\": not a PyTorch execution trace");
  if (!supportedSchema(t.schema)) {
    ETB_INPUT_ERROR(loc, "unsupported schema \"", t.schema, "\" (expected 1.0.x or 1.1.x)");
  }
  if (!has_nodes) ETB_INPUT_ERROR(loc, "no \"nodes\"");
  if (!nodes.is_array()) ETB_INPUT_ERROR(loc, "\"nodes\" is not an array");
  return nodes.get_array().value_unsafe();
}

void NodeReader::read(Elem e, size_t index, Node* n) {
  loc_.node_id = SourceLoc::kNoNode;  // loc_.file is set once: a copy per node costs a malloc
  name_ = {};
  if (!e.is_object()) ETB_INPUT_ERROR(loc(), "node #", index, " is not a JSON object");
  dom::object o = e.get_object().value_unsafe();
  std::string_view name;
  if (o["name"].get(name) == simdjson::SUCCESS) name_ = name;
  Elem id;
  if (o["id"].get(id) != simdjson::SUCCESS) ETB_INPUT_ERROR(loc(), "node #", index, " has no \"id\"");
  if (!isInteger(id) || (id.type() == element_type::INT64 && id.get_int64().value_unsafe() < 0)) {
    ETB_INPUT_ERROR(loc(), "node #", index, ": \"id\" is not an unsigned integer");
  }
  n->id = asU64(id);
  loc_.node_id = n->id;
  Args in, out;
  for (dom::key_value_pair kv : o) field(kv.key, kv.value, n, &in, &out);
  if (in.values != nullptr) dec_.decodeArgs(n->id, *in.values, in.shapes, in.types, in.strides, &n->inputs);
  if (out.values != nullptr) {
    dec_.decodeArgs(n->id, *out.values, out.shapes, out.types, out.strides, &n->outputs);
  }
}

const SourceLoc& NodeReader::loc() {
  loc_.node_name = std::string(name_);
  return loc_;
}

uint64_t NodeReader::uintField(std::string_view key, const Elem& v) {
  if (!isInteger(v)) ETB_INPUT_ERROR(loc(), "\"", key, "\" is not an integer");
  return asU64(v);
}

void NodeReader::field(std::string_view key, Elem v, Node* n, Args* in, Args* out) {
  if (key == "id") return;
  if (key == "name") {
    if (!v.is_string()) ETB_INPUT_ERROR(loc(), "\"name\" is not a string");
    n->name = sink_.str(v.get_string().value_unsafe());
  } else if (key == "ctrl_deps" || key == "parent") {
    n->parent = uintField(key, v);
  } else if (key == "inputs" || key == "outputs") {
    argsBlock(key, v, key == "inputs" ? in : out);
  } else if (key == "input_shapes") {
    in->sh = v, in->shapes = &in->sh;
  } else if (key == "input_types") {
    in->ty = v, in->types = &in->ty;
  } else if (key == "output_shapes") {
    out->sh = v, out->shapes = &out->sh;
  } else if (key == "output_types") {
    out->ty = v, out->types = &out->ty;
  } else if (key == "attrs") {
    attrs(v, n);
  } else if (key == "ts" && v.is_number()) {
    n->start_us = v.get_double().value_unsafe();
  } else if (key == "inclusive_dur" && v.is_number()) {
    n->dur_us = v.get_double().value_unsafe();
  } else if (!known(key, v, n)) {
    Attr a;
    a.name = sink_.str(key);
    a.type = sink_.str(kindTypeName(v));
    a.value = dec_.decodeAttrValue(v, a.type);
    n->attrs.push_back(std::move(a));
  }
}

// The 1.0.2+ {values, shapes, types, strides} object, or a flat values array.
void NodeReader::argsBlock(std::string_view key, Elem v, Args* a) {
  if (v.is_array()) {
    a->v = v, a->values = &a->v;
    return;
  }
  if (!v.is_object()) ETB_INPUT_ERROR(loc(), "\"", key, "\" is neither an object nor an array");
  dom::object o = v.get_object().value_unsafe();
  if (o["values"].get(a->v) != simdjson::SUCCESS) ETB_INPUT_ERROR(loc(), "\"", key, "\" has no \"values\"");
  a->values = &a->v;
  if (o["shapes"].get(a->sh) == simdjson::SUCCESS) a->shapes = &a->sh;
  if (o["types"].get(a->ty) == simdjson::SUCCESS) a->types = &a->ty;
  if (o["strides"].get(a->st) == simdjson::SUCCESS) a->strides = &a->st;
}

// Attributes that live in Node fields. False when `key` is not one.
bool NodeReader::known(std::string_view key, const Elem& v, Node* n) {
  if (key == "rf_id") {
    n->rf_id = uintField(key, v);
  } else if (key == "fw_parent") {
    n->fw_parent = uintField(key, v);
  } else if (key == "seq_id") {
    n->seq_id = static_cast<int64_t>(uintField(key, v));
  } else if (key == "scope") {
    n->scope = static_cast<uint32_t>(uintField(key, v));
  } else if (key == "tid") {
    n->tid = uintField(key, v);
  } else if (key == "fw_tid") {
    n->fw_tid = uintField(key, v);
  } else if (key == "op_schema") {
    if (!v.is_string()) ETB_INPUT_ERROR(loc(), "\"op_schema\" is not a string");
    n->op_schema = sink_.str(v.get_string().value_unsafe());
  } else {
    return false;
  }
  return true;
}

void NodeReader::attrs(Elem v, Node* n) {
  if (!v.is_array()) ETB_INPUT_ERROR(loc(), "\"attrs\" is not an array");
  const dom::array list = v.get_array().value_unsafe();
  for (Elem a : list) {
    std::string_view name, type;
    Elem value;
    if (!a.is_object() || a["name"].get(name) != simdjson::SUCCESS ||
        a["value"].get(value) != simdjson::SUCCESS) {
      ETB_INPUT_ERROR(loc(), "an attr is not {\"name\", \"type\", \"value\"}");
    }
    if (known(name, value, n)) continue;
    if (a["type"].get(type) != simdjson::SUCCESS) type = {};
    Attr out;
    out.name = sink_.str(name);
    out.type = sink_.str(type);
    out.value = dec_.decodeAttrValue(value, out.type);
    n->attrs.push_back(std::move(out));
  }
}

}  // namespace etb::trace::detail
