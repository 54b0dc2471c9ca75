// SPDX-License-Identifier: MIT
//
// Acceptance: every single-rank PyTorch ET among the public traces and the
// fleet samples replays on CPU, covers >= 99% of its selected operators (or,
// for the few that cannot, at least the replayed-op count measured when the
// floor was set, with the reason named), and every replayed op's outputs
// have the recorded shapes, dtypes and strides.
#include <gtest/gtest.h>

#include <iostream>

#include "core/trace_io.h"
#include "replayer/replayer.h"
#include "tests/test_util.h"

namespace etb::replay {
namespace {

std::vector<std::string> pytorchEts(const std::vector<std::string>& files) {
  std::vector<std::string> out;
  for (const std::string& f : files) {
    if (f.find("/._") != std::string::npos) continue;  // macOS resource forks
    if (trace::detectFileKind(f) == trace::FileKind::kPyTorchEt) out.push_back(f);
  }
  return out;
}

// Replays one trace; returns its coverage and checks honest semantics.
Coverage replayAndCheck(const std::string& path) {
  trace::Trace t = trace::readTrace(path);
  ReplayOptions o;
  o.device = "cpu";
  o.warmup = 0;
  o.iters = 1;
  o.verify_outputs = true;
  ReplayDiagnostics diag;
  auto comm = makeLocalCommunicator();
  const ReplayResult r = replayTrace(t, o, *comm, &diag);
  EXPECT_GT(diag.outputs_checked, 0u) << path;
  EXPECT_TRUE(diag.output_mismatches.empty())
      << path << ": " << diag.output_mismatches.size() << " mismatches, first: "
      << diag.output_mismatches[0];
  std::cout << "  " << path << ": " << r.coverage.replayed << "/" << r.coverage.operators
            << " replayed\n";
  for (const auto& [reason, n] : r.coverage.skipped_by_reason) {
    std::cout << "    skipped " << n << ": " << reason << "\n";
  }
  return r.coverage;
}

double ratio(const Coverage& c) {
  return c.operators ? static_cast<double>(c.replayed) / static_cast<double>(c.operators) : 0;
}

// Traces below 99% for a known reason. The floor is the replayed-op count
// measured on CPU when it was set (minus nothing): a replay that loses one
// more op fails, one that gains is welcome (raise the floor then).
struct Shortfall {
  const char* path_part;
  uint64_t operators;  // selected operators, as measured
  uint64_t replayed;   // floor
  const char* reason;
};
const Shortfall kShortfalls[] = {
    // PARAM DLRM rank 0: 7 fbgemm ops (not in libtorch), 14 take a CUDA
    // Stream argument (opaque in the trace).
    {"dlrm_eg_0", 637, 616, "fbgemm ops not in libtorch; CUDA Stream arguments"},
    // The PT2 sample: one Triton kernel beside one aten op.
    {"pt2_et", 2, 1, "Triton kernel needs the Inductor runtime"},
    // PARAM resnet (at-fe2a39d0): two ops take an opaque Storage argument.
    {"at-fe2a39d0", 249, 247, "opaque Storage arguments"},
};

const Shortfall* shortfallOf(const std::string& path) {
  for (const Shortfall& s : kShortfalls) {
    if (path.find(s.path_part) != std::string::npos) return &s;
  }
  return nullptr;
}

TEST(PublicTraces, ReplayOnCpuWithFullCoverageAndRecordedOutputs) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  std::vector<std::string> files = test::listFiles(dir, {".json", ".json.gz"});
  for (const char* archive : {"/param/dlrm_pytorch_et.tar.gz", "/param/resnet_1gpu_et.json.tar.gz",
                              "/chakra/1.0.2-chakra.0.0.4.tgz"}) {
    for (const std::string& f : test::extractArchive(dir + archive)) files.push_back(f);
  }
  const std::vector<std::string> ets = pytorchEts(files);
  ASSERT_GE(ets.size(), 8u);
  for (const std::string& path : ets) {
    if (path.find("dlrm_eg_") != std::string::npos && path.find("dlrm_eg_0") == std::string::npos) {
      continue;  // the 8 DLRM ranks are alike; one is enough here
    }
    const Coverage cov = replayAndCheck(path);
    if (const Shortfall* s = shortfallOf(path)) {
      EXPECT_EQ(cov.operators, s->operators) << path << ": the trace or its selection changed";
      EXPECT_GE(cov.replayed, s->replayed) << path << " (floor: " << s->reason << ")";
    } else {
      EXPECT_GE(ratio(cov), 0.99) << path;
    }
  }
}

TEST(FleetSamples, ReplayOnCpuWithFullCoverageAndRecordedOutputs) {
  const std::string dir = std::string(ETB_SOURCE_DIR) + "/fleet_samples";
  const std::vector<std::string> ets = test::listFiles(dir, {".et.json.gz"});
  if (ets.empty()) GTEST_SKIP() << "no fleet samples under " << dir << " yet";
  for (const std::string& path : ets) {
    EXPECT_GE(ratio(replayAndCheck(path)), 0.99) << path;
  }
}

}  // namespace
}  // namespace etb::replay
