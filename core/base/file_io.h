// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <string>

namespace etb {

// Reads a whole file; gzip input (magic 1f 8b) is inflated transparently.
// `padding` extra zero bytes are reserved after the content (simdjson needs
// them) without changing size(). Throws InputError naming the file when it is
// missing, unreadable, or a corrupt/truncated gzip stream.
std::string readFileMaybeGzip(const std::string& path, size_t padding = 0);

// Writes `data` to `path`, gzip-compressed when the path ends in ".gz".
// Throws RuntimeError on failure.
void writeFileMaybeGzip(const std::string& path, const std::string& data);

// True when stderr is a terminal (progress output is shown only then).
bool stderrIsTerminal();

}  // namespace etb
