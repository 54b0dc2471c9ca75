// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/pytorch_et/et_json_reader.h"
#include "core/pytorch_et/et_json_writer.h"
#include "core/model/trace_compare.h"
#include "tests/test_util.h"

namespace etb::trace {
namespace {

TEST(EtJsonWriter, DoublesKeepFullPrecisionAndNonFiniteStrings) {
  Trace t;
  Node n;
  n.id = 2;
  n.name = t.strings.intern("aten::add");
  n.kind = NodeKind::kOperator;
  n.op_schema = t.strings.intern("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  n.inputs.push_back(makeDouble(t, 1e-12));
  n.inputs.push_back(makeDouble(t, 0.1 + 0.2));
  n.inputs.push_back(makeDouble(t, std::numeric_limits<double>::infinity()));
  n.inputs.push_back(makeDouble(t, std::nan("")));
  n.inputs.push_back(makeDouble(t, 3.0));
  n.inputs.push_back(makeString(t, "quote \" backslash \\ newline \n tab \t"));
  t.nodes.push_back(n);
  const std::string text = writeEtJsonText(t);
  EXPECT_NE(text.find("\"inf\""), std::string::npos);
  EXPECT_NE(text.find("\"nan\""), std::string::npos);
  const Trace back = readEtJsonText(text, "doubles");
  ASSERT_EQ(back.nodes.size(), 1u);
  EXPECT_TRUE(back.repairs.empty());
  const auto& in = back.nodes[0].inputs;
  EXPECT_EQ(in[0].d, 1e-12);
  EXPECT_EQ(in[1].d, 0.1 + 0.2);
  EXPECT_TRUE(std::isinf(in[2].d));
  EXPECT_TRUE(std::isnan(in[3].d));
  EXPECT_EQ(in[4].kind, ValueKind::kDouble);
  EXPECT_EQ(diffTraces(t, back), "");
}

TEST(EtJsonWriter, WritesThe111AttrsLayoutInIdOrder) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const Trace a = readEtJson(dir + "/param/1.1.0-chakra.0.0.4/resnet_2gpu_et.json.gz");
  const std::string text = writeEtJsonText(a);
  EXPECT_EQ(text.rfind("{\"schema\": \"1.1.1-chakra.0.0.4\"", 0), 0u);
  // The pg init node comes back as such, with its groups.
  const Trace b = readEtJsonText(text, "rt");
  ASSERT_EQ(b.process_groups.size(), 1u);
  EXPECT_EQ(b.schema, "1.1.1-chakra.0.0.4");
  size_t last = 0, pos = 0;
  while ((pos = text.find("\n{\"id\": ", pos)) != std::string::npos) {
    pos += 8;
    const size_t id = std::stoul(text.substr(pos, 12));
    EXPECT_GT(id, last);
    last = id;
  }
  EXPECT_EQ(diffTraces(a, b), "");
}

TEST(EtJsonWriter, DiffTracesReportsADifference) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const Trace a = readEtJson(dir + "/param/pt2_et.json");
  Trace b = readEtJsonText(writeEtJsonText(a), "rt");
  ASSERT_EQ(diffTraces(a, b), "");
  b.tensors[0].numel += 1;
  EXPECT_NE(diffTraces(a, b).find("numel"), std::string::npos);
}

}  // namespace
}  // namespace etb::trace
