// A log-log line chart as a standalone SVG: one polyline per series, a dot
// per point with its values as a hover title, and a legend.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace v41sim {

struct LineSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), both > 0
  bool dashed = false;
  int color = 0;        // index into a fixed palette
  bool dotted = false;  // a third line of one color (over dashed)
};

struct LineChart {
  std::string title;
  std::string x_title;
  std::string y_title;
  bool x_in_tokens = false;  // tick labels as 8K, 1M
};

std::string svg_lines(const LineChart& chart, const std::vector<LineSeries>& series);

}  // namespace v41sim
