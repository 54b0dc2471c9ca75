// SPDX-License-Identifier: MIT
#include "replayer/report_svg.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "replayer/report_util.h"

namespace etb::replay::detail {
namespace {
constexpr const char* kReplayColor = "#3b6fd6";
constexpr const char* kOriginalColor = "#9aa3ad";

// A "nice" upper bound (1, 2 or 5 times a power of ten) for the axis.
double niceCeil(double v) {
  if (v <= 0) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= v) return m * p;
  }
  return 10 * p;
}

// Nearest-rank percentile of the samples; min/max when there are none.
double percentile(const Distribution& d, double q) {
  if (d.samples.empty()) return q < 0.5 ? d.min : d.max;
  std::vector<double> sorted = d.samples;
  std::sort(sorted.begin(), sorted.end());
  const auto i = static_cast<size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

std::string fmt(double v) {
  const double a = std::abs(v);
  if (a == 0) return "0";
  return formatFixed(v, a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
}

// Vertical grid lines with labels at `divisions` equal steps from lo to hi,
// for an axis that starts at x0 and is `width` wide.
void axis(std::ostringstream& s, double lo, double hi, int x0, int width,
          int y_top, int y_bottom, const char* unit, int divisions = 4) {
  for (int i = 0; i <= divisions; ++i) {
    const double x = x0 + width * i / static_cast<double>(divisions);
    s << "<line x1='" << x << "' x2='" << x << "' y1='" << y_top << "' y2='"
      << y_bottom << "' stroke='#e3e6ea'/>";
    s << "<text x='" << x << "' y='" << y_bottom + 14
      << "' text-anchor='middle' class='tick'>"
      << fmt(lo + (hi - lo) * i / divisions) << "</text>";
  }
  s << "<text x='" << x0 + width << "' y='" << y_bottom + 30
    << "' text-anchor='end' class='tick'>" << unit << "</text>";
}
}  // namespace

std::string htmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string kindBarChart(const std::vector<KindStat>& kinds) {
  constexpr int kLabelW = 260, kBarW = 560, kRowH = 30, kTop = 10;
  double top = 0;
  for (const KindStat& k : kinds) {
    top = std::max({top, k.replay_us, k.original_us});
  }
  // Axis and labels in the unit the longest bar reads best in (a seconds-long
  // op would otherwise print as an eight-digit number of microseconds).
  const TimeUnit unit = timeUnitFor(top);
  top = niceCeil(top / unit.us_per_unit) * unit.us_per_unit;
  const std::string axis_label = std::string(unit.name) + " per iteration";
  const int plot_h = kTop + kRowH * static_cast<int>(kinds.size());
  std::ostringstream s;
  s << "<svg role='img' width='"
    << kLabelW + kBarW + 80 << "' height='" << plot_h + 40 << "'>";
  axis(s, 0, top / unit.us_per_unit, kLabelW, kBarW, kTop, plot_h, axis_label.c_str());
  for (size_t i = 0; i < kinds.size(); ++i) {
    const KindStat& k = kinds[i];
    const int y = kTop + kRowH * static_cast<int>(i);
    std::string name = k.name.size() > 40
                           ? "..." + k.name.substr(k.name.size() - 37)
                           : k.name;
    s << "<text x='" << kLabelW - 8 << "' y='" << y + 18
      << "' text-anchor='end' class='label'><title>" << htmlEscape(k.name)
      << "</title>" << htmlEscape(name) << "</text>";
    auto bar = [&](double v, int dy, const char* color, const char* what) {
      const double w = std::max(1.0, kBarW * v / top);
      s << "<rect x='" << kLabelW << "' y='" << y + dy << "' width='" << w
        << "' height='11' fill='" << color << "'><title>" << what << " "
        << formatDuration(v) << "</title></rect>";
      s << "<text x='" << kLabelW + w + 4 << "' y='" << y + dy + 10
        << "' class='val'>" << formatDuration(v) << "</text>";
    };
    bar(k.replay_us, 3, kReplayColor, "replay");
    if (k.original_us >= 0) bar(k.original_us, 15, kOriginalColor, "original");
  }
  s << "</svg>";
  return s.str();
}

std::string iterationStripChart(const std::vector<Series>& series) {
  constexpr int kLabelW = 90, kW = 700, kRowH = 56, kTop = 10;
  double lo = 1e300, hi = 0;
  for (const Series& se : series) {
    lo = std::min(lo, se.dist->min);
    hi = std::max(hi, se.dist->max);
  }
  // Start at zero unless the samples sit far from it, so a small spread is
  // still visible while equal-looking medians are not exaggerated; then snap
  // to four round ticks.
  lo = lo > 0.5 * hi ? lo * 0.95 : 0;
  if (hi <= lo) hi = lo + 1;
  const double step = niceCeil((hi - lo) / 4);
  lo = std::floor(lo / step) * step;
  hi = std::ceil(hi / step) * step;
  const int divisions = static_cast<int>(std::lround((hi - lo) / step));
  auto xOf = [&](double v) { return kLabelW + kW * (v - lo) / (hi - lo); };
  const int plot_h = kTop + kRowH * static_cast<int>(series.size());
  std::ostringstream s;
  s << "<svg role='img' width='"
    << kLabelW + kW + 30 << "' height='" << plot_h + 40 << "'>";
  // Samples are ms; the axis reads in the unit that suits the longest one.
  const TimeUnit unit = timeUnitFor(hi * 1e3);
  const double f = 1e3 / unit.us_per_unit;
  const std::string axis_label = std::string(unit.name) + " per iteration";
  axis(s, lo * f, hi * f, kLabelW, kW, kTop, plot_h, axis_label.c_str(), divisions);
  for (size_t i = 0; i < series.size(); ++i) {
    const Distribution& d = *series[i].dist;
    const std::string& c = series[i].color;
    const double y = kTop + kRowH * static_cast<double>(i) + kRowH / 2.0;
    s << "<text x='" << kLabelW - 8 << "' y='" << y + 4
      << "' text-anchor='end' class='label'>" << htmlEscape(series[i].label)
      << "</text>";
    s << "<line x1='" << xOf(d.min) << "' x2='" << xOf(d.max) << "' y1='" << y
      << "' y2='" << y << "' stroke='" << c << "'/>";
    const double p10 = percentile(d, 0.1), p90 = percentile(d, 0.9);
    s << "<rect x='" << xOf(p10) << "' y='" << y - 12 << "' width='"
      << std::max(1.0, xOf(p90) - xOf(p10)) << "' height='24' fill='" << c
      << "' fill-opacity='0.15' stroke='" << c << "'><title>p10 "
      << formatDuration(p10 * 1e3) << " .. p90 " << formatDuration(p90 * 1e3)
      << "</title></rect>";
    s << "<line x1='" << xOf(d.median) << "' x2='" << xOf(d.median)
      << "' y1='" << y - 16 << "' y2='" << y + 16 << "' stroke='" << c
      << "' stroke-width='3'><title>median " << formatDuration(d.median * 1e3)
      << "</title></line>";
    // Deterministic jitter so overlapping samples stay distinguishable.
    for (size_t j = 0; j < d.samples.size(); ++j) {
      const double jitter = static_cast<double>((j * 7) % 11) - 5;
      s << "<circle cx='" << xOf(d.samples[j]) << "' cy='" << y + jitter
        << "' r='2.5' fill='" << c << "' fill-opacity='0.7'/>";
    }
  }
  s << "</svg>";
  return s.str();
}

}  // namespace etb::replay::detail
