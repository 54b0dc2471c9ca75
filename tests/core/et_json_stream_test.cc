// SPDX-License-Identifier: MIT
//
// The streamed, threaded ET JSON read against the whole-document read (one
// simdjson DOM, one thread) and against nlohmann's node counts: node for
// node on every public trace, with any number of threads, with chunks and
// read blocks small enough that cuts and block edges fall inside strings
// and escapes; the 64-byte scanner against its byte-by-byte twin; gzip
// streamed like plain text.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#if defined(__GLIBC__)
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>
#endif
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/model/trace_compare.h"
#include "core/pytorch_et/et_json_detail.h"
#include "core/pytorch_et/et_json_reader.h"
#include "core/pytorch_et/et_json_stream.h"
#include "tests/test_util.h"

namespace etb::trace {
namespace {

std::vector<std::string> publicEts(const std::string& dir) {
  std::vector<std::string> out = {dir + "/param/linear_et.json.gz", dir + "/param/resnet_et.json.gz",
                                  dir + "/param/1.1.0-chakra.0.0.4/resnet_2gpu_et.json.gz",
                                  dir + "/param/at-fe2a39d0/resnet_et.json.gz", dir + "/param/pt2_et.json",
                                  dir + "/hta/benchmark_simple_add_et.json.gz"};
  for (const std::string& f : test::extractArchive(dir + "/param/dlrm_pytorch_et.tar.gz")) {
    const std::string base = f.substr(f.find_last_of('/') + 1);
    if (base.rfind("._", 0) != 0 && base.find(".json") != std::string::npos) out.push_back(f);
  }
  return out;
}

// The streamed read alone (no fallback), over text handed out in blocks.
std::optional<Trace> streamed(const std::string& text, const detail::StreamParams& p) {
  size_t pos = 0;
  detail::ByteSource src;
  src.read = [&](char* out, size_t max) {
    const size_t n = std::min(max, text.size() - pos);
    std::copy(text.data() + pos, text.data() + pos + n, out);
    pos += n;
    return n;
  };
  src.done = [&] { return static_cast<uint64_t>(pos); };
  src.total = text.size();
  return detail::readStreamed(src, "doc", {}, p);
}

detail::StreamParams params(size_t chunk, size_t block, unsigned threads, bool simd = true) {
  detail::StreamParams p;
  p.chunk_bytes = chunk;
  p.block_bytes = block;
  p.threads = threads;
  p.simd = simd;
  return p;
}

void expectSameAsWhole(const std::string& text, const detail::StreamParams& p) {
  SCOPED_TRACE("chunk " + std::to_string(p.chunk_bytes) + " block " + std::to_string(p.block_bytes) +
               " threads " + std::to_string(p.threads) + (p.simd ? "" : " bytewise"));
  const std::optional<Trace> s = streamed(text, p);
  ASSERT_TRUE(s.has_value()) << "the streamed read gave up on a valid trace";
  const Trace w = detail::readWhole(text, "doc", {});
  EXPECT_EQ(s->nodes.size(), nlohmann::json::parse(text).at("nodes").size());
  EXPECT_EQ(s->nodes.size(), w.nodes.size());
  EXPECT_EQ(s->tensors.size(), w.tensors.size());
  EXPECT_EQ(diffTraces(*s, w), "");
  EXPECT_EQ(s->schema, w.schema);
  EXPECT_EQ(s->repairs.size(), w.repairs.size());
}

TEST(EtJsonStream, PublicTracesNodeForNodeWithAnyThreadCount) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  for (const std::string& f : publicEts(dir)) {
    SCOPED_TRACE(f);
    const std::string text = readFileMaybeGzip(f);
    const size_t chunk = std::max<size_t>(text.size() / 50, 1);
    for (unsigned threads : {1u, 2u, 5u}) expectSameAsWhole(text, params(chunk, 4096, threads));
    expectSameAsWhole(text, params(chunk, 1000, 2, false));
  }
}

TEST(EtJsonStream, ReadEtJsonOnFilesMatchesTheWholeRead) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  for (const std::string& f : publicEts(dir)) {
    SCOPED_TRACE(f);
    ReadOptions o;
    o.threads = 2;
    const Trace s = readEtJson(f, o);
    const Trace w = detail::readWhole(readFileMaybeGzip(f), f, {});
    EXPECT_EQ(diffTraces(s, w), "");
    EXPECT_EQ(s.nodes.size(), w.nodes.size());
  }
}

