// SPDX-License-Identifier: MIT
#include "core/chakra/chakra_reader.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "tests/core/chakra_test_util.h"
#include "tests/test_util.h"

namespace etb::trace {
namespace {
namespace pb = ChakraProtoMsg;

std::vector<std::string> publicChakraFiles(const std::string& dir) {
  std::vector<std::string> files = test::listFiles(dir, {".et"});
  for (const char* archive : {"/astra-sim/at-bd321122/resnet_dp.tar",
                              "/chakra/at-e366cf2c/feeder_tests_trace.tar.gz"}) {
    for (const std::string& f : test::extractArchive(dir + archive)) {
      if (f.size() > 3 && f.compare(f.size() - 3, 3, ".et") == 0) files.push_back(f);
    }
  }
  return files;
}

std::string metadataOnly() {
  pb::GlobalMetadata md;
  md.set_version("0.0.4");
  std::string out;
  test::appendFramed(&out, md);
  return out;
}

pb::Node compNode(uint64_t id) {
  pb::Node n;
  n.set_id(id);
  n.set_name("op" + std::to_string(id));
  n.set_type(pb::COMP_NODE);
  return n;
}

TEST(ChakraReader, LoadsEveryPublicFileWithTheFilesOwnNodeCount) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const std::vector<std::string> files = publicChakraFiles(dir);
  ASSERT_GE(files.size(), 64u + 16u + 8u + 2u + 2u);
  size_t with_repairs = 0;
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    const int64_t frames = test::countFramedMessages(readFileMaybeGzip(f));
    ASSERT_GT(frames, 0);
    const Trace t = readChakra(f);
    EXPECT_EQ(static_cast<int64_t>(t.nodes.size()), frames - 1);
    EXPECT_EQ(t.format, SourceFormat::kChakraProtobuf);
    EXPECT_FALSE(t.schema.empty());
    with_repairs += t.repairs.empty() ? 0 : 1;
  }
  EXPECT_GE(with_repairs, 1u);  // chakra.0.et has dangling and self deps
}

TEST(ChakraReader, MicrobenchmarksHaveTheirCollectiveAndOneMiB) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const std::map<std::string, CommType> expect = {
      {"all_reduce", CommType::kAllReduce}, {"all_gather", CommType::kAllGather},
      {"reduce_scatter", CommType::kReduceScatter}, {"all_to_all", CommType::kAllToAll}};
  for (const auto& [name, type] : expect) {
    for (int r = 0; r < 4; ++r) {
      const std::string f = dir + "/astra-sim/microbenchmarks/" + name + "/4npus_1MB/" +
                            name + "." + std::to_string(r) + ".et";
      SCOPED_TRACE(f);
      const Trace t = readChakra(f);
      ASSERT_EQ(t.nodes.size(), 1u);
      EXPECT_EQ(t.rank, r);
      EXPECT_EQ(t.schema, "0.0.4");
      const Node& n = t.nodes[0];
      EXPECT_EQ(n.kind, NodeKind::kCollective);
      EXPECT_EQ(n.chakra_type, pb::COMM_COLL_NODE);
      ASSERT_GE(n.comm, 0);
      EXPECT_EQ(t.comms[n.comm].type, type);
      EXPECT_EQ(t.comms[n.comm].bytes, 1048576u);
    }
  }
}

TEST(ChakraReader, ChakraTestFileDropsDanglingAndSelfDeps) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const Trace t = readChakra(dir + "/chakra/at-bb67f055/chakra.0.et");
  EXPECT_EQ(t.nodes.size(), 3664u);
  size_t coll = 0;
  for (const Node& n : t.nodes) {
    coll += n.kind == NodeKind::kCollective ? 1 : 0;
    for (NodeId d : n.data_deps) {
      EXPECT_NE(d, n.id);
      EXPECT_NE(t.find(d), nullptr);
    }
  }
  EXPECT_EQ(coll, 21u);
  EXPECT_FALSE(t.repairs.empty());
  ReadOptions strict;
  strict.strict = true;
  EXPECT_THROW(readChakra(dir + "/chakra/at-bb67f055/chakra.0.et", strict), InputError);
}

