#include "sim/report/svg_lines.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/report/svg_plot.h"

namespace v41sim {
namespace {

constexpr double kWidth = 560;  // plot area, pixels
constexpr double kHeight = 360;
constexpr double kMargin = 70;
constexpr double kLegend = 220;     // room on the right for the legend, at least
constexpr double kCharWidth = 6.5;  // of a 12-px sans-serif legend text, about

}  // namespace

std::string svg_lines(const LineChart& chart, const std::vector<LineSeries>& series) {
  double x_lo = INFINITY, x_hi = 0, y_lo = INFINITY, y_hi = 0;
  for (const LineSeries& s : series) {
    for (const auto& [px, py] : s.points) {
      x_lo = std::min(x_lo, px), x_hi = std::max(x_hi, px);
      y_lo = std::min(y_lo, py), y_hi = std::max(y_hi, py);
    }
  }
  // The legend's text starts 50 px past the plot and should end 10 px inside the picture.
  std::size_t longest = 0;
  for (const LineSeries& s : series) longest = std::max(longest, s.name.size());
  const double legend = std::max(kLegend, kCharWidth * static_cast<double>(longest) + 60 - kMargin);
  const LogAxis x = LogAxis::spanning(x_lo, x_hi, kMargin, kWidth, false);
  const LogAxis y = LogAxis::spanning(y_lo, y_hi, kMargin, kHeight, true);
  std::string svg = svg_open(kWidth + 2 * kMargin + legend, kHeight + 2 * kMargin, chart.title) +
                    svg_decade_grid(x, y, chart.x_in_tokens ? tokens_tick : plain_tick, plain_tick);
  for (std::size_t i = 0; i < series.size(); ++i) {
    const LineSeries& s = series[i];
    const char* color = series_color(static_cast<std::size_t>(s.color));
    const char* dash = s.dotted ? " stroke-dasharray=\"2 4\"" : s.dashed ? " stroke-dasharray=\"6 4\"" : "";
    std::string path;
    for (const auto& [px, py] : s.points)
      path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "" : " ", x(px), y(py));
    svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>\n", path,
                       color, dash);
    for (const auto& [px, py] : s.points) {
      svg += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"><title>{}: {:g}, "
          "{:.4g}</title></circle>\n",
          x(px), y(py), color, svg_escape(s.name), px, py);
    }
    const double legend_x = kMargin + kWidth + 20;
    const double legend_y = kMargin + 10 + 20 * static_cast<double>(i);
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"2\"{}/>\n",
        legend_x, legend_y, legend_x + 24, legend_y, color, dash);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", legend_x + 30, legend_y + 4,
                       svg_escape(s.name));
  }
  return svg + svg_axis_titles(x, y, chart.x_title, chart.y_title) + "</svg>\n";
}

}  // namespace v41sim
