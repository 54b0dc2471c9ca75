// SPDX-License-Identifier: MIT
//
// Finds the top level of an ET JSON document and cuts its "nodes" array
// into chunks at element boundaries, without parsing, so the reader can
// parse one chunk at a time instead of holding a DOM of the whole file.
// It only has to be right for valid JSON: every byte still goes through
// simdjson (the header and each chunk), which rejects whatever this scan
// let through, and the reader then falls back to the whole-document path.
#include <array>

#include "core/pytorch_et/et_json_detail.h"

namespace etb::trace::detail {
namespace {

// Bytes the container scan stops at; everything else is skipped.
constexpr std::array<bool, 256> stops(bool in_string) {
  std::array<bool, 256> t{};
  if (in_string) {
    t['"'] = t['\\'] = true;
  } else {
    t['"'] = t['{'] = t['}'] = t['['] = t[']'] = t[','] = true;
  }
  return t;
}
constexpr std::array<bool, 256> kStringStops = stops(true);
constexpr std::array<bool, 256> kContainerStops = stops(false);

bool isSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

class Scanner {
 public:
  Scanner(std::string_view s, size_t chunk_bytes, NodeSplit* out)
      : p_(s.data()), n_(s.size()), chunk_bytes_(chunk_bytes), out_(out) {}

  bool run() {
    ws();
    if (!at('{')) return false;
    ++i_;
    bool seen_nodes = false;
    for (;;) {
      ws();
      if (!at('"')) return false;
      const size_t key_start = i_ + 1;
      bool escaped = false;
      if (!string(&escaped) || escaped) return false;  // "node\u0073" is left to simdjson
      const std::string_view key(p_ + key_start, i_ - 1 - key_start);
      ws();
      if (!at(':')) return false;
      ++i_;
      ws();
      if (key == "nodes") {
        if (seen_nodes || !at('[')) return false;
        seen_nodes = true;
        if (!container(true)) return false;
      } else if (!value()) {
        return false;
      }
      ws();
      if (at(',')) {
        ++i_;
      } else if (at('}')) {
        ++i_;
        break;
      } else {
        return false;
      }
    }
    ws();
    return seen_nodes && i_ == n_;
  }

 private:
  bool at(char c) const { return i_ < n_ && p_[i_] == c; }

  void ws() {
    while (i_ < n_ && isSpace(p_[i_])) ++i_;
  }

  // At '"'; leaves i_ just past the closing quote.
  bool string(bool* escaped) {
    ++i_;
    for (;;) {
      while (i_ < n_ && !kStringStops[static_cast<unsigned char>(p_[i_])]) ++i_;
      if (i_ >= n_) return false;
      if (p_[i_] == '"') {
        ++i_;
        return true;
      }
      *escaped = true;
      i_ += 2;
    }
  }

  bool value() {
    if (at('"')) {
      bool escaped = false;
      return string(&escaped);
    }
    if (at('{') || at('[')) return container(false);
    const size_t start = i_;
    while (i_ < n_ && !isSpace(p_[i_]) && p_[i_] != ',' && p_[i_] != '}' && p_[i_] != ']') ++i_;
    return i_ > start;
  }

  // At '{' or '['; skips the balanced container. With `nodes`, records a cut
  // at the first depth-1 comma after each chunk_bytes_ of the array.
  bool container(bool nodes) {
    size_t depth = 0, commas = 0, since = 0;
    if (nodes) out_->cuts.push_back(i_);
    for (;;) {
      while (i_ < n_ && !kContainerStops[static_cast<unsigned char>(p_[i_])]) ++i_;
      if (i_ >= n_) return false;
      switch (p_[i_]) {
        case '"': {
          bool escaped = false;
          if (!string(&escaped)) return false;
          continue;
        }
        case '{':
        case '[':
          ++depth;
          break;
        case '}':
        case ']':
          if (--depth == 0) {
            if (nodes) closeNodes(commas, since);
            ++i_;
            return true;
          }
          break;
        default:  // ','
          if (nodes && depth == 1) {
            ++commas;
            ++since;
            if (i_ - out_->cuts.back() >= chunk_bytes_) {
              out_->counts.push_back(since);
              out_->cuts.push_back(i_);
              since = 0;
            }
          }
      }
      ++i_;
    }
  }

  // The last chunk ends at the array's ']'. With no comma at all the array
  // holds one element, or none when only whitespace lies inside.
  void closeNodes(size_t commas, size_t since) {
    size_t last = since + 1;
    if (commas == 0) {
      last = 0;
      for (size_t k = out_->cuts.back() + 1; k < i_; ++k) {
        if (!isSpace(p_[k])) last = 1;
      }
    }
    out_->cuts.push_back(i_);
    out_->counts.push_back(last);
    out_->count = commas + (last == 0 ? 0 : 1);
  }

  const char* p_;
  size_t n_;
  size_t i_ = 0;
  size_t chunk_bytes_;
  NodeSplit* out_;
};

}  // namespace

bool splitNodes(std::string_view text, size_t chunk_bytes, NodeSplit* out) {
  *out = NodeSplit{};
  return Scanner(text, chunk_bytes == 0 ? 1 : chunk_bytes, out).run();
}

}  // namespace etb::trace::detail
