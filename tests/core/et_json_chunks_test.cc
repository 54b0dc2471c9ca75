// SPDX-License-Identifier: MIT
//
// The ET JSON reader streams "nodes" in chunks and falls back to one DOM of
// the whole document for anything unusual. Each case here is read both ways
// (readEtJsonText, and the whole-document read alone) and must come out the
// same: equal traces, or the same error message.
#include <gtest/gtest.h>

#include <string>

#include "core/base/error.h"
#include "core/pytorch_et/et_json_reader.h"
#include "core/pytorch_et/et_json_stream.h"
#include "core/base/file_io.h"
#include "core/model/trace_compare.h"
#include "tests/test_util.h"

namespace etb::trace {
namespace {

// "ok" plus the trace, or the error text.
std::string outcome(const std::string& text, const std::string& name, bool whole, Trace* t) {
  try {
    *t = whole ? detail::readWhole(text, name, {}) : readEtJsonText(text, name);
    return "ok";
  } catch (const InputError& e) {
    return e.what();
  }
}

void expectSameBothWays(const std::string& text) {
  Trace chunked, whole;
  const std::string a = outcome(text, "doc", false, &chunked);
  const std::string b = outcome(text, "doc", true, &whole);
  EXPECT_EQ(a, b);
  if (a == "ok" && b == "ok") {
    EXPECT_EQ(chunked.nodes.size(), whole.nodes.size());
    EXPECT_EQ(diffTraces(chunked, whole), "");
    ASSERT_EQ(chunked.repairs.size(), whole.repairs.size());
    for (size_t i = 0; i < chunked.repairs.size(); ++i) EXPECT_EQ(chunked.repairs[i].what, whole.repairs[i].what);
  }
}

std::string node(uint64_t id, uint64_t parent, const std::string& extra = "") {
  return "{\"name\": \"n" + std::to_string(id) + "\", \"id\": " + std::to_string(id) +
         ", \"parent\": " + std::to_string(parent) + ", \"tid\": 1, \"op_schema\": \"\"" + extra +
         ", \"inputs\": [], \"input_shapes\": [], \"input_types\": [], \"outputs\": [], "
         "\"output_shapes\": [], \"output_types\": []}";
}

std::string doc(const std::string& nodes) {
  return "{\"schema\": \"1.0.1\", \"pid\": 7, \"time\": \"t\", \"start_ts\": 1, \"nodes\": [" + nodes +
         "], \"finish_ts\": 2}";
}

// Enough nodes that the array is cut into many chunks.
std::string many(size_t n, const std::string& extra_at_3 = "") {
  std::string out = node(1, 1) + ",\n" + node(2, 1);
  for (uint64_t id = 3; id < n; ++id) out += ",\n" + node(id, 2, id == 3 ? extra_at_3 : "");
  return out;
}

TEST(EtJsonChunks, PublicTracesReadTheSameBothWays) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  for (const char* f : {"/param/linear_et.json.gz", "/param/1.1.0-chakra.0.0.4/resnet_2gpu_et.json.gz",
                        "/param/pt2_et.json", "/hta/benchmark_simple_add_et.json.gz"}) {
    SCOPED_TRACE(f);
    expectSameBothWays(readFileMaybeGzip(dir + f));
  }
}

TEST(EtJsonChunks, OddArraysReadTheSameBothWays) {
  for (const std::string& nodes :
       {std::string(""), std::string("  \n "), many(200), many(200) + ",", many(200) + ",,", "," + many(200),
        many(200) + " x", many(200) + "]", many(200) + ", {\"id\": 9", many(200) + ", []", many(300) + ",\n1",
        many(200, ", \"bad\": \"a\tb\""), many(200, ", \"ctrl_deps\": \"x\"")}) {
    SCOPED_TRACE(nodes.substr(0, 40));
    expectSameBothWays(doc(nodes));
  }
}

TEST(EtJsonChunks, NodeErrorBeforeBadJsonLaterReportsLikeTheWholeRead) {
  // Node 3 has no valid parent; a repairable defect sits far after it.
  std::string bad = many(400, ", \"ctrl_deps\": \"x\"");
  bad.insert(bad.size() - 10, "\t");
  expectSameBothWays(doc(bad));
  std::string repairable = many(400);
  repairable.insert(repairable.size() - 200, ",");
  expectSameBothWays(doc(repairable));
}

TEST(EtJsonChunks, OddTopLevelsReadTheSameBothWays) {
  const std::string nodes = many(50);
  for (const std::string& text :
       {"{\"nodes\": [" + nodes + "], \"schema\": \"1.0.1\"}", std::string("{\"schema\": \"1.0.1\", \"nodes\": {}}"),
        "{\"schema\": \"1.0.1\", \"nodes\": [" + nodes + "], \"nodes\": []}",
        "{\"schema\": \"1.0.1\", \"x\": [1, {\"a\": \"}\"}], \"nodes\": [" + nodes + "]} ",
        "{\"schema\": \"2.0.0\", \"nodes\": [" + nodes + "]}", "{\"schema\": \"1.0.1\", \"nodes\": [" + nodes,
        "{\"schema\": \"1.0.1\", \"nodes\": [" + nodes + "]} {}",
        "{\"schema\": \"1.0.1\", \"node\\u0073\": [" + nodes + "]}",
        "{\"schema\": \"1.0.1\", \"nodes\": [" + nodes + "], \"x\": {\"nodes\": [1]}}"}) {
    SCOPED_TRACE(text.substr(0, 60));
    expectSameBothWays(text);
  }
}

}  // namespace
}  // namespace etb::trace