// Names full of what the scanner must not take for structure: brackets,
// commas, escaped quotes and backslashes, \u escapes, multi-byte UTF-8.
std::string trickyDoc(size_t n) {
  const std::vector<std::string> names = {
      "a,b", "[x]", "{y}", "q\\\"]},{\\\"", "back\\\\", "\\\\\\\"", "\\u005b\\u007d,", "caf\xc3\xa9 [,]", "\\\\"};
  std::string nodes;
  for (size_t id = 1; id <= n; ++id) {
    if (id > 1) nodes += id % 3 == 0 ? ",\n" : ",";
    nodes += "{\"id\": " + std::to_string(id) + ", \"name\": \"" + names[id % names.size()] +
             "\", \"ctrl_deps\": " + std::to_string(id == 1 ? 0 : 1) +
             ", \"inputs\": {\"values\": [[" + std::to_string(id) + ", 1, 0, 4, 4, \"cpu\"], \"s,]\", 3],"
             " \"shapes\": [[2, 2], [], []], \"types\": [\"Tensor(float)\", \"String\", \"Int\"]},"
             " \"outputs\": {\"values\": [], \"shapes\": [], \"types\": []},"
             " \"attrs\": [{\"name\": \"rf_id\", \"type\": \"uint64\", \"value\": " + std::to_string(id) + "},"
             " {\"name\": \"note\", \"type\": \"string\", \"value\": \"}]\\\\\\\"\"}]}";
  }
  return "{\"schema\": \"1.1.1-chakra.0.0.4\", \"pid\": 1, \"nodes\": [" + nodes + "], \"finish_ts\": 9}";
}

TEST(EtJsonStream, CutsAndBlockEdgesInsideStringsAndEscapes) {
  const std::string text = trickyDoc(120);
  // Every block size below 130 bytes, so block edges land on every byte of a
  // node, escapes split included; chunk 1 cuts at every node.
  for (size_t block = 1; block < 130; block += 1) {
    expectSameAsWhole(text, params(1, block, 2));
    if (HasFatalFailure()) return;
  }
  for (size_t chunk : {size_t{1}, size_t{100}, size_t{5000}, size_t{1} << 20}) {
    expectSameAsWhole(text, params(chunk, 64, 3));
    expectSameAsWhole(text, params(chunk, 77, 1, false));
  }
}

// Every event of a scan, for comparing the SIMD and byte-by-byte paths.
std::vector<std::pair<int, size_t>> scanEvents(const std::string& text, size_t chunk, bool simd) {
  detail::NodeScanner scan;
  std::vector<std::pair<int, size_t>> events;
  size_t at = 0;
  if (scan.scanHead(text.data(), 0, text.size(), &at) != detail::NodeScanner::Event::kNodesStart) return events;
  events.emplace_back(0, at);
  size_t from = at + 1, chunk_start = at;
  for (;;) {
    const auto ev = scan.scanNodes(text.data(), from, text.size(), chunk_start + chunk, true, &at, simd);
    events.emplace_back(static_cast<int>(ev), at);
    if (ev != detail::NodeScanner::Event::kCut) break;
    from = at + 1;
    chunk_start = at;
  }
  return events;
}

TEST(EtJsonStream, SimdScanCutsWhereTheByteScanDoes) {
  std::vector<std::string> texts = {trickyDoc(300)};
  const std::string dir = test::sharedTracesDir();
  if (!dir.empty()) texts.push_back(readFileMaybeGzip(dir + "/param/1.1.0-chakra.0.0.4/resnet_2gpu_et.json.gz"));
  for (const std::string& text : texts) {
    const size_t nodes = nlohmann::json::parse(text).at("nodes").size();
    for (size_t chunk : {size_t{1}, size_t{333}, size_t{65536}}) {
      const auto simd = scanEvents(text, chunk, true);
      EXPECT_EQ(simd, scanEvents(text, chunk, false));
      ASSERT_GE(simd.size(), 2u);
      EXPECT_EQ(simd.back().first, static_cast<int>(detail::NodeScanner::Event::kNodesEnd));
      // Independently: the pieces between cuts are arrays whose element
      // counts add up to the document's.
      size_t total = 0;
      for (size_t k = 0; k + 1 < simd.size(); ++k) {
        std::string piece = text.substr(simd[k].second, simd[k + 1].second - simd[k].second + 1);
        piece.front() = '[';
        piece.back() = ']';
        const auto arr = nlohmann::json::parse(piece);
        ASSERT_TRUE(arr.is_array());
        EXPECT_GE(arr.size(), 1u);
        total += arr.size();
      }
      EXPECT_EQ(total, nodes);
    }
  }
}