TEST(ChakraReader, CustomCollectivesAreSendRecvWithPeers) {
  ETB_REQUIRE_SHARED_TRACES(dir);
  const Trace t = readChakra(dir +
      "/astra-sim/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce.3.et");
  size_t send = 0, recv = 0;
  for (const Node& n : t.nodes) {
    if (n.kind != NodeKind::kPointToPoint) continue;
    const CommInfo& c = t.comms[n.comm];
    (c.type == CommType::kSend ? send : recv) += 1;
    EXPECT_GE(c.peer, 0);
  }
  EXPECT_EQ(send, 14u);
  EXPECT_EQ(recv, 14u);
}

TEST(ChakraReader, AcceptsAnyIntegerKind) {
  std::string bytes = metadataOnly();
  pb::Node n;
  n.set_id(7);
  n.set_name("ar");
  n.set_type(pb::COMM_COLL_NODE);
  auto* a = n.add_attr();
  a->set_name("comm_type");
  a->set_sfixed32_val(5);
  a = n.add_attr();
  a->set_name("comm_size");
  a->set_fixed64_val(4096);
  a = n.add_attr();
  a->set_name("is_cpu_op");
  a->set_int32_val(0);
  a = n.add_attr();
  a->set_name("tid");
  a->set_sint64_val(3);
  test::appendFramed(&bytes, n);
  const Trace t = readChakraBytes(bytes, "x.2.et");
  ASSERT_EQ(t.nodes.size(), 1u);
  EXPECT_EQ(t.rank, 2);
  EXPECT_EQ(t.nodes[0].tid, 3u);
  EXPECT_EQ(t.comms[t.nodes[0].comm].type, CommType::kBroadcast);
  EXPECT_EQ(t.comms[t.nodes[0].comm].bytes, 4096u);
  const Attr* cpu = t.attr(t.nodes[0], "is_cpu_op");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(t.str(cpu->type), "int32");
}

TEST(ChakraReader, TruncatedStreamNamesFileAndMessage) {
  std::string bytes = metadataOnly();
  test::appendFramed(&bytes, compNode(1));
  test::appendFramed(&bytes, compNode(2));
  bytes.pop_back();
  try {
    readChakraBytes(bytes, "cut.et");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.loc().file, "cut.et");
    EXPECT_NE(std::string(e.what()).find("message 2"), std::string::npos) << e.what();
  }
}

TEST(ChakraReader, DuplicateIdsAndCyclesNameTheNode) {
  std::string dup = metadataOnly();
  test::appendFramed(&dup, compNode(4));
  test::appendFramed(&dup, compNode(4));
  try {
    readChakraBytes(dup, "dup.et");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.loc().node_id, 4u);
  }
  std::string cyc = metadataOnly();
  pb::Node a = compNode(1), b = compNode(2);
  a.add_data_deps(2);
  b.add_data_deps(1);
  test::appendFramed(&cyc, a);
  test::appendFramed(&cyc, b);
  try {
    readChakraBytes(cyc, "cyc.et");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_TRUE(e.loc().node_id == 1 || e.loc().node_id == 2);
    EXPECT_EQ(e.loc().file, "cyc.et");
  }
}

TEST(ChakraReader, GarbageNeverCrashes) {
  std::mt19937 rng(1234);
  std::string good = metadataOnly();
  for (uint64_t i = 1; i < 6; ++i) test::appendFramed(&good, compNode(i));
  size_t errors = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string bytes = good;
    if (round % 2 == 0) {
      bytes.resize(rng() % 64);
      for (char& c : bytes) c = static_cast<char>(rng());
    } else {
      for (int k = 0; k < 3; ++k) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    try {
      readChakraBytes(bytes, "fuzz.et");
    } catch (const InputError&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 1000u);
}

}  // namespace
}  // namespace etb::trace
