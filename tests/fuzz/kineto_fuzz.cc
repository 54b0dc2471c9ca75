// SPDX-License-Identifier: MIT
//
// libFuzzer target: profiler trace bytes -> linkKinetoText against a small
// fixed trace whose rf_ids overlap the seeds' ids, so the join, the kernel
// attachment and the iteration timing all run. InputError is the expected
// answer to bad input; anything else escaping is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/base/error.h"
#include "core/kineto/kineto_linker.h"
#include "core/model/trace.h"

namespace {
etb::trace::Trace makeTrace() {
  using etb::trace::NodeKind;
  etb::trace::Trace t;
  for (uint64_t id = 2; id < 200; ++id) {
    etb::trace::Node n;
    n.id = id;
    n.parent = id == 2 ? 0 : 2;
    n.rf_id = id;
    n.kind = id % 7 == 0 ? NodeKind::kLabel : NodeKind::kOperator;
    n.name = t.strings.intern(id == 3 ? "ProfilerStep#1" : "aten::mm");
    t.nodes.push_back(n);
  }
  t.finalize();
  return t;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const etb::trace::Trace kBase = makeTrace();
  etb::trace::Trace trace = kBase;
  try {
    etb::trace::linkKinetoText(
        trace, std::string(reinterpret_cast<const char*>(data), size), "fuzz.kineto.json");
  } catch (const etb::InputError&) {
  }
  return 0;
}
