// SPDX-License-Identifier: MIT
#include "core/et_json_reader.h"

// TODO(stub): being written.
