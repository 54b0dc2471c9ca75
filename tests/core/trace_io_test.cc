// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/trace_io.h"
#include "tests/test_util.h"

namespace etb::trace {
namespace {

TEST(TraceIo, DetectsKindsByContent) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  EXPECT_EQ(detectFileKind(dir + "/param/linear_et.json.gz"), FileKind::kPyTorchEt);
  EXPECT_EQ(detectFileKind(dir + "/param/pt2_et.json"), FileKind::kPyTorchEt);
  EXPECT_EQ(detectFileKind(dir + "/param/linear_kineto.json.gz"), FileKind::kKineto);
  EXPECT_EQ(detectFileKind(dir + "/chakra/at-bb67f055/chakra.0.et"), FileKind::kChakra);
  const Trace t = readTrace(dir + "/hta/benchmark_simple_add_et.json.gz");
  EXPECT_EQ(t.format, SourceFormat::kPyTorchEtJson);
  EXPECT_EQ(t.nodes.size(), 38u);
  EXPECT_THROW(readTrace(dir + "/param/linear_kineto.json.gz"), InputError);
}

// The sets PARAM and ASTRA-sim ship as tarballs, gzipped or not: refused
// naming the file, what it is and its first member (from tar's own listing).
TEST(TraceIo, ATarArchiveIsRefusedNamingItsFirstMember) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  for (const std::string name : {"/param/dlrm_pytorch_et.tar.gz", "/astra-sim/at-bd321122/resnet_dp.tar"}) {
    const std::string path = dir + name;
    const std::string list = test::makeTempDir("trace_io_tar") + "/list.txt";
    ASSERT_EQ(std::system(("tar tf '" + path + "' 2>/dev/null | head -1 > '" + list + "'").c_str()), 0);
    std::string first;
    std::getline(std::ifstream(list), first);
    ASSERT_FALSE(first.empty()) << name;
    try {
      readTrace(path);
      ADD_FAILURE() << name << " was read";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find("a tar archive (first member " + first + ")"), std::string::npos) << what;
    }
  }
}

TEST(TraceIo, WriteByExtension) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const Trace t = readTrace(dir + "/param/pt2_et.json");
  const std::string out = test::makeTempDir("trace_io");
  writeTrace(t, out + "/x.json.gz");
  EXPECT_EQ(detectFileKind(out + "/x.json.gz"), FileKind::kPyTorchEt);
  EXPECT_EQ(readTrace(out + "/x.json.gz").nodes.size(), t.nodes.size());
  EXPECT_THROW(writeTrace(t, out + "/x.txt"), InputError);
}

// The one rank substitution every tool's per-rank inputs and outputs use.
// Planted faults: every %d replaced, the pattern without %d mangled (the
// npos + 2 suffix), the rank inserted before %d instead of for it.
TEST(TraceIo, RankFileReplacesTheFirstPercentD) {
  EXPECT_EQ(rankFile("k_%d.json.gz", 3), "k_3.json.gz");
  EXPECT_EQ(rankFile("%d/out.%d.et", 12), "12/out.%d.et");
  EXPECT_EQ(rankFile("plain.json", 5), "plain.json");
  EXPECT_EQ(rankFile("", 0), "");
}

TEST(TraceIo, ExpandsRankPaths) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const std::string tmp = test::makeTempDir("ranks");
  const std::string src = dir + "/param/pt2_et.json";
  for (int r : {0, 1, 2, 10}) {
    std::filesystem::copy_file(src, tmp + "/bench.rank" + std::to_string(r) + ".json");
  }
  std::ofstream(tmp + "/notes.txt") << "not a trace";
  const auto pat = expandRankPaths(tmp + "/bench.rank%d.json");
  ASSERT_EQ(pat.size(), 3u);  // stops at the first missing rank (3)
  EXPECT_EQ(pat[2], tmp + "/bench.rank2.json");
  const auto folder = expandRankPaths(tmp);
  ASSERT_EQ(folder.size(), 4u);  // rank order, not name order: 10 comes last
  EXPECT_EQ(folder[3], tmp + "/bench.rank10.json");
  EXPECT_EQ(folder[1], tmp + "/bench.rank1.json");
  EXPECT_EQ(expandRankPaths(src), std::vector<std::string>{src});
  EXPECT_THROW(expandRankPaths(tmp + "/missing%d.json"), InputError);
}

// A recorder writes sidecars beside each rank's ET: metrics.json, whose
// top-level "schema" is "etbench.metrics/1", and meta.json, which names
// "nodes" and "schema" inside its own fields. A folder of one run lists the
// ETs only, in rank order (`mpirun -np 2 et_replay run/`). Planted faults:
// any "schema" or "nodes" in the head taken for an ET (the folder lists
// five), a top-level key missed after a nested object, sorted keys refused.
TEST(TraceIo, AFolderOfOneRunListsItsTracesNotTheRecordersSidecars) {
  const std::string tmp = test::makeTempDir("sidecars");
  const std::string et = R"({"schema": "1.0.1", "pid": 7, "time": "x", "start_ts": 1, "nodes": []})";
  for (int r : {0, 1}) {
    const std::string stem = tmp + "/run.rank" + std::to_string(r);
    std::ofstream(stem + ".et.json") << et;
    std::ofstream(stem + ".metrics.json") << R"({"schema": "etbench.metrics/1", "window": "steps"})";
  }
  std::ofstream(tmp + "/run.meta.json")
      << R"({"name": "run", "ranks": [{"rank": 0, "nodes": 3, "et": {"schema": "1.0.1"}}]})";
  const auto files = expandRankPaths(tmp);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0], tmp + "/run.rank0.et.json");
  EXPECT_EQ(files[1], tmp + "/run.rank1.et.json");
  EXPECT_EQ(detectFileKind(tmp + "/run.meta.json"), FileKind::kUnknown);
  EXPECT_EQ(detectFileKind(tmp + "/run.rank0.metrics.json"), FileKind::kUnknown);

  // An ET written again with sorted keys: "nodes" before "schema", after an
  // object that holds keys of its own.
  std::ofstream(tmp + "/sorted.json")
      << R"({"attrs": {"schema": "x", "nodes": 1}, "finished_ts": 9, "nodes": [{"id": 1}], "schema": "1.1.1"})";
  EXPECT_EQ(detectFileKind(tmp + "/sorted.json"), FileKind::kPyTorchEt);
  std::ofstream(tmp + "/kineto.json") << R"({"schemaVersion": 1, "traceEvents": []})";
  EXPECT_EQ(detectFileKind(tmp + "/kineto.json"), FileKind::kKineto);
  // A quote escaped inside a string does not end it.
  std::ofstream(tmp + "/escaped.json") << R"({"note": "a \"nodes\": [ here", "x": 1})";
  EXPECT_EQ(detectFileKind(tmp + "/escaped.json"), FileKind::kUnknown);
}

}  // namespace
}  // namespace etb::trace
