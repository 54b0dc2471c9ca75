// SPDX-License-Identifier: MIT
#include "core/base/file_io.h"

#include <unistd.h>

// Generated programs build without zlib where it is missing (-DETB_WITH_ZLIB=0):
// they then refuse .gz paths by name. etbench itself always has it.
#ifndef ETB_WITH_ZLIB
#define ETB_WITH_ZLIB 1
#endif
#if ETB_WITH_ZLIB
#include <zlib.h>
#endif

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

#if ETB_WITH_ZLIB
[[noreturn]] void gzipError(const std::string& path, const z_stream& zs, int rc) {
  ETB_INPUT_ERROR(SourceLoc{path}, "corrupt or truncated gzip stream (zlib: ",
                  zs.msg != nullptr ? zs.msg : (rc == Z_BUF_ERROR ? "unexpected end" : "error"), ")");
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
  const z_stream copy = zs;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) gzipError(path, copy, rc);
  out.reserve(out.size() + padding);
  return out;
}
#else
[[noreturn]] void noZlib(const std::string& path) {
  ETB_INPUT_ERROR(SourceLoc{path}, "gzip needs zlib, and this program was built without it");
}
#endif
}  // namespace

std::string readFileMaybeGzip(const std::string& path, size_t padding) {
  std::string raw = readRaw(path, padding);
  if (!isGzip(raw)) return raw;
#if ETB_WITH_ZLIB
  return inflateGzip(path, raw, padding);
#else
  noZlib(path);
#endif
}

// ---------------------------------------------------------------- FileReader
struct FileReader::Impl {
  std::string path;
  FilePtr file;
  uint64_t size = 0;
  uint64_t consumed = 0;
  bool gzip = false;
  std::string in;  // gzip input buffer; first the two sniffed bytes
  size_t sniff_at = 0, sniffed = 0;  // plain files: sniffed bytes not yet handed out

  size_t raw(char* out, size_t max) {
    const size_t n = std::fread(out, 1, max, file.get());
    if (n < max && std::ferror(file.get())) {
      ETB_INPUT_ERROR(SourceLoc{path}, "read failed: ", std::strerror(errno));
    }
    consumed += n;
    return n;
  }

#if ETB_WITH_ZLIB
  bool ended = false;  // gzip: the last member is complete
  z_stream zs{};

  ~Impl() {
    if (gzip) inflateEnd(&zs);
  }

  void startGzip(size_t head) {
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) ETB_RUNTIME_ERROR("zlib init failed");
    zs.next_in = reinterpret_cast<Bytef*>(in.data());
    zs.avail_in = static_cast<uInt>(head);
  }

  // Refills the gzip input; false at the end of the file.
  bool refill() {
    const size_t n = raw(in.data(), in.size());
    zs.next_in = reinterpret_cast<Bytef*>(in.data());
    zs.avail_in = static_cast<uInt>(n);
    return n > 0;
  }

  size_t inflateSome(char* out, size_t max) {
    zs.next_out = reinterpret_cast<Bytef*>(out);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(max, 1u << 30));
    const uInt room = zs.avail_out;
    while (!ended && zs.avail_out == room) {
      if (zs.avail_in == 0 && !refill()) gzipError(path, zs, Z_BUF_ERROR);  // ended early
      const int rc = inflate(&zs, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        // Another member may follow (concatenated gzip), as readFileMaybeGzip allows.
        if (zs.avail_in == 0 && !refill()) {
          ended = true;
        } else {
          inflateReset(&zs);
        }
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        gzipError(path, zs, rc);
      }
    }
    return room - zs.avail_out;
  }
#else
  void startGzip(size_t) { noZlib(path); }
  size_t inflateSome(char*, size_t) { noZlib(path); }
#endif
};

FileReader::FileReader(const std::string& path) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = path;
  m.file.reset(std::fopen(path.c_str(), "rb"));
  if (!m.file) ETB_INPUT_ERROR(SourceLoc{path}, "cannot open: ", std::strerror(errno));
  std::fseek(m.file.get(), 0, SEEK_END);
  const long size = std::ftell(m.file.get());
  std::fseek(m.file.get(), 0, SEEK_SET);
  if (size < 0) ETB_INPUT_ERROR(SourceLoc{path}, "cannot determine size (not a regular file?)");
  m.size = static_cast<uint64_t>(size);
  m.in.resize(size_t{1} << 18);
  const size_t head = m.raw(m.in.data(), 2);
  m.gzip = head == 2 && static_cast<unsigned char>(m.in[0]) == 0x1f && static_cast<unsigned char>(m.in[1]) == 0x8b;
  if (m.gzip) {
    m.startGzip(head);
  } else {
    m.sniffed = head;  // plain files hand these bytes out first
  }
}

FileReader::~FileReader() = default;

size_t FileReader::read(char* out, size_t max) {
  Impl& m = *impl_;
  if (max == 0) return 0;
  if (m.gzip) return m.inflateSome(out, max);
  size_t n = 0;
  if (m.sniffed > 0) {
    n = std::min(m.sniffed, max);
    std::memcpy(out, m.in.data() + m.sniff_at, n);
    m.sniff_at += n;
    m.sniffed -= n;
  }
  return n + m.raw(out + n, max - n);
}

uint64_t FileReader::fileBytes() const { return impl_->size; }
uint64_t FileReader::consumedBytes() const { return impl_->consumed; }

void writeFileMaybeGzip(const std::string& path, const std::string& data) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (gz) {
#if !ETB_WITH_ZLIB
    noZlib(path);
#else
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
#endif
  }
  FilePtr f(std::fopen(path.c_str(), "wb"));
  if (!f) ETB_RUNTIME_ERROR(path, ": cannot open for writing: ", std::strerror(errno));
  if (!data.empty() && std::fwrite(data.data(), 1, data.size(), f.get()) != data.size()) {
    ETB_RUNTIME_ERROR(path, ": write failed: ", std::strerror(errno));
  }
}

bool stderrIsTerminal() { return isatty(STDERR_FILENO) != 0; }

std::string rankFile(const std::string& pattern, size_t rank) {
  const size_t at = pattern.find("%d");
  if (at == std::string::npos) return pattern;
  return pattern.substr(0, at) + std::to_string(rank) + pattern.substr(at + 2);
}

}  // namespace etb
