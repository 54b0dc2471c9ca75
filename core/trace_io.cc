// SPDX-License-Identifier: MIT
#include "core/trace_io.h"

#include <simdjson.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/error.h"
#include "core/chakra/chakra_reader.h"
#include "core/chakra/chakra_writer.h"
#include "core/pytorch_et/et_json_reader.h"
#include "core/pytorch_et/et_json_writer.h"
#include "core/base/file_io.h"

namespace etb::trace {
namespace {
namespace fs = std::filesystem;

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The first bytes of a file after gunzip (gzread passes plain files through).
std::string readPrefix(const std::string& path, size_t max) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  std::string out(max, '\0');
  const int n = gzread(f, out.data(), static_cast<unsigned>(max));
  gzclose(f);
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

size_t skipSpace(std::string_view s, size_t i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

// The keys of the top-level object that starts at head[open] ('{'), as far
// as `head` (a file's first bytes) holds them, each with the rest of the
// text from its value on. Keys of nested objects are not among them: a
// recorder's meta.json names "nodes" and "schema" inside its own fields.
std::vector<std::pair<std::string_view, std::string_view>> topLevelKeys(std::string_view head,
                                                                        size_t open) {
  std::vector<std::pair<std::string_view, std::string_view>> keys;
  int depth = 0;
  for (size_t i = open; i < head.size(); ++i) {
    const char c = head[i];
    if (c == '"') {
      const size_t start = i + 1;
      for (i = start; i < head.size() && head[i] != '"'; i += head[i] == '\\' ? 2 : 1) {
      }
      if (i >= head.size()) break;
      const size_t colon = skipSpace(head, i + 1);
      if (depth == 1 && colon < head.size() && head[colon] == ':') {
        keys.emplace_back(head.substr(start, i - start), head.substr(skipSpace(head, colon + 1)));
      }
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      break;
    }
  }
  return keys;
}

FileKind sniff(std::string_view head) {
  size_t i = 0;
  if (head.substr(0, 3) == "\xEF\xBB\xBF") i = 3;  // UTF-8 BOM
  i = skipSpace(head, i);
  if (i < head.size() && head[i] == '{') {
    // An ET: a top-level "nodes" array or a numbered "schema" ("1.0.1",
    // "1.1.1-chakra.0.0.4"; a metrics file's "etbench.metrics/1" is not).
    for (const auto& [key, value] : topLevelKeys(head, i)) {
      if (key == "nodes" && value.substr(0, 1) == "[") return FileKind::kPyTorchEt;
      if (key == "schema" && value.size() > 1 && value[0] == '"' &&
          std::isdigit(static_cast<unsigned char>(value[1]))) {
        return FileKind::kPyTorchEt;
      }
      if (key == "traceEvents" || key == "schemaVersion") return FileKind::kKineto;
    }
    return FileKind::kUnknown;
  }
  // Chakra: a varint32 length, then a GlobalMetadata message whose first
  // field is length-delimited ("version" or an attr: tag 0x0a or 0x12).
  uint64_t len = 0;
  size_t k = 0;
  for (int shift = 0; k < head.size() && shift < 35; shift += 7, ++k) {
    const auto b = static_cast<unsigned char>(head[k]);
    len |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      ++k;
      break;
    }
  }
  if (len == 0 || k >= head.size()) return FileKind::kUnknown;
  const auto tag = static_cast<unsigned char>(head[k]);
  if ((tag & 7) == 2 && (tag >> 3) >= 1 && (tag >> 3) <= 3) return FileKind::kChakra;
  return FileKind::kUnknown;
}

// The rank number in a file name: the last run of digits before the
// extensions ("rank-3.json" -> 3, "chakra_trace.1.et" -> 1); -1 when none.
long rankInName(const std::string& name) {
  std::string stem = name;
  for (std::string_view ext : {".gz", ".json", ".et", ".pb"}) {
    if (endsWith(stem, ext)) stem.resize(stem.size() - ext.size());
  }
  const size_t end = stem.find_last_of("0123456789");
  if (end == std::string::npos) return -1;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(stem[begin - 1]))) --begin;
  if (end - begin > 9) return -1;
  return std::stol(stem.substr(begin, end - begin + 1));
}

