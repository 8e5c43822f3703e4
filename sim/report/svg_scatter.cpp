#include "sim/report/svg_scatter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/report/svg_plot.h"

namespace v41sim {
namespace {

constexpr double kSize = 480;  // plot area, pixels
constexpr double kMargin = 60;
constexpr double kCharWidth = 6.5;  // of a 12-px sans-serif legend text, about

// The points' series in order of first appearance.
std::vector<std::string> series_of(const std::vector<ScatterPoint>& points) {
  std::vector<std::string> names;
  for (const ScatterPoint& p : points) {
    if (std::find(names.begin(), names.end(), p.series) == names.end()) names.push_back(p.series);
  }
  return names;
}

std::string tolerance_lines(const LogAxis& x, const LogAxis& y, double band_pct) {
  const double a = std::pow(10.0, x.log_lo), b = std::pow(10.0, x.log_hi);
  const double f = 1.0 + band_pct / 100.0;
  std::string svg =
      fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n", x(a),
                  y(a), x(b), y(b));
  for (double factor : {f, 1.0 / f}) {
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#999\" stroke-dasharray=\"4 "
        "4\"/>\n",
        x(a), y(std::max(a, a * factor)), x(std::min(b, b / factor)), y(std::min(b, b / factor) * factor));
  }
  return svg;
}

}  // namespace

std::string svg_scatter(const ScatterChart& chart, const std::vector<ScatterPoint>& points) {
  double lo = INFINITY, hi = 0;
  for (const ScatterPoint& p : points) {
    lo = std::min({lo, p.reference, p.predicted});
    hi = std::max({hi, p.reference, p.predicted});
  }
  const std::vector<std::string> series = series_of(points);
  const bool legend = series.size() > 1;
  std::size_t longest = 0;
  for (const std::string& name : series) longest = std::max(longest, name.size());
  const double legend_w = legend ? 40 + kCharWidth * static_cast<double>(longest) : 0;
  // One range for both axes, so y = x is the diagonal.
  const LogAxis x = LogAxis::spanning(lo, hi, kMargin, kSize, false);
  const LogAxis y = LogAxis::spanning(lo, hi, kMargin, kSize, true);
  const double side = kSize + 2 * kMargin;
  std::string svg = svg_open(side + legend_w, side, chart.title) +
                    svg_decade_grid(x, y, plain_tick, plain_tick) + tolerance_lines(x, y, chart.band_pct);
  for (const ScatterPoint& p : points) {
    const auto k =
        static_cast<std::size_t>(std::find(series.begin(), series.end(), p.series) - series.begin());
    const char* color = series_color(k);
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\" stroke=\"{}\"><title>{}: {} {:g}, predicted "
        "{:.4g}</title></circle>\n",
        x(p.reference), y(p.predicted), p.within ? color : "white", color, svg_escape(p.label),
        svg_escape(chart.reference_name), p.reference, p.predicted);
  }
  for (std::size_t k = 0; legend && k < series.size(); ++k) {
    const double lx = side + 10, ly = kMargin + 10 + 20 * static_cast<double>(k);
    svg +=
        fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\"/>\n", lx, ly, series_color(k));
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", lx + 12, ly + 4, svg_escape(series[k]));
  }
  const std::string within =
      chart.tolerance_varies
          ? fmt::format("filled: within its own tolerance (the widest, ±{:g}%, dashed)", chart.band_pct)
          : fmt::format("filled: within ±{:g}% (dashed band)", chart.band_pct);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}; hollow: outside</text>\n", kMargin + 8,
                     kMargin + 16, within);
  return svg + svg_axis_titles(x, y, chart.reference_name, "predicted") + "</svg>\n";
}

}  // namespace v41sim
