// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "core/chakra/chakra_reader.h"
#include "core/chakra/chakra_writer.h"
#include "core/pytorch_et/et_json_reader.h"
#include "core/base/file_io.h"
#include "core/model/trace_compare.h"
#include "schemas/et_def.pb.h"
#include "tests/core/chakra_test_util.h"
#include "tests/test_util.h"

namespace etb::trace {
namespace {

// A small PyTorch-like trace with every value kind the model holds.
Trace builtTrace() {
  Trace t;
  t.schema = "1.1.1-chakra.0.0.4";
  t.pid = 42;
  t.rank = 1;
  t.process_groups.push_back({"0", "default_pg", "nccl", {0, 1}, 2});
  test::addNode(t, 1, 1, "[pytorch|profiler|execution_trace|process]", NodeKind::kRoot);
  test::addNode(t, 2, 1, "[pytorch|profiler|execution_trace|thread]", NodeKind::kRoot);
  Node* mm = &test::addNode(t, 3, 2, "aten::mm", NodeKind::kOperator);
  mm->rf_id = 77;
  mm->seq_id = 5;
  mm->dur_us = 12.625;
  mm->op_schema = t.strings.intern("aten::mm(Tensor self, Tensor mat2) -> Tensor");
  TensorRef r;
  r.tensor_id = 10;
  r.storage_id = 11;
  r.numel = 6;
  r.itemsize = 4;
  r.dtype = DType::kFloat;
  r.has_device = true;
  r.has_strides = true;
  r.device = t.strings.intern("cuda:0");
  r.shape = t.lists.intern({2, 3});
  r.strides = t.lists.intern({3, 1});
  mm->inputs.push_back(makeTensor(t, r, "Tensor(float)"));
  Value list;
  list.kind = ValueKind::kList;
  list.type = t.strings.intern("GenericList[Int,Double,String]");
  list.items = {makeInt(t, -3), makeDouble(t, 0.1 + 0.2), makeString(t, "it's \"q\"\n")};
  mm->inputs.push_back(list);
  mm->inputs.push_back(makeNone(t));
  mm->inputs.push_back(makeDouble(t, INFINITY));
  mm->outputs.push_back(makeBool(t, true));
  Attr a;
  a.name = t.strings.intern("kernel_backend");
  a.type = t.strings.intern("string");
  a.value = makeString(t, "triton");
  mm->attrs.push_back(a);
  Node* ar = &test::addNode(t, 4, 2, "record_param_comms", NodeKind::kCollective);
  CommInfo c;
  c.type = CommType::kAllReduce;
  c.pg_name = t.strings.intern("0");
  c.in_elems = 256;
  c.dtype = DType::kFloat;
  c.bytes = 1024;
  ar->comm = 0;
  t.comms.push_back(c);
  t.finalize();
  return t;
}

TEST(ChakraWriter, BuiltTraceRoundTripsExactly) {
  const Trace t = builtTrace();
  const std::string bytes = writeChakraBytes(t);
  const Trace back = readChakraBytes(bytes, "built.1.et");
  EXPECT_EQ(diffTraces(t, back), "");
  EXPECT_EQ(back.schema, t.schema);
  EXPECT_EQ(back.nodes[2].dur_us, 12.625);
  // Chakra -> Chakra gives the same bytes.
  EXPECT_EQ(writeChakraBytes(back), bytes);
}

TEST(ChakraWriter, WritesWhatSimulatorsNeed) {
  const std::string bytes = writeChakraBytes(builtTrace());
  ChakraProtoMsg::GlobalMetadata md;
  size_t pos = 0;
  auto next = [&](google::protobuf::Message* m) {
    std::string_view msg;
    std::string error;
    ASSERT_TRUE(test::nextFramed(bytes, &pos, &msg, &error)) << error;
    EXPECT_FALSE(msg.empty());  // no empty messages
    EXPECT_TRUE(m->ParseFromArray(msg.data(), static_cast<int>(msg.size())));
  };
  next(&md);
  EXPECT_EQ(md.version(), "0.0.4");
  bool schema = false;
  for (const auto& a : md.attr()) schema = schema || (a.name() == "schema" && a.string_val() == "1.1.1-chakra.0.0.4");
  EXPECT_TRUE(schema);
  std::set<uint64_t> seen;
  while (pos < bytes.size()) {
    ChakraProtoMsg::Node n;
    next(&n);
    for (uint64_t d : n.data_deps()) {
      EXPECT_NE(d, n.id());
      EXPECT_TRUE(seen.count(d)) << "node " << n.id() << " depends on later/missing " << d;
    }
    for (uint64_t d : n.ctrl_deps()) EXPECT_NE(d, n.id());
    if (n.type() == ChakraProtoMsg::COMM_COLL_NODE) {
      for (const auto& a : n.attr()) {
        if (a.name() == "comm_type") {
          EXPECT_EQ(a.value_case(), ChakraProtoMsg::AttributeProto::kInt64Val);
        }
        if (a.name() == "comm_size") {
          EXPECT_EQ(a.int64_val(), 1024);
        }
        if (a.name() == "is_cpu_op") {
          EXPECT_FALSE(a.bool_val());
        }
      }
    }
    seen.insert(n.id());
  }
  EXPECT_EQ(seen.size(), 4u);
}

TEST(ChakraWriter, PublicChakraFilesRoundTrip) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  std::vector<std::string> files = test::listFiles(dir, {".et"});
  for (const std::string& f : test::extractArchive(dir + "/astra-sim/at-bd321122/resnet_dp.tar")) {
    if (f.find("resnet_dp.0.et") != std::string::npos) files.push_back(f);
  }
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    const Trace t = readChakra(f);
    const std::string bytes = writeChakraBytes(t);
    const Trace back = readChakraBytes(bytes, f);
    EXPECT_EQ(diffTraces(t, back), "");
    EXPECT_EQ(back.nodes.size(), t.nodes.size());
    EXPECT_EQ(writeChakraBytes(back), bytes);
  }
}

