// SPDX-License-Identifier: MIT
#include "core/trace_io.h"

// TODO(stub): being written.
