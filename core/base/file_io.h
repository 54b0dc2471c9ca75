// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace etb {

// Reads a whole file; gzip input (magic 1f 8b) is inflated transparently.
// `padding` extra zero bytes are reserved after the content (simdjson needs
// them) without changing size(). Throws InputError naming the file when it is
// missing, unreadable, or a corrupt/truncated gzip stream.
std::string readFileMaybeGzip(const std::string& path, size_t padding = 0);

// Streams a file's bytes, inflating gzip (magic 1f 8b) on the way, so a
// reader can parse a multi-GB trace without holding its text. Errors are the
// ones readFileMaybeGzip throws (InputError naming the file).
class FileReader {
 public:
  explicit FileReader(const std::string& path);
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  // Up to `max` bytes of content into `out`; 0 only at the end.
  size_t read(char* out, size_t max);
  uint64_t fileBytes() const;      // size on disk
  uint64_t consumedBytes() const;  // of the file on disk, read so far

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes `data` to `path`, gzip-compressed when the path ends in ".gz".
// Throws RuntimeError on failure.
void writeFileMaybeGzip(const std::string& path, const std::string& data);

// A per-rank file name: `pattern` with its first "%d" replaced by `rank`
// ("k_%d.json.gz" -> "k_3.json.gz"); the pattern itself when it has none.
std::string rankFile(const std::string& pattern, size_t rank);

// True when stderr is a terminal (progress output is shown only then).
bool stderrIsTerminal();

}  // namespace etb
