// SPDX-License-Identifier: MIT
#include "tests/replayer/replay_helpers.h"

#include <memory>

#include "replayer/comm/communicator.h"

namespace etb::test {

replay::ReplayOptions replayOptions(int warmup, int iters, Verify verify, const std::string& device) {
  replay::ReplayOptions o;
  o.device = device;
  o.warmup = warmup;
  o.min_warmup_s = 0;  // the counts asked for, no more (tests of the warm-up time set it)
  o.iters = iters;
  o.verify_outputs = verify == Verify::kOutputs;
  return o;
}

replay::ReplayOptions quickOptions() { return replayOptions(1, 2, Verify::kOutputs); }

replay::ReplayResult replayLocal(const trace::Trace& t, const replay::ReplayOptions& options,
                                 replay::ReplayDiagnostics* diag) {
  const std::unique_ptr<replay::Communicator> comm = replay::makeLocalCommunicator();
  return replay::replayTrace(t, options, *comm, diag);
}

}  // namespace etb::test
