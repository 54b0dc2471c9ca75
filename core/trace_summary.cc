// SPDX-License-Identifier: MIT
#include "core/trace_summary.h"

// TODO(stub): being written.