std::vector<std::string> rankFilesInDir(const std::string& dir) {
  std::vector<std::pair<long, std::string>> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.empty() || name[0] == '.') continue;
    const FileKind kind = detectFileKind(e.path().string());
    if (kind != FileKind::kPyTorchEt && kind != FileKind::kChakra) continue;
    found.emplace_back(rankInName(name), e.path().string());
  }
  // Files without a number go last, in name order.
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    const long ra = a.first < 0 ? LONG_MAX : a.first;
    const long rb = b.first < 0 ? LONG_MAX : b.first;
    return ra != rb ? ra < rb : a.second < b.second;
  });
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  if (out.empty()) ETB_INPUT_ERROR(SourceLoc{dir}, "no PyTorch ET or Chakra trace in this directory");
  return out;
}
}  // namespace

FileKind detectFileKind(const std::string& path) { return sniff(readPrefix(path, 65536)); }

Trace readTrace(const std::string& path, const ReadOptions& options) {
  // Sniff the start only: an ET is streamed, never held as a whole text.
  const std::string head = readPrefix(path, 65536);
  switch (sniff(head)) {
    case FileKind::kPyTorchEt:
      return readEtJson(path, options);
    case FileKind::kChakra:
      return readChakraBytes(readFileMaybeGzip(path), path, options);
    case FileKind::kKineto:
      ETB_INPUT_ERROR(SourceLoc{path}, "this is a Kineto/profiler trace, not an execution trace "
                                       "(pass it as the Kineto input instead)");
    case FileKind::kUnknown:
      break;
  }
  // Not recognisable from its start: a JSON document goes to the ET reader
  // for a precise error (it may be a damaged ET), anything else is unknown.
  // An empty head may be a file that cannot be opened or inflated: say why.
  if (head.empty() && !readFileMaybeGzip(path).empty()) return readEtJson(path, options);
  if (!head.empty() && (head[0] == '{' || head[0] == '[')) return readEtJson(path, options);
  // A tar archive (PARAM and ASTRA-sim ship their sets so): ustar's magic
  // sits at byte 257 of the first header, the member's name at byte 0.
  if (head.size() >= 263 && head.compare(257, 5, "ustar") == 0) {
    const std::string first = head.substr(0, std::min(head.find('\0'), size_t{100}));
    ETB_INPUT_ERROR(SourceLoc{path}, "a tar archive (first member ", first,
                    "), not a trace: extract it (tar xf) and pass a trace in it, a per-rank "
                    "pattern (NAME.%d.et) or its folder");
  }
  ETB_INPUT_ERROR(SourceLoc{path}, "neither a PyTorch ET JSON nor a Chakra .et file");
}

void writeTrace(const Trace& trace, const std::string& path) {
  if (endsWith(path, ".et") || endsWith(path, ".et.gz")) return writeChakra(trace, path);
  if (endsWith(path, ".json") || endsWith(path, ".json.gz")) return writeEtJson(trace, path);
  ETB_INPUT_ERROR(SourceLoc{path}, "cannot tell the output format: use .json(.gz) for PyTorch ET "
                                   "or .et(.gz) for Chakra");
}

std::vector<std::string> expandRankPaths(const std::string& pattern) {
  if (pattern.find("%d") != std::string::npos) {
    std::vector<std::string> out;
    for (int r = 0;; ++r) {
      std::string path = pattern;
      path.replace(path.find("%d"), 2, std::to_string(r));
      if (!fs::exists(path)) break;
      out.push_back(std::move(path));
    }
    if (out.empty()) ETB_INPUT_ERROR(SourceLoc{pattern}, "no file for rank 0 (pattern with %d)");
    return out;
  }
  if (fs::is_directory(pattern)) return rankFilesInDir(pattern);
  return {pattern};
}

}  // namespace etb::trace
