// SPDX-License-Identifier: MIT
//
// Views must be replayed into their base's storage, as recorded: a write
// through one is seen in the other. Observed from outside the replayer: a
// communication node hands the replayed tensors to the Communicator, and
// this probe (the local communicator plus a copy of what it was given)
// keeps them for the checks.
#include <gtest/gtest.h>

#include <cstdlib>

#include "replayer/replayer.h"
#include "tests/replayer/trace_builder.h"

namespace etb::replay {
namespace {

class ProbeCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int worldSize() const override { return 1; }
  std::string backendName() const override { return "probe"; }
  void prepare(const trace::Trace& t) override { local_->prepare(t); }
  std::shared_ptr<Work> run(CommCall& call) override {
    seen = call.inputs;  // the replay's own tensors, not copies
    values.clear();
    for (const at::Tensor& t : call.inputs) values.push_back(t.clone());
    return local_->run(call);
  }
  void barrier() override {}
  CommStats stats() const override { return local_->stats(); }
  void resetStats() override { local_->resetStats(); }
  std::vector<std::string> gatherToRoot(const std::string& mine) override { return {mine}; }
  [[noreturn]] void abortJob(const std::string& m, int code) override {
    local_->abortJob(m, code);
    std::abort();  // not reached; tells the compiler so
  }

  std::vector<at::Tensor> seen, values;

 private:
  std::unique_ptr<Communicator> local_ = makeLocalCommunicator();
};

// A record_param_comms all_reduce whose inputs are `inputs`.
void addComm(test::TraceBuilder& b, std::vector<trace::Value> inputs) {
  trace::CommInfo info;
  info.type = trace::CommType::kAllReduce;
  info.dtype = trace::DType::kFloat;
  info.in_elems = info.out_elems = 16;
  b.collective(900, info, std::move(inputs));
}

TEST(Replayer, ViewsShareTheirRecordedStorage) {
  test::TraceBuilder b;
  trace::Trace& t = b.trace();
  const auto base = b.tensor({4, 4}, trace::DType::kFloat, 999);
  auto row = b.tensor({4}, trace::DType::kFloat, 999);
  t.tensors[row.tensor].offset = 4;  // row 1 of the same storage
  b.op("aten::zero_(Tensor(a!) self) -> Tensor(a!)", {base}, {base});
  b.op("aten::add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
       {row, trace::makeInt(t, 5), trace::makeInt(t, 1)}, {row});
  addComm(b, {base, row});
  ReplayOptions o;
  o.device = "cpu";
  o.warmup = 1;
  o.iters = 2;
  o.verify_outputs = true;
  ProbeCommunicator probe;
  ReplayDiagnostics diag;
  const ReplayResult r = replayTrace(b.finish(), o, probe, &diag);
  EXPECT_EQ(r.coverage.replayed, 2u);
  EXPECT_TRUE(diag.output_mismatches.empty());
  ASSERT_EQ(probe.seen.size(), 2u);
  const at::Tensor& got_base = probe.seen[0];
  const at::Tensor& got_row = probe.seen[1];
  // Same allocation, the row 4 floats into it: the recorded offset.
  EXPECT_TRUE(got_row.storage().is_alias_of(got_base.storage()));
  EXPECT_EQ(static_cast<const char*>(got_row.data_ptr()),
            static_cast<const char*>(got_base.data_ptr()) + 4 * sizeof(float));
  // zero_ on the base, then += 5 through the view: row 1 of the base is 5.
  at::Tensor want = at::zeros({4, 4});
  want[1].fill_(5);
  EXPECT_TRUE(at::equal(probe.values[0], want)) << probe.values[0];
  EXPECT_TRUE(at::equal(probe.values[1], at::full({4}, 5.0f))) << probe.values[1];
}

}  // namespace
}  // namespace etb::replay
