// SPDX-License-Identifier: MIT
//
// Entry points of the ET JSON reader: the streamed read first (threads,
// chunks, no copy of the text), and for whatever it cannot vouch for the
// whole-document read, which repairs malformed JSON and reports node errors
// with their line.
#include "core/pytorch_et/et_json_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/log.h"
#include "core/pytorch_et/et_json_detail.h"
#include "core/pytorch_et/et_json_node.h"
#include "core/pytorch_et/et_json_repair.h"
#include "core/pytorch_et/et_json_stream.h"

namespace etb::trace {
namespace {
namespace dom = simdjson::dom;
using Elem = dom::element;

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

// Node errors get the node's line so an editor can jump to it.
[[noreturn]] void rethrowWithLine(const InputError& e, std::string_view text) {
  SourceLoc loc = e.loc();
  const std::string prefix = formatLoc(loc);
  if (loc.line == 0 && loc.node_id != SourceLoc::kNoNode) loc.line = detail::lineOfNode(text, loc.node_id);
  std::string what = e.what();
  if (what.compare(0, prefix.size(), prefix) == 0) what.erase(0, prefix.size());
  throw InputError(std::move(loc), what);
}


// The single-DOM read: the fallback for whatever the streamed read cannot
// vouch for (invalid JSON to repair, unusual top levels, node errors).
Trace wholeDocument(std::string& text, const std::string& name, const ReadOptions& options) {
  const size_t total = text.size();
  Trace t;
  t.path = name;
  t.format = SourceFormat::kPyTorchEtJson;
  dom::parser parser;
  std::string repaired;
  const Elem root = parseDocument(parser, text, repaired, t, options);
  const std::string_view doc = repaired.empty() ? std::string_view(text) : std::string_view(repaired);
  try {
    dom::array nodes = detail::readHeader(root, t);
    const size_t count = detail::countOf(nodes);
    t.nodes.resize(count);
    detail::NodeSink sink(t);
    detail::NodeReader reader(sink, name);
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

// Progress may already be past where the whole-document read restarts.
Trace wholeAfterStream(std::string text, const std::string& name, const ReadOptions& options) {
  size_t reported = 0;
  ReadOptions whole = options;
  if (options.progress) {
    whole.progress = [&](size_t done, size_t all) {
      reported = std::max(reported, done);
      options.progress(reported, all);
    };
  }
  return detail::readWhole(std::move(text), name, whole);
}
}  // namespace

namespace detail {
Trace readWhole(std::string text, const std::string& name, const ReadOptions& options) {
  if (text.capacity() < text.size() + simdjson::SIMDJSON_PADDING) {
    text.reserve(text.size() + simdjson::SIMDJSON_PADDING);
  }
  const size_t total = text.size();
  if (options.progress) options.progress(0, total);
  Trace t = wholeDocument(text, name, options);
  if (options.progress) options.progress(total, total);
  return t;
}
}  // namespace detail

Trace readEtJson(const std::string& path, const ReadOptions& options) {
  {
    FileReader file(path);
    detail::ByteSource src;
    src.read = [&](char* out, size_t max) { return file.read(out, max); };
    src.done = [&] { return file.consumedBytes(); };
    src.total = file.fileBytes();
    if (options.progress) options.progress(0, src.total);
    std::optional<Trace> t = detail::readStreamed(src, path, options, detail::streamParamsFor(src.total, options));
    if (t) {
      if (options.progress) options.progress(src.total, src.total);
      return std::move(*t);
    }
  }
  return wholeAfterStream(readFileMaybeGzip(path, simdjson::SIMDJSON_PADDING), path, options);
}

Trace readEtJsonText(std::string text, const std::string& name, const ReadOptions& options) {
  size_t pos = 0;
  detail::ByteSource src;
  src.read = [&](char* out, size_t max) {
    const size_t n = std::min(max, text.size() - pos);
    std::memcpy(out, text.data() + pos, n);
    pos += n;
    return n;
  };
  src.done = [&] { return static_cast<uint64_t>(pos); };
  src.total = text.size();
  if (options.progress) options.progress(0, src.total);
  std::optional<Trace> t = detail::readStreamed(src, name, options, detail::streamParamsFor(src.total, options));
  if (t) {
    if (options.progress) options.progress(src.total, src.total);
    return std::move(*t);
  }
  return wholeAfterStream(std::move(text), name, options);
}

}  // namespace etb::trace
