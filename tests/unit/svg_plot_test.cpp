// The report's charts: log axes over whole decades, one polyline per series,
// legends escaped, the same text for the same input.
#include "sim/report/svg_plot.h"

#include <gtest/gtest.h>

#include "sim/report/svg_lines.h"

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

}  // namespace
}  // namespace v41sim
