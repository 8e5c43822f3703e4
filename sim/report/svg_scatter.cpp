#include "sim/report/svg_scatter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/report/svg_plot.h"

namespace v41sim {
namespace {

constexpr double kSize = 480;  // plot area, pixels
constexpr double kMargin = 60;

}  // namespace

std::string svg_scatter(const std::string& title, const std::vector<ScatterPoint>& points, double band_pct) {
  double lo = INFINITY, hi = 0;
  for (const ScatterPoint& p : points) {
    lo = std::min({lo, p.reference, p.predicted});
    hi = std::max({hi, p.reference, p.predicted});
  }
  // One range for both axes, so y = x is the diagonal.
  const LogAxis x = LogAxis::spanning(lo, hi, kMargin, kSize, false);
  const LogAxis y = LogAxis::spanning(lo, hi, kMargin, kSize, true);
  const double w = kSize + 2 * kMargin;
  std::string svg = svg_open(w, w, title) + svg_decade_grid(x, y, plain_tick, plain_tick);
  // y = x and the tolerance band.
  const double a = std::pow(10.0, x.log_lo), b = std::pow(10.0, x.log_hi);
  const double f = 1.0 + band_pct / 100.0;
  svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n",
                     x(a), y(a), x(b), y(b));
  for (double factor : {f, 1.0 / f}) {
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#999\" stroke-dasharray=\"4 "
        "4\"/>\n",
        x(a), y(std::max(a, a * factor)), x(std::min(b, b / factor)), y(std::min(b, b / factor) * factor));
  }
  for (const ScatterPoint& p : points) {
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\" stroke=\"#1f4e9c\"><title>{}: published "
        "{:g}, "
        "predicted {:.4g}</title></circle>\n",
        x(p.reference), y(p.predicted), p.within ? "#1f4e9c" : "white", svg_escape(p.label), p.reference,
        p.predicted);
  }
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\">filled: within ±{:g}% (dashed band); hollow: outside</text>\n",
      kMargin + 8, kMargin + 16, band_pct);
  return svg + svg_axis_titles(x, y, "published", "predicted") + "</svg>\n";
}

}  // namespace v41sim
