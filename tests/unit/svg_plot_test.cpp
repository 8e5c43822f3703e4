// The report's charts: log axes over whole decades, one polyline per series,
// legends escaped, the same text for the same input.
#include "sim/report/svg_plot.h"

#include <gtest/gtest.h>

#include "sim/report/svg_lines.h"
#include "sim/report/svg_scatter.h"

namespace v41sim {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(SvgPlot, LogAxesSpanWholeDecades) {
  const LogAxis x = LogAxis::spanning(8192, 1048576, 70, 600, false);
  EXPECT_EQ(x.log_lo, 3);
  EXPECT_EQ(x.log_hi, 7);
  EXPECT_DOUBLE_EQ(x(1e3), 70);
  EXPECT_DOUBLE_EQ(x(1e7), 670);
  EXPECT_DOUBLE_EQ(x(1e5), 370);
  const LogAxis y = LogAxis::spanning(0.02, 0.05, 60, 300, true);  // within one decade: that decade
  EXPECT_EQ(y.log_hi - y.log_lo, 1);
  EXPECT_DOUBLE_EQ(y(0.01), 360);  // upward
  EXPECT_DOUBLE_EQ(y(0.1), 60);
  // Ticks: decades, with 2 and 5 between them on an axis of one or two decades.
  EXPECT_EQ(x.ticks(), (std::vector<double>{1e3, 1e4, 1e5, 1e6, 1e7}));
  const std::vector<double> fine = y.ticks();
  ASSERT_EQ(fine.size(), 4u);
  EXPECT_DOUBLE_EQ(fine[1], 0.02);
  EXPECT_DOUBLE_EQ(fine[2], 0.05);
  EXPECT_DOUBLE_EQ(fine[3], 0.1);
  EXPECT_EQ(tokens_tick(1e6), "1M");
  EXPECT_EQ(tokens_tick(1e4), "10K");
  EXPECT_EQ(svg_escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
}

TEST(SvgPlot, LinesDrawEverySeriesWithItsLegend) {
  const std::vector<LineSeries> series{{"h200 <solid>", {{8192, 0.05}, {1048576, 5.7}}, false, 0},
                                       {"h200 dashed", {{8192, 0.02}, {1048576, 0.08}}, true, 0},
                                       {"b200", {{8192, 0.03}}, false, 1}};
  const LineChart chart{"cost", "tokens per session", "$", true};
  const std::string svg = svg_lines(chart, series);
  EXPECT_EQ(count(svg, "<polyline"), 3u);
  EXPECT_EQ(count(svg, "<circle"), 5u);
  EXPECT_EQ(count(svg, "stroke-dasharray"), 2u);  // the dashed series and its legend line
  EXPECT_NE(svg.find("h200 &lt;solid&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">1M<"), std::string::npos);  // token ticks
  EXPECT_EQ(svg, svg_lines(chart, series));
  // A long series name widens the picture so its legend entry is not cut off.
  const std::string width = "width=\"920\"";
  EXPECT_NE(svg.find(width), std::string::npos);
  const std::vector<LineSeries> long_name{{std::string(100, 'x'), {{1, 1}}, false, 0}};
  const std::string wide = svg_lines(chart, long_name);
  EXPECT_EQ(wide.find(width), std::string::npos);
  EXPECT_NE(wide.find("width=\"1340\""), std::string::npos);  // 650 + 50 + 100 x 6.5 - 10
}

// The validation scatter: each GPU its colour and legend entry, hollow
// outside tolerance, the reference named as what it is (before, every chart
// said "published", the measured ones too, and one colour held every GPU).
TEST(SvgPlot, AScatterColoursEachGpuAndNamesItsReference) {
  const std::vector<ScatterPoint> points{{100, 105, "gemm <a>", "h800", true},
                                         {200, 260, "gemm b", "h800", false},
                                         {300, 310, "attention", "b200", true}};
  const std::string svg = svg_scatter({"predicted vs measured", "measured", 5}, points);
  EXPECT_EQ(count(svg, "<circle"), 5u);  // three points, two legend dots
  EXPECT_EQ(count(svg, std::string("fill=\"") + series_color(0) + "\""),
            2u);  // h800's filled point, its legend
  EXPECT_EQ(count(svg, std::string("stroke=\"") + series_color(0) + "\""), 2u);  // both h800 points
  EXPECT_EQ(count(svg, std::string("fill=\"") + series_color(1) + "\""), 2u);    // b200's point and legend
  EXPECT_EQ(count(svg, "fill=\"white\" stroke="), 1u);                           // outside: hollow
  EXPECT_NE(svg.find(">b200</text>"), std::string::npos);
  EXPECT_NE(svg.find("gemm &lt;a&gt;: measured 100, predicted 105"), std::string::npos);
  EXPECT_NE(svg.find(">measured</text>"), std::string::npos);  // the x axis
  EXPECT_EQ(svg.find("published"), std::string::npos);
  EXPECT_NE(svg.find("within ±5% (dashed band)"), std::string::npos);
  // One series: no legend, the picture square.
  const std::vector<ScatterPoint> one{{100, 105, "gemm", "h800", true}};
  const std::string alone = svg_scatter({"t", "published", 10}, one);
  EXPECT_EQ(count(alone, "<circle"), 1u);
  EXPECT_NE(alone.find("width=\"600\" height=\"600\""), std::string::npos) << alone.substr(0, 200);
  // Tolerances that differ: the widest is drawn, and the note says each point has its own.
  const std::string mixed = svg_scatter({"t", "published", 15, true}, one);
  EXPECT_NE(mixed.find("within its own tolerance (the widest, ±15%, dashed)"), std::string::npos);
  EXPECT_EQ(svg, svg_scatter({"predicted vs measured", "measured", 5}, points));
}

}  // namespace
}  // namespace v41sim
