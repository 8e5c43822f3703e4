// What the report's SVG charts share: text escaping, log-scaled axes over
// whole decades, the decade grid with its tick labels, and the frame. No
// dependencies, deterministic text (svg_scatter.h, svg_lines.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace v41sim {

std::string svg_escape(const std::string& text);

// Values to pixels on a log10 scale over whole decades: [10^lo, 10^hi] onto
// [from, from + length], upward (y) when `flip`.
struct LogAxis {
  double log_lo = 0;
  double log_hi = 1;
  double from = 0;
  double length = 1;
  bool flip = false;
  // The decades around [lo, hi] (one decade at least; 1..10 when lo > hi).
  static LogAxis spanning(double lo, double hi, double from, double length, bool flip);
  double operator()(double value) const;
  // Where the grid and its labels go: each decade, and 2 and 5 times each on an
  // axis of one or two decades.
  std::vector<double> ticks() const;
};

// "<svg ...>", a white ground and the title centred on top.
std::string svg_open(double width, double height, const std::string& title);
// Grid lines at each decade of both axes, labelled with `label(value)`.
std::string svg_decade_grid(const LogAxis& x, const LogAxis& y, std::string (*x_label)(double),
                            std::string (*y_label)(double));
// Axis titles: under the x axis and turned along the y axis.
std::string svg_axis_titles(const LogAxis& x, const LogAxis& y, const std::string& x_title,
                            const std::string& y_title);

// The series colours the charts share, in turn (the i-th series, wrapping).
const char* series_color(std::size_t i);

// Tick labels: "{:g}" as is, and token counts as 1K, 10K, 1M.
std::string plain_tick(double value);
std::string tokens_tick(double value);

}  // namespace v41sim
