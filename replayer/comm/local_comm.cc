// SPDX-License-Identifier: MIT
#include "replayer/comm/communicator.h"

#include <cstdio>
#include <cstdlib>

namespace etb::replay {
namespace {
// One rank: every collective is the identity on this rank's data, so calls
// complete immediately; they are counted so coverage can report them.
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int worldSize() const override { return 1; }
  std::string backendName() const override { return "local"; }
  void prepare(const trace::Trace&) override {}
  std::shared_ptr<Work> run(CommCall&) override {
    ++stats_.calls;
    return nullptr;
  }
  void barrier() override {}
  CommStats stats() const override { return stats_; }
  void resetStats() override { stats_ = CommStats{}; }
  std::vector<std::string> gatherToRoot(const std::string& mine) override {
    return {mine};
  }
  double maxOverRanks(double mine) override { return mine; }
  [[noreturn]] void abortJob(const std::string& message, int code) override {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::exit(code);
  }

 private:
  CommStats stats_;
};
}  // namespace

std::unique_ptr<Communicator> makeLocalCommunicator() {
  return std::make_unique<LocalCommunicator>();
}

}  // namespace etb::replay
