// SPDX-License-Identifier: MIT
#include "core/base/file_io.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <memory>

#include "core/base/error.h"

namespace etb {
namespace {
struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

std::string readRaw(const std::string& path, size_t padding) {
  FilePtr f(std::fopen(path.c_str(), "rb"));
  if (!f) ETB_INPUT_ERROR(SourceLoc{path}, "cannot open: ", std::strerror(errno));
  std::string data;
  std::fseek(f.get(), 0, SEEK_END);
  const long size = std::ftell(f.get());
  std::fseek(f.get(), 0, SEEK_SET);
  if (size < 0) ETB_INPUT_ERROR(SourceLoc{path}, "cannot determine size (not a regular file?)");
  data.reserve(static_cast<size_t>(size) + padding);
  data.resize(static_cast<size_t>(size));
  if (size > 0 && std::fread(data.data(), 1, data.size(), f.get()) != data.size()) {
    ETB_INPUT_ERROR(SourceLoc{path}, "read failed: ", std::strerror(errno));
  }
  return data;
}

bool isGzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string inflateGzip(const std::string& path, const std::string& in, size_t padding) {
  z_stream zs{};
  // 16 + MAX_WBITS: expect a gzip header; concatenated members are handled below.
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) ETB_RUNTIME_ERROR("zlib init failed");
  std::string out;
  out.reserve(in.size() * 8 + padding);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (true) {
    if (out.capacity() - out.size() < 65536) out.reserve(out.capacity() * 2 + 65536);
    const size_t before = out.size();
    const size_t room = out.capacity() - before;
    out.resize(before + room);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + before);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(room, 1u << 30));
    rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(before + (std::min<size_t>(room, 1u << 30) - zs.avail_out));
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      inflateReset(&zs);  // another gzip member follows
      continue;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) break;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) break;  // input ended early
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    ETB_INPUT_ERROR(SourceLoc{path}, "corrupt or truncated gzip stream (zlib: ",
                    zs.msg != nullptr ? zs.msg : (rc == Z_BUF_ERROR ? "unexpected end" : "error"),
                    ")");
  }
  out.reserve(out.size() + padding);
  return out;
}
}  // namespace

std::string readFileMaybeGzip(const std::string& path, size_t padding) {
  std::string raw = readRaw(path, padding);
  if (!isGzip(raw)) return raw;
  return inflateGzip(path, raw, padding);
}

void writeFileMaybeGzip(const std::string& path, const std::string& data) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb6");
    if (f == nullptr) ETB_RUNTIME_ERROR(path, ": cannot open for writing");
    size_t done = 0;
    while (done < data.size()) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(data.size() - done, 1u << 30));
      if (gzwrite(f, data.data() + done, chunk) != static_cast<int>(chunk)) {
        gzclose(f);
        ETB_RUNTIME_ERROR(path, ": write failed");
      }
      done += chunk;
    }
    if (gzclose(f) != Z_OK) ETB_RUNTIME_ERROR(path, ": close failed");
    return;
  }
  FilePtr f(std::fopen(path.c_str(), "wb"));
  if (!f) ETB_RUNTIME_ERROR(path, ": cannot open for writing: ", std::strerror(errno));
  if (!data.empty() && std::fwrite(data.data(), 1, data.size(), f.get()) != data.size()) {
    ETB_RUNTIME_ERROR(path, ": write failed: ", std::strerror(errno));
  }
}

bool stderrIsTerminal() { return isatty(STDERR_FILENO) != 0; }

}  // namespace etb
