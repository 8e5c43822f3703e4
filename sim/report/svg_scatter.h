// A log-log predicted-vs-reference scatter as a standalone SVG (no
// dependencies, deterministic text): the y = x line, a +/- band, one dot per
// point with its label as a hover title.
#pragma once

#include <string>
#include <vector>

namespace v41sim {

struct ScatterPoint {
  double reference = 0;
  double predicted = 0;
  std::string label;
  bool within = false;  // drawn filled when within tolerance
};

std::string svg_scatter(const std::string& title, const std::vector<ScatterPoint>& points, double band_pct);

}  // namespace v41sim
