// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <string_view>

#include "core/model/trace.h"
#include "core/trace_io.h"

namespace etb::trace {

// PyTorch Execution Trace JSON, schemas 1.0.0 to 1.1.1 (flat and attrs
// layouts), plain or gzip. See shared/docs/pytorch_et_format.md.
Trace readEtJson(const std::string& path, const ReadOptions& options = {});

// Same, from text already in memory; `name` is used in error messages.
// `text` may be modified in place by the repair pass.
Trace readEtJsonText(std::string text, const std::string& name,
                     const ReadOptions& options = {});

}  // namespace etb::trace
