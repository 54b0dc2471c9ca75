// SPDX-License-Identifier: MIT
//
// Which nodes a replayed iteration runs, on the call trees torch 1.13's
// observer writes for DDP over gloo: gloo's record function ends on a worker
// thread, so ops the main thread ran after a c10d::allreduce_ were recorded
// as its children on some ranks and not on others (a find_unused_parameters
// DDP step at 4 ranks: ranks 0-2 had the used-parameter bitmap's
// all_reduce under the bucket's, rank 3 at top level; in another recording
// rank 3 had it under an aten::copy_). Each rank must still
// run every collective and every op, or the ranks' sequences part and the
// replay hangs.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/pytorch_et/et_json_reader.h"
#include "replayer/op_selection.h"

namespace etb::replay {
namespace {

constexpr const char* kAllreduce =
    "c10d::allreduce_(Tensor[] _0, __torch__.torch.classes.c10d.ProcessGroup _1, "
    "__torch__.torch.classes.c10d.ReduceOp _2, int _3) -> (Tensor[] _0, "
    "__torch__.torch.classes.c10d.Work _1)";
constexpr const char* kCopy =
    "aten::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)";

std::string tensor(int id, int numel) {
  return "[" + std::to_string(id) + "," + std::to_string(id + 100) + ",0," + std::to_string(numel) +
         ",4,\"cpu\"]";
}

// A 1.0.1 flat node as the 1.13 observer writes it.
std::string node(int id, const std::string& name, int parent, const std::string& schema,
                 const std::string& inputs, const std::string& types) {
  return "{\"name\": \"" + name + "\", \"id\": " + std::to_string(id) +
         ", \"rf_id\": 0, \"parent\": " + std::to_string(parent) +
         ", \"fw_parent\": 0, \"seq_id\": -1, \"scope\": 0, \"tid\": 1, \"fw_tid\": 0, "
         "\"op_schema\": \"" + schema + "\", \"inputs\": " + inputs +
         ", \"input_shapes\": [], \"input_types\": " + types +
         ", \"outputs\": [], \"output_shapes\": [], \"output_types\": []},\n";
}

std::string allreduce(int id, int parent, int tensor_id, int numel) {
  return node(id, "c10d::allreduce_", parent, kAllreduce,
              "[[" + tensor(tensor_id, numel) + "],\"<Object>\",\"<Object>\",-1]",
              "[\"GenericList[Tensor(float)]\",\"Object\",\"Object\",\"Int\"]") +
         node(id + 1, "gloo:all_reduce", id, "", "[" + tensor(tensor_id, numel) + "]",
              "[\"Tensor(float)\"]");
}

enum class Nesting { kFlat, kUnderCollective, kUnderOp };

// One step's tail in exit order. kUnderCollective puts the copy_ and the
// second all_reduce under the first (ranks 0-2 of one recording);
// kUnderOp puts the second all_reduce under the copy_ (rank 3 of another).
trace::Trace step(Nesting nesting) {
  const int p = nesting == Nesting::kUnderCollective ? 10 : 3;
  const int q = nesting == Nesting::kUnderOp ? 20 : p;
  const std::string body =
      node(3, "ProfilerStep#3", 2, "", "[]", "[]") + allreduce(10, 3, 50, 4680) +
      allreduce(30, q, 70, 6) +
      node(20, "aten::copy_", p, kCopy, "[" + tensor(60, 6) + "," + tensor(61, 6) + ",false]",
           "[\"Tensor(float)\",\"Tensor(float)\",\"Bool\"]") +
      node(2, "[pytorch|profiler|execution_graph|thread]", 1, "", "[]", "[]") +
      node(1, "[pytorch|profiler|execution_graph|process]", 1, "", "[]", "[]");
  const std::string text = "{\"schema\": \"1.0.1\", \"pid\": 7, \"time\": \"t\", \"start_ts\": 1, "
                           "\"nodes\": [\n" + body.substr(0, body.size() - 2) + "\n], \"finish_ts\": 2}";
  return trace::readEtJsonText(text, "nesting" + std::to_string(static_cast<int>(nesting)));
}

std::map<std::string, int> selectedNames(const trace::Trace& t) {
  std::map<std::string, int> names;
  for (const SelectedNode& s : selectNodes(t, chooseIteration(t, 0))) {
    ++names[std::string(t.name(t.nodes[s.index]))];
  }
  return names;
}

TEST(OpSelection, Gloo113MisParentedOpsAndCollectivesAreSelectedOnEveryRank) {
  const std::map<std::string, int> want = {{"aten::copy_", 1}, {"c10d::allreduce_", 2}};
  EXPECT_EQ(selectedNames(step(Nesting::kFlat)), want);
  EXPECT_EQ(selectedNames(step(Nesting::kUnderCollective)), want);
  EXPECT_EQ(selectedNames(step(Nesting::kUnderOp)), want);
}

}  // namespace
}  // namespace etb::replay
