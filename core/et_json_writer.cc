// SPDX-License-Identifier: MIT
#include "core/et_json_writer.h"

// TODO(stub): being written.