// The GPU fleet samples (torch 2.11's ET schema 1.1.1 on an H200: cuda:0 and
// cpu tensors, attrs, ctrl_deps) come back from Chakra unchanged.
TEST(ChakraWriter, GpuFleetSamplesRoundTripThroughChakra) {
  const std::string dir = std::string(ETB_SOURCE_DIR) + "/fleet_samples/gpu_h200";
  size_t checked = 0;
  for (const std::string& f : test::listFiles(dir, {".et.json.gz"})) {
    SCOPED_TRACE(f);
    const Trace t = readEtJson(f);
    EXPECT_EQ(t.schema.rfind("1.1.1", 0), 0u) << t.schema;
    const Trace back = readChakraBytes(writeChakraBytes(t), "x.et");
    EXPECT_EQ(back.nodes.size(), t.nodes.size());
    EXPECT_EQ(diffTraces(t, back), "");
    ++checked;
  }
  EXPECT_EQ(checked, 9u) << "GPU samples missing under " << dir;
}

TEST(ChakraWriter, EveryPublicPyTorchEtRoundTripsThroughChakra) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  std::vector<std::string> files = test::listFiles(dir, {".json.gz", ".json"});
  for (const char* archive : {"/param/dlrm_pytorch_et.tar.gz", "/chakra/1.0.2-chakra.0.0.4.tgz",
                              "/param/resnet_1gpu_et.json.tar.gz"}) {
    for (const std::string& f : test::extractArchive(dir + archive)) files.push_back(f);
  }
  size_t checked = 0;
  for (const std::string& f : files) {
    // "._x.json" are macOS resource forks that ship inside some archives.
    if (f.find("/._") != std::string::npos || f.find("kineto") != std::string::npos || f.find("_trace.json") != std::string::npos ||
        f.find("comm_group") != std::string::npos) {
      continue;
    }
    // ETB_TEST_ONLY=<substring> narrows the sweep to one file when debugging.
    const char* only = std::getenv("ETB_TEST_ONLY");
    if (only != nullptr && f.find(only) == std::string::npos) continue;
    SCOPED_TRACE(f);
    const Trace t = readEtJson(f);
    const Trace back = readChakraBytes(writeChakraBytes(t), "x.et");
    EXPECT_EQ(back.nodes.size(), t.nodes.size());
    EXPECT_EQ(diffTraces(t, back), "");
    ++checked;
  }
  if (std::getenv("ETB_TEST_ONLY") == nullptr) {
    EXPECT_GE(checked, 10u);
  }
}

}  // namespace
}  // namespace etb::trace
