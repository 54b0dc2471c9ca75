// SPDX-License-Identifier: MIT
//
// The conformance checker on hand-made files: a good file passes, and each
// file that breaks one consumer rule fails with exactly that rule named. A
// checker that missed a rule (or named the wrong one) fails here.
#include <gtest/gtest.h>

#include <functional>

#include "schemas/et_def.pb.h"
#include "tests/core/chakra_conformance.h"
#include "tests/core/chakra_test_util.h"

namespace etb::test {
namespace {
namespace pb = ChakraProtoMsg;

void setAttr(pb::Node* n, const std::string& name, const std::function<void(pb::AttributeProto*)>& set) {
  for (auto& a : *n->mutable_attr()) {
    if (a.name() == name) {
      a.Clear();
      a.set_name(name);
      set(&a);
      return;
    }
  }
  pb::AttributeProto* a = n->add_attr();
  a->set_name(name);
  set(a);
}

void eraseAttr(pb::Node* n, const std::string& name) {
  auto* attrs = n->mutable_attr();
  for (int i = 0; i < attrs->size(); ++i) {
    if (attrs->Get(i).name() == name) {
      attrs->DeleteSubrange(i, 1);
      return;
    }
  }
}

// A compute node and the all-reduce that follows it: what our writer emits.
struct Good {
  pb::GlobalMetadata md;
  pb::Node comp;
  pb::Node coll;
  Good() {
    md.set_version("0.0.4");
    comp.set_id(1);
    comp.set_name("aten::mm");
    comp.set_type(pb::COMP_NODE);
    comp.set_duration_micros(7);
    setAttr(&comp, "is_cpu_op", [](auto* a) { a->set_bool_val(true); });
    coll.set_id(2);
    coll.set_name("record_param_comms");
    coll.set_type(pb::COMM_COLL_NODE);
    coll.add_data_deps(1);
    setAttr(&coll, "is_cpu_op", [](auto* a) { a->set_bool_val(false); });
    setAttr(&coll, "comm_type", [](auto* a) { a->set_int64_val(pb::ALL_REDUCE); });
    setAttr(&coll, "comm_size", [](auto* a) { a->set_int64_val(1024); });
    setAttr(&coll, "pg_name", [](auto* a) { a->set_string_val("1"); });
  }
  std::string bytes() const {
    std::string out;
    appendFramed(&out, md);
    appendFramed(&out, comp);
    appendFramed(&out, coll);
    return out;
  }
};

void expectOnly(const std::string& bytes, const std::string& rule) {
  const Conformance c = checkChakraConformance(bytes);
  ASSERT_FALSE(c.violations.empty()) << "rule " << rule << " not detected";
  for (const Violation& v : c.violations) EXPECT_EQ(v.rule, rule) << v.what;
}

TEST(ChakraConformance, GoodFilePasses) {
  const Conformance c = checkChakraConformance(Good().bytes());
  EXPECT_TRUE(c.violations.empty()) << c.summary();
  ASSERT_EQ(c.nodes.size(), 2u);
  EXPECT_EQ(c.nodes[1].comm_size, 1024u);
  EXPECT_EQ(c.pg_names, std::set<std::string>{"1"});
}

TEST(ChakraConformance, EachBrokenRuleIsNamed) {
  std::string b = Good().bytes();
  expectOnly(b + "\x85", "framing");                    // a cut length prefix
  expectOnly(b.substr(0, b.size() - 3), "framing");     // a cut last message
  expectOnly(b + std::string(1, '\0'), "empty_message");
  {
    Good g;  // first message is a node, not the metadata
    std::string s;
    pb::Node first = g.comp;
    first.set_id(99);
    appendFramed(&s, first);
    appendFramed(&s, g.comp);
    appendFramed(&s, g.coll);
    expectOnly(s, "metadata_first");
  }
  {
    Good g;  // a GlobalMetadata where a node belongs
    std::string s = g.bytes();
    appendFramed(&s, g.md);
    expectOnly(s, "node_parse");
  }
  auto mutated = [](const std::function<void(Good&)>& f) {
    Good g;
    f(g);
    return g.bytes();
  };
  expectOnly(mutated([](Good& g) { g.coll.set_id(1); g.coll.clear_data_deps(); }), "duplicate_id");
  expectOnly(mutated([](Good& g) { g.coll.add_data_deps(2); }), "self_dep");
  expectOnly(mutated([](Good& g) { g.coll.add_ctrl_deps(42); }), "missing_dep");
  expectOnly(mutated([](Good& g) { g.comp.add_data_deps(2); }), "cycle");
  expectOnly(mutated([](Good& g) { g.comp.set_type(pb::INVALID_NODE); }), "node_type");
  // ASTRA-sim aborts with std::bad_cast on the first compute node (issue 10).
  expectOnly(mutated([](Good& g) { setAttr(&g.comp, "is_cpu_op", [](auto* a) { a->set_string_val("True"); }); }),
             "attr_kind");
  expectOnly(mutated([](Good& g) { setAttr(&g.coll, "comm_size", [](auto* a) { a->set_double_val(1024); }); }),
             "attr_kind");
  expectOnly(mutated([](Good& g) { setAttr(&g.coll, "pg_name", [](auto* a) { a->set_int64_val(1); }); }),
             "attr_kind");
  expectOnly(mutated([](Good& g) { setAttr(&g.coll, "comm_size", [](auto* a) { a->set_int64_val(-1); }); }),
             "attr_range");
  expectOnly(mutated([](Good& g) { eraseAttr(&g.coll, "comm_size"); }), "missing_attr");
  expectOnly(mutated([](Good& g) { setAttr(&g.coll, "comm_type", [](auto* a) { a->set_int64_val(pb::BARRIER); }); }),
             "comm_type");
  expectOnly(mutated([](Good& g) { setAttr(&g.coll, "is_cpu_op", [](auto* a) { a->set_bool_val(true); }); }),
             "comm_on_cpu");
  expectOnly(mutated([](Good& g) { setAttr(&g.coll, "pg_name", [](auto* a) { a->set_string_val("0"); }); }),
             "pg_name");
  expectOnly(mutated([](Good& g) {
               g.coll.set_type(pb::COMM_SEND_NODE);
               eraseAttr(&g.coll, "comm_type");
               setAttr(&g.coll, "comm_dst", [](auto* a) { a->set_int32_val(1); });
             }),
             "missing_attr");  // a send without comm_tag
}

TEST(ChakraConformance, CommGroupFileMustMatchTheTraces) {
  EXPECT_TRUE(checkCommGroups(R"({"1": [0, 1], "2": [1]})", {"1", "2"}, 2).empty());
  for (const char* bad : {R"({"0": [0, 1]})", R"({"1": [0, 2]})", R"({"1": []})", "[1]"}) {
    const auto v = checkCommGroups(bad, {}, 2);
    ASSERT_FALSE(v.empty()) << bad;
    EXPECT_EQ(v[0].rule, "comm_group");
  }
  const auto missing = checkCommGroups(R"({"1": [0, 1]})", {"1", "3"}, 2);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_NE(missing[0].what.find("pg_name 3"), std::string::npos);
}

}  // namespace
}  // namespace etb::test
