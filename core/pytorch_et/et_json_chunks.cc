// SPDX-License-Identifier: MIT
//
// Finds the top level of an ET JSON stream and cuts its "nodes" array into
// chunks at element boundaries, without parsing. The array is nearly all of
// a trace, so its scan runs 64 bytes at a time: bit masks of quotes and
// brackets (AVX2 or SSE2 where there is one), the in-string bytes from a prefix XOR
// of the quote bits, and depth from popcounts; only a block where a cut or
// the array's end can fall is walked bit by bit. Blocks holding a backslash
// (rare in traces) go byte by byte, which keeps escapes simple.
#include <cstring>

#include "core/pytorch_et/et_json_detail.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

namespace etb::trace::detail {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// One 64-byte block classified: structural bits outside strings, their
// counts, and whether the block ends inside a string.
struct Block {
  uint64_t open = 0, close = 0, comma = 0;
  int opens = 0, closes = 0;
  bool backslash = false;
  bool in_string = false;  // at the block's last byte
};

// Bit i = XOR of bits 0..i: set from an opening quote up to its closing one.
inline uint64_t prefixXor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

// Without -mpopcnt, __builtin_popcountll is a library call.
inline int swarPopcount(uint64_t x) {
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return static_cast<int>((x * 0x0101010101010101ull) >> 56);
}

// `open`/`close` hold both bracket kinds: '[' and '{' (and ']' and '}')
// differ only in bit 0x20, so one compare after OR-ing it in finds both.
template <bool kHardware>
inline Block finish(uint64_t quote, uint64_t open, uint64_t close, uint64_t comma, bool in_string) {
  Block b;
  const uint64_t inside = prefixXor(quote) ^ (in_string ? ~uint64_t{0} : 0);
  b.in_string = (inside >> 63) != 0;
  b.open = open & ~inside;
  b.close = close & ~inside;
  b.comma = comma & ~inside;
  if (kHardware) {
    b.opens = __builtin_popcountll(b.open);
    b.closes = __builtin_popcountll(b.close);
  } else {
    b.opens = swarPopcount(b.open);
    b.closes = swarPopcount(b.close);
  }
  return b;
}

Block classifyPortable(const char* p, bool in_string) {
  uint64_t quote = 0, backslash = 0, open = 0, close = 0, comma = 0;
#if defined(__SSE2__)
  const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
  const __m128i o = _mm_set1_epi8('{'), c = _mm_set1_epi8('}'), m = _mm_set1_epi8(',');
  const __m128i bit5 = _mm_set1_epi8(0x20);
  auto bits = [](__m128i eq, int k) {
    return static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(eq))) << (16 * k);
  };
  for (int k = 0; k < 4; ++k) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const __m128i folded = _mm_or_si128(x, bit5);
    quote |= bits(_mm_cmpeq_epi8(x, q), k);
    backslash |= bits(_mm_cmpeq_epi8(x, bs), k);
    open |= bits(_mm_cmpeq_epi8(folded, o), k);
    close |= bits(_mm_cmpeq_epi8(folded, c), k);
    comma |= bits(_mm_cmpeq_epi8(x, m), k);
  }
#else
  for (int k = 0; k < 64; ++k) {
    const uint64_t bit = uint64_t{1} << k;
    const char ch = p[k];
    if (ch == '"') quote |= bit;
    if (ch == '\\') backslash |= bit;
    if (ch == '{' || ch == '[') open |= bit;
    if (ch == '}' || ch == ']') close |= bit;
    if (ch == ',') comma |= bit;
  }
#endif
  Block b = finish<false>(quote, open, close, comma, in_string);
  b.backslash = backslash != 0;
  return b;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ETB_SCAN_AVX2 1
// Half the compares of the SSE2 path, and popcnt as an instruction; used
// when the CPU has them (checked once at run time).
__attribute__((target("avx2"))) inline uint64_t bits(__m256i eq) {
  return static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(eq)));
}

__attribute__((target("avx2,popcnt"))) Block classifyAvx2(const char* p, bool in_string) {
  const __m256i q = _mm256_set1_epi8('"'), bs = _mm256_set1_epi8('\\');
  const __m256i o = _mm256_set1_epi8('{'), c = _mm256_set1_epi8('}'), m = _mm256_set1_epi8(',');
  const __m256i bit5 = _mm256_set1_epi8(0x20);
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
  const __m256i flo = _mm256_or_si256(lo, bit5), fhi = _mm256_or_si256(hi, bit5);
  const uint64_t backslash = bits(_mm256_or_si256(_mm256_cmpeq_epi8(lo, bs), _mm256_cmpeq_epi8(hi, bs)));
  const uint64_t quote = bits(_mm256_cmpeq_epi8(lo, q)) | bits(_mm256_cmpeq_epi8(hi, q)) << 32;
  const uint64_t open = bits(_mm256_cmpeq_epi8(flo, o)) | bits(_mm256_cmpeq_epi8(fhi, o)) << 32;
  const uint64_t close = bits(_mm256_cmpeq_epi8(flo, c)) | bits(_mm256_cmpeq_epi8(fhi, c)) << 32;
  const uint64_t comma = bits(_mm256_cmpeq_epi8(lo, m)) | bits(_mm256_cmpeq_epi8(hi, m)) << 32;
  Block b = finish<true>(quote, open, close, comma, in_string);
  b.backslash = backslash != 0;
  return b;
}