TEST(EtJsonStream, GzipIsInflatedOnTheWay) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const std::string text = readFileMaybeGzip(dir + "/param/1.1.0-chakra.0.0.4/resnet_2gpu_et.json.gz");
  const std::string tmp = test::makeTempDir("stream");
  writeFileMaybeGzip(tmp + "/t.json", text);
  writeFileMaybeGzip(tmp + "/t.json.gz", text);
  const Trace plain = readEtJson(tmp + "/t.json");
  EXPECT_EQ(diffTraces(readEtJson(tmp + "/t.json.gz"), plain), "");
  // Two gzip members one after the other inflate to their concatenation.
  const size_t half = text.find("},", text.size() / 2) + 2;
  writeFileMaybeGzip(tmp + "/a.gz", text.substr(0, half));
  writeFileMaybeGzip(tmp + "/b.gz", text.substr(half));
  std::string raw_a, raw_b;  // the members as bytes on disk
  for (auto [path, out] : {std::pair{tmp + "/a.gz", &raw_a}, std::pair{tmp + "/b.gz", &raw_b}}) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    char buf[65536];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out->append(buf, n);
    std::fclose(f);
  }
  {
    std::FILE* f = std::fopen((tmp + "/two.json.gz").c_str(), "wb");
    std::fwrite(raw_a.data(), 1, raw_a.size(), f);
    std::fwrite(raw_b.data(), 1, raw_b.size(), f);
    std::fclose(f);
    std::FILE* g = std::fopen((tmp + "/cut.json.gz").c_str(), "wb");
    std::fwrite(raw_a.data(), 1, raw_a.size() / 2, g);
    std::fclose(g);
  }
  EXPECT_EQ(diffTraces(readEtJson(tmp + "/two.json.gz"), plain), "");
  try {
    readEtJson(tmp + "/cut.json.gz");
    ADD_FAILURE() << "a truncated gzip stream was read";
  } catch (const InputError& e) {
    EXPECT_EQ(e.loc().file, tmp + "/cut.json.gz");
    EXPECT_NE(std::string(e.what()).find("truncated gzip"), std::string::npos) << e.what();
  }
}

TEST(EtJsonStream, ProgressOnAFileIsMonotoneAndEndsAtTheSize) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const std::string f = dir + "/param/1.1.0-chakra.0.0.4/resnet_2gpu_et.json.gz";
  size_t last = 0, total = 0, calls = 0;
  ReadOptions o;
  o.progress = [&](size_t done, size_t all) {
    EXPECT_GE(done, last);
    last = done;
    total = all;
    ++calls;
  };
  readEtJson(f, o);
  EXPECT_GE(calls, 3u);
  EXPECT_EQ(last, total);
  EXPECT_EQ(total, FileReader(f).fileBytes());
}

#if defined(__GLIBC__)
// glibc's report of the main arena (the calling thread's heap): its chunks
// by size, free totals and the memory it holds from the system.
std::string mainArena() {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  malloc_info(0, f);
  std::fclose(f);
  const std::string all(buf, len);
  std::free(buf);
  const size_t from = all.find("<heap nr=\"0\">");
  return from == std::string::npos ? all : all.substr(from, all.find("</heap>", from) - from);
}

// et_replay's page faults follow the heap its process built before the
// first op (glibc trims and maps by what is free where): a threaded read
// must leave the caller's heap the same in every run. With the producer on
// the calling thread, workers freed its text buffers and queue blocks
// whenever they were done, and a replay took 0 to 18k faults per iteration
// from one run to the next. Each run here is a child forked from the same
// heap, which reads and reports its main arena.
TEST(EtJsonStream, TheCallersHeapIsTheSameInEveryRun) {
  const std::string text = trickyDoc(3000);
  constexpr int kRuns = 8;
  // Where the children's reports land, allocated before the first fork: the
  // parent's heap is then the same at every fork.
  std::vector<std::vector<char>> reports(kRuns, std::vector<char>(1 << 16));
  std::vector<size_t> lengths(kRuns, 0);
  for (int run = 0; run < kRuns; ++run) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(fds[0]);
      const bool ok = streamed(text, params(text.size() / 60, 4096, 4)).has_value();
      const std::string arena = ok ? mainArena() : "the read failed";
      const bool written = write(fds[1], arena.data(), arena.size()) == static_cast<ssize_t>(arena.size());
      _exit(written ? 0 : 1);
    }
    close(fds[1]);
    std::vector<char>& out = reports[static_cast<size_t>(run)];
    size_t& len = lengths[static_cast<size_t>(run)];
    for (ssize_t n; (n = read(fds[0], out.data() + len, out.size() - len)) > 0;) len += static_cast<size_t>(n);
    close(fds[0]);
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  const std::string first(reports[0].data(), lengths[0]);
  EXPECT_NE(first.find("<heap nr=\"0\">"), std::string::npos) << first;
  for (size_t i = 1; i < reports.size(); ++i) {
    EXPECT_EQ(std::string(reports[i].data(), lengths[i]), first) << "run " << i;
  }
}
#endif

}  // namespace
}  // namespace etb::trace
