// The report's HTML page: the Markdown's tables become HTML tables, each
// chart the Markdown links is drawn inline, and a chart that is missing is an
// error rather than a broken picture.
#include "sim/report/html_page.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace v41sim {
namespace {

namespace fs = std::filesystem;

fs::path chart_dir_with(const std::string& name, const std::string& file, const std::string& svg) {
  const fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / file) << svg;
  return dir;
}

TEST(HtmlPage, RendersTablesAndInlinesTheChartsItLinks) {
  const std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\"><text>tokens</text></svg>\n";
  const fs::path dir = chart_dir_with("v41sim_html_page_a", "cost.svg", svg);
  const std::string markdown =
      "## Cost\n\n| GPU | $ per 1M |\n|:--|--:|\n| H200 | 0.66 |\n\n![$ per 1M by GPU](cost.svg)\n\n"
      "![elsewhere](https://example.org/plot.png)\n";
  const std::string html = html_page(markdown, "study <A & B>", dir);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<title>study &lt;A &amp; B&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("<h2>Cost</h2>"), std::string::npos);
  EXPECT_NE(html.find("<td align=\"right\">0.66</td>"), std::string::npos) << html;
  EXPECT_NE(html.find("aria-label=\"$ per 1M by GPU\">\n" + svg), std::string::npos) << html;
  EXPECT_EQ(html.find("src=\"cost.svg\""), std::string::npos);
  // Only our own charts, by plain file name, are read; other images stay links.
  EXPECT_NE(html.find("<img src=\"https://example.org/plot.png\""), std::string::npos);
  EXPECT_EQ(html, html_page(markdown, "study <A & B>", dir));  // deterministic
}

TEST(HtmlPage, AChartTheMarkdownNamesButThatIsMissingIsAnError) {
  const fs::path dir = chart_dir_with("v41sim_html_page_b", "other.svg", "<svg></svg>");
  try {
    html_page("![cost](cost.svg)\n", "study", dir);
    FAIL() << "expected an error for the missing chart";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cost.svg"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace v41sim
