// SPDX-License-Identifier: MIT
#include "core/pytorch_et/et_json_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/pytorch_et/et_json_detail.h"
#include "core/pytorch_et/et_json_repair.h"
#include "core/pytorch_et/et_json_values.h"
#include "core/base/file_io.h"

namespace etb::trace {
namespace {
namespace dom = simdjson::dom;
using simdjson::dom::element_type;
using Elem = dom::element;

// Nodes parsed per DOM: bounds the parser's memory (about 14 bytes per
// input byte) while keeping per-parse overhead negligible.
constexpr size_t kChunkBytes = size_t{4} << 20;

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

// dom::array::size() saturates at 2^24 - 1; count past that by walking.
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

// "1.0.1", "1.1.1-chakra.0.0.4": the pytorch part must be 1.0.x or 1.1.x.
bool supportedSchema(std::string_view schema) {
  const std::string_view v = schema.substr(0, schema.find('-'));
  if (v.size() < 5 || (v.substr(0, 4) != "1.0." && v.substr(0, 4) != "1.1.")) return false;
  for (char c : v.substr(4)) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// One argument block: values plus the parallel shapes/types/strides.
struct Args {
  const Elem* values = nullptr;
  const Elem* shapes = nullptr;
  const Elem* types = nullptr;
  const Elem* strides = nullptr;
  Elem v, sh, ty, st;
};

class NodeReader {
 public:
  NodeReader(Trace& t, const std::string& file) : t_(t), file_(file), dec_(t, file) {}

  void read(Elem e, size_t index, Node* n) {
    loc_ = SourceLoc{file_};
    if (!e.is_object()) ETB_INPUT_ERROR(loc_, "node #", index, " is not a JSON object");
    dom::object o = e.get_object().value_unsafe();
    std::string_view name;
    if (o["name"].get(name) == simdjson::SUCCESS) loc_.node_name = std::string(name);
    Elem id;
    if (o["id"].get(id) != simdjson::SUCCESS) ETB_INPUT_ERROR(loc_, "node #", index, " has no \"id\"");
    if (!isInteger(id) || (id.type() == element_type::INT64 && id.get_int64().value_unsafe() < 0)) {
      ETB_INPUT_ERROR(loc_, "node #", index, ": \"id\" is not an unsigned integer");
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

 private:
  uint64_t uintField(std::string_view key, const Elem& v) {
    if (!isInteger(v)) ETB_INPUT_ERROR(loc_, "\"", key, "\" is not an integer");
    return asU64(v);
  }

  void field(std::string_view key, Elem v, Node* n, Args* in, Args* out) {
    if (key == "id") return;
    if (key == "name") {
      if (!v.is_string()) ETB_INPUT_ERROR(loc_, "\"name\" is not a string");
      n->name = t_.strings.intern(v.get_string().value_unsafe());
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
      a.name = t_.strings.intern(key);
      a.type = t_.strings.intern(kindTypeName(v));
      a.value = dec_.decodeAttrValue(v, a.type);
      n->attrs.push_back(std::move(a));
    }
  }

  // The 1.0.2+ {values, shapes, types, strides} object, or a flat values array.
  void argsBlock(std::string_view key, Elem v, Args* a) {
    if (v.is_array()) {
      a->v = v, a->values = &a->v;
      return;
    }
    if (!v.is_object()) ETB_INPUT_ERROR(loc_, "\"", key, "\" is neither an object nor an array");
    dom::object o = v.get_object().value_unsafe();
    if (o["values"].get(a->v) != simdjson::SUCCESS) ETB_INPUT_ERROR(loc_, "\"", key, "\" has no \"values\"");
    a->values = &a->v;
    if (o["shapes"].get(a->sh) == simdjson::SUCCESS) a->shapes = &a->sh;
    if (o["types"].get(a->ty) == simdjson::SUCCESS) a->types = &a->ty;
    if (o["strides"].get(a->st) == simdjson::SUCCESS) a->strides = &a->st;
  }

  // Attributes that live in Node fields. False when `key` is not one.
  bool known(std::string_view key, const Elem& v, Node* n) {
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
      if (!v.is_string()) ETB_INPUT_ERROR(loc_, "\"op_schema\" is not a string");
      n->op_schema = t_.strings.intern(v.get_string().value_unsafe());
    } else {
      return false;
    }
    return true;
  }

  void attrs(Elem v, Node* n) {
    if (!v.is_array()) ETB_INPUT_ERROR(loc_, "\"attrs\" is not an array");
    const dom::array list = v.get_array().value_unsafe();
    for (Elem a : list) {
      std::string_view name, type;
      Elem value;
      if (!a.is_object() || a["name"].get(name) != simdjson::SUCCESS ||
          a["value"].get(value) != simdjson::SUCCESS) {
        ETB_INPUT_ERROR(loc_, "an attr is not {\"name\", \"type\", \"value\"}");
      }
      if (known(name, value, n)) continue;
      if (a["type"].get(type) != simdjson::SUCCESS) type = {};
      Attr out;
      out.name = t_.strings.intern(name);
      out.type = t_.strings.intern(type);
      out.value = dec_.decodeAttrValue(value, out.type);
      n->attrs.push_back(std::move(out));
    }
  }

  Trace& t_;
  const std::string& file_;
  detail::ValueDecoder dec_;
  SourceLoc loc_;
};

// Parses `text`, running the repair pass when simdjson rejects it.
Elem parseDocument(dom::parser& parser, std::string& text, std::string& repaired, Trace& t,
                   const ReadOptions& options) {
  Elem root;
  const simdjson::error_code err = parser.parse(text.data(), text.size(), false).get(root);
  if (err == simdjson::SUCCESS) return root;
  SourceLoc loc{t.path};
  if (err == simdjson::CAPACITY || err == simdjson::MEMALLOC) {
    ETB_INPUT_ERROR(loc, "cannot parse: ", simdjson::error_message(err));
  }
  detail::JsonRepair r = detail::repairJson(text);
  loc.line = detail::lineAt(text, r.first_defect == std::string_view::npos ? text.size() : r.first_defect);
  if (options.strict || r.fixes.empty()) {
    ETB_INPUT_ERROR(loc, "invalid JSON (", simdjson::error_message(err), ")");
  }
  repaired = std::move(r.text);
  repaired.reserve(repaired.size() + simdjson::SIMDJSON_PADDING);
  if (parser.parse(repaired.data(), repaired.size(), false).get(root) != simdjson::SUCCESS) {
    ETB_INPUT_ERROR(loc, "invalid JSON that the repair pass could not fix (", simdjson::error_message(err), ")");
  }
  std::string what = "repaired JSON (first defect at line " + std::to_string(loc.line) + "): ";
  for (size_t i = 0; i < r.fixes.size(); ++i) what += (i ? ", " : "") + r.fixes[i];
  ETB_LOG(kWarn) << t.path << ": " << what;
  t.repairs.push_back(Repair{0, std::move(what)});
  return root;
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

// Node errors get the node's line so an editor can jump to it.
[[noreturn]] void rethrowWithLine(const InputError& e, std::string_view text) {
  SourceLoc loc = e.loc();
  const std::string prefix = formatLoc(loc);
  if (loc.line == 0 && loc.node_id != SourceLoc::kNoNode) loc.line = detail::lineOfNode(text, loc.node_id);
  std::string what = e.what();
  if (what.compare(0, prefix.size(), prefix) == 0) what.erase(0, prefix.size());
  throw InputError(std::move(loc), what);
}


// The old single-DOM read: the fallback for whatever the chunked read
// cannot vouch for (invalid JSON to repair, unusual top levels).
Trace readWhole(std::string& text, const std::string& name, const ReadOptions& options) {
  const size_t total = text.size();
  Trace t;
  t.path = name;
  t.format = SourceFormat::kPyTorchEtJson;
  dom::parser parser;
  std::string repaired;
  const Elem root = parseDocument(parser, text, repaired, t, options);
  const std::string_view doc = repaired.empty() ? std::string_view(text) : std::string_view(repaired);
  try {
    dom::array nodes = readHeader(root, t);
    const size_t count = countOf(nodes);
    t.nodes.resize(count);
    NodeReader reader(t, name);
    size_t i = 0;
    for (Elem e : nodes) {
      reader.read(e, i, &t.nodes[i]);
      ++i;
      if (options.progress && (i & 4095) == 0) options.progress(total / 10 + total * 9 / 10 * i / count, total);
    }
    t.finalize();
    detail::checkGraph(t, options);
    detail::classifyNodes(t, options);
  } catch (const InputError& e) {
    rethrowWithLine(e, doc);
  }
  return t;
}

// Parses chunk k of the nodes array in place: its separators become '[' and
// ']' for the parse and are put back before anything can throw.
bool parseChunk(dom::parser& parser, std::string& text, const detail::NodeSplit& split, size_t k,
                dom::array* out) {
  const size_t a = split.cuts[k], b = split.cuts[k + 1];
  const char first = text[a], last = text[b];
  text[a] = '[';
  text[b] = ']';
  Elem root;
  const simdjson::error_code err = parser.parse(text.data() + a, b - a + 1, false).get(root);
  text[a] = first;
  text[b] = last;
  if (err != simdjson::SUCCESS || !root.is_array()) return false;
  *out = root.get_array().value_unsafe();
  return countOf(*out) == split.counts[k];
}

// Everything but the nodes array, which becomes [].
bool parseHeader(dom::parser& parser, const std::string& text, const detail::NodeSplit& split, Elem* root) {
  std::string head;
  head.reserve(text.size() - (split.cuts.back() - split.cuts.front()) + simdjson::SIMDJSON_PADDING);
  head.append(text, 0, split.cuts.front());
  head += "[]";
  head.append(text, split.cuts.back() + 1, std::string::npos);
  return parser.parse(head.data(), head.size(), false).get(*root) == simdjson::SUCCESS;
}

// Header, then one chunk at a time through one parser, so the DOM never
// holds more than a chunk. Empty when some piece is not valid JSON: the
// whole-document path then repairs or rejects it exactly as it always has.
std::optional<Trace> readChunked(std::string& text, const std::string& name, const ReadOptions& options,
                                 const detail::NodeSplit& split) {
  const size_t total = text.size(), chunks = split.counts.size();
  Trace t;
  t.path = name;
  t.format = SourceFormat::kPyTorchEtJson;
  dom::parser parser;
  // A chunk sits one level shallower than in the document.
  if (parser.allocate(simdjson::dom::MINIMAL_DOCUMENT_CAPACITY, simdjson::DEFAULT_MAX_DEPTH - 1) !=
      simdjson::SUCCESS) {
    return std::nullopt;
  }
  size_t parsed = 0;  // chunks known to be valid JSON
  try {
    {
      dom::parser head_parser;
      Elem root;
      if (!parseHeader(head_parser, text, split, &root)) return std::nullopt;
      readHeader(root, t);
    }
    t.nodes.resize(split.count);
    NodeReader reader(t, name);
    size_t i = 0;
    for (size_t k = 0; k < chunks; ++k) {
      dom::array nodes;
      if (!parseChunk(parser, text, split, k, &nodes)) return std::nullopt;
      parsed = k + 1;
      for (Elem e : nodes) {
        reader.read(e, i, &t.nodes[i]);
        ++i;
        if (options.progress && (i & 4095) == 0) {
          options.progress(total / 10 + total * 9 / 10 * i / split.count, total);
        }
      }
    }
    t.finalize();
    detail::checkGraph(t, options);
    detail::classifyNodes(t, options);
  } catch (const InputError& e) {
    // The whole-document parse rejected bad JSON before any of these
    // checks, so this error stands only if the rest parses too.
    dom::array ignored;
    for (size_t k = parsed; k < chunks; ++k) {
      if (!parseChunk(parser, text, split, k, &ignored)) return std::nullopt;
    }
    rethrowWithLine(e, text);
  }
  return t;
}
}  // namespace

Trace readEtJson(const std::string& path, const ReadOptions& options) {
  return readEtJsonText(readFileMaybeGzip(path, simdjson::SIMDJSON_PADDING), path, options);
}

Trace readEtJsonText(std::string text, const std::string& name, const ReadOptions& options) {
  if (text.capacity() < text.size() + simdjson::SIMDJSON_PADDING) {
    text.reserve(text.size() + simdjson::SIMDJSON_PADDING);
  }
  const size_t total = text.size();
  if (options.progress) options.progress(0, total);
  // Small files still get a few chunks, so every test exercises the cuts.
  const size_t chunk_bytes = std::min<size_t>(std::max<size_t>(total / 64, 1), kChunkBytes);
  detail::NodeSplit split;
  if (detail::splitNodes(text, chunk_bytes, &split)) {
    std::optional<Trace> t = readChunked(text, name, options, split);
    if (t) {
      if (options.progress) options.progress(total, total);
      return std::move(*t);
    }
  }
  // Progress may already be past where the whole-document read restarts.
  size_t reported = 0;
  ReadOptions whole = options;
  if (options.progress) {
    whole.progress = [&](size_t done, size_t all) {
      reported = std::max(reported, done);
      options.progress(reported, all);
    };
  }
  Trace t = readWhole(text, name, whole);
  if (options.progress) options.progress(total, total);
  return t;
}

}  // namespace etb::trace
