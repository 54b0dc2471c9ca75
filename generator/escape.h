// SPDX-License-Identifier: MIT
//
// Everything from a trace that enters generated code passes through here:
// no crafted name, schema or attribute can end a literal or a comment early,
// splice lines, form a trigraph or inject a directive.
#pragma once

#include <string>
#include <string_view>

namespace etb::gen {

// A C++ narrow string literal holding exactly `bytes` (any bytes, NUL and
// non-UTF-8 included): printable ASCII as itself except " \ ?, the rest as
// \xHH; a literal is closed and reopened ("\x41" "B") where the next
// character is a hex digit, so it is not absorbed into the escape.
std::string cLiteral(std::string_view bytes);

// ETB_S("...") with the literal above: a std::string_view of exact length.
std::string sv(std::string_view bytes);

// Text safe inside a // comment: printable ASCII only (others become '?'),
// no backslash (line splice), no "??" (trigraphs), at most `max` characters
// (the rest elided with "...").
std::string commentText(std::string_view text, size_t max = 160);

// A double as C++ source that reads back to the same value (inf/nan too).
std::string cDouble(double v);

}  // namespace etb::gen
