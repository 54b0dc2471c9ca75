// SPDX-License-Identifier: MIT
//
// A backend whose collectives run on another library (gloo, NCCL) while the
// job itself -- ranks, barriers, gathers to rank 0, aborts, pre-flight --
// stays on the MPI communicator that started it. The delegation and the
// statistics live here once, not in each backend.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "replayer/comm/comm_stats.h"
#include "replayer/comm/communicator.h"

namespace etb::replay::comm {

class LayeredCommunicator : public Communicator {
 public:
  int rank() const override { return control_->rank(); }
  int worldSize() const override { return control_->worldSize(); }
  void barrier() override { control_->barrier(); }
  void sleepingBarrier() override { control_->sleepingBarrier(); }
  CommStats stats() const override { return stats_.stats(); }
  void resetStats() override { stats_.resetStats(); }
  std::vector<CollectiveStat> collectiveStats() const override { return stats_.collectiveStats(); }
  void clearCollectiveStats() override { stats_.clearCollectiveStats(); }
  std::vector<std::string> gatherToRoot(const std::string& mine) override {
    return control_->gatherToRoot(mine);
  }
  double maxOverRanks(double mine) override { return control_->maxOverRanks(mine); }
  [[noreturn]] void abortJob(const std::string& message, int code) override {
    control_->abortJob(message, code);
    std::_Exit(code);  // abortJob does not return; this tells the compiler
  }

 protected:
  // Borrows `control` until own() is called (gloo connects first, so that a
  // failure leaves the caller's communicator intact).
  explicit LayeredCommunicator(Communicator& control) : control_(&control) {}
  explicit LayeredCommunicator(std::unique_ptr<Communicator> control)
      : control_(control.get()), owned_(std::move(control)) {}
  void own(std::unique_ptr<Communicator> control) {
    control_ = control.get();
    owned_ = std::move(control);
  }
  Communicator& control() const { return *control_; }

  StatsRecorder stats_;

 private:
  Communicator* control_;
  std::unique_ptr<Communicator> owned_;
};

}  // namespace etb::replay::comm