bool haveAvx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
  return yes;
}
#endif

Block classify(const char* p, bool in_string) {
#if defined(ETB_SCAN_AVX2)
  if (haveAvx2()) return classifyAvx2(p, in_string);
#endif
  return classifyPortable(p, in_string);
}

}  // namespace

NodeScanner::Event NodeScanner::scanHead(const char* p, size_t begin, size_t end, size_t* at) {
  for (size_t i = begin; i < end; ++i) {
    const char c = p[i];
    if (in_string_) {
      if (escape_) {
        escape_ = false;
      } else if (c == '\\') {
        escape_ = true;
        key_escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
        if (depth_ == 1) head_ = Head::kKey;
      } else if (depth_ == 1 && key_.size() < 8) {
        key_ += c;
      }
      continue;
    }
    if (isSpace(c)) continue;
    if (head_ == Head::kNodesColon) {
      head_ = Head::kNone;
      if (c == '[') {
        depth_ = 1;  // from here on: depth inside the array
        *at = i;
        return Event::kNodesStart;
      }
    } else if (head_ == Head::kKey) {
      head_ = c == ':' && key_ == "nodes" && !key_escaped_ ? Head::kNodesColon : Head::kNone;
      if (c == ':') continue;
    }
    if (c == '"') {
      in_string_ = true;
      key_.clear();
      key_escaped_ = false;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      --depth_;
    }
  }
  *at = end;
  return Event::kNeedMore;
}

NodeScanner::Event NodeScanner::scalar(const char* p, size_t begin, size_t end, size_t cut_from, size_t* at) {
  for (size_t i = begin; i < end; ++i) {
    const char c = p[i];
    if (in_string_) {
      if (escape_) {
        escape_ = false;
      } else if (c == '\\') {
        escape_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string_ = true;
        break;
      case '{':
      case '[':
        ++depth_;
        break;
      case '}':
      case ']':
        if (--depth_ == 0) {
          *at = i;
          return Event::kNodesEnd;
        }
        break;
      case ',':
        if (depth_ == 1 && i >= cut_from) {
          *at = i;
          return Event::kCut;
        }
        break;
      default:
        break;
    }
  }
  *at = end;
  return Event::kNeedMore;
}

// One 64-byte block at p + i. False (nothing consumed) when it holds a
// backslash: the caller then scans it byte by byte.
bool NodeScanner::block(const char* p, size_t i, size_t cut_from, Event* ev, size_t* at) {
  const Block b = classify(p + i, in_string_);
  if (b.backslash) return false;
  in_string_ = b.in_string;
  const bool want_cut = i + 63 >= cut_from;
  *ev = Event::kNeedMore;
  // Depth cannot reach 0 here, nor 1 where a cut is wanted: count only.
  if (depth_ - b.closes >= 2 || (depth_ - b.closes >= 1 && !want_cut)) {
    depth_ += b.opens - b.closes;
    return true;
  }
  for (uint64_t bits = b.open | b.close | b.comma; bits != 0; bits &= bits - 1) {
    const uint64_t bit = bits & (~bits + 1);
    const size_t pos = i + static_cast<size_t>(__builtin_ctzll(bits));
    if ((b.open & bit) != 0) {
      ++depth_;
    } else if ((b.close & bit) != 0) {
      if (--depth_ == 0) *ev = Event::kNodesEnd;
    } else if (depth_ == 1 && pos >= cut_from) {
      *ev = Event::kCut;
    }
    if (*ev != Event::kNeedMore) {
      in_string_ = false;  // a structural byte lies outside every string
      *at = pos;
      return true;
    }
  }
  return true;
}

NodeScanner::Event NodeScanner::scanNodes(const char* p, size_t begin, size_t end, size_t cut_from, bool last,
                                          size_t* at, bool simd) {
  size_t i = begin;
  for (; i + 64 <= end; i += 64) {
    Event ev = Event::kNeedMore;
    if (!simd || escape_ || !block(p, i, cut_from, &ev, at)) ev = scalar(p, i, i + 64, cut_from, at);
    if (ev != Event::kNeedMore) return ev;
  }
  if (last && i < end) {
    const Event ev = scalar(p, i, end, cut_from, at);
    if (ev != Event::kNeedMore) return ev;
    i = end;
  }
  *at = i;
  return Event::kNeedMore;
}

}  // namespace etb::trace::detail
