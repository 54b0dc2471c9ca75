// SPDX-License-Identifier: MIT
//
// Inline SVG charts for the HTML report, generated here so the page needs no
// script, font or network.
#pragma once

#include <string>
#include <vector>

#include "replayer/replay_result.h"

namespace etb::replay::detail {

// Escapes &, <, >, " and ' so any trace string is safe in HTML text and
// attribute values (and in inline SVG).
std::string htmlEscape(const std::string& text);

// Horizontal grouped bars: for each kind, replay time beside the original's
// (when known), on one shared linear scale in microseconds.
std::string kindBarChart(const std::vector<KindStat>& kinds);

// The spread of iteration times: one row per series (replay, original), each
// a box from min to max with the p10..p90 band, the median tick and every
// sample as a dot, on one shared axis in milliseconds.
struct Series {
  std::string label;
  const Distribution* dist;
  std::string color;
};
std::string iterationStripChart(const std::vector<Series>& series);

}  // namespace etb::replay::detail
