// A log-log predicted-vs-reference scatter as a standalone SVG (no
// dependencies, deterministic text): the y = x line, a +/- band, one dot per
// point with its label as a hover title, coloured by its series (the GPU it
// was published or measured on) with a legend where there are several.
#pragma once

#include <string>
#include <vector>

namespace v41sim {

struct ScatterPoint {
  double reference = 0;
  double predicted = 0;
  std::string label;
  std::string series;   // its colour and legend entry, in order of first appearance
  bool within = false;  // drawn filled when within tolerance
};

struct ScatterChart {
  std::string title;
  std::string reference_name;     // what the x axis holds: "published", "measured"
  double band_pct = 10;           // the tolerance band drawn around y = x
  bool tolerance_varies = false;  // the points' own tolerances differ: the band is the widest
};

std::string svg_scatter(const ScatterChart& chart, const std::vector<ScatterPoint>& points);

}  // namespace v41sim
