#include "sim/report/svg_scatter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace v41sim {
namespace {

constexpr double kSize = 480;  // plot area, pixels
constexpr double kMargin = 60;

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string svg_scatter(const std::string& title, const std::vector<ScatterPoint>& points, double band_pct) {
  double lo = INFINITY, hi = 0;
  for (const ScatterPoint& p : points) {
    lo = std::min({lo, p.reference, p.predicted});
    hi = std::max({hi, p.reference, p.predicted});
  }
  if (points.empty()) lo = 1, hi = 10;
  const double log_lo = std::floor(std::log10(lo));
  const double log_hi = std::ceil(std::log10(hi));
  const double span = std::max(1.0, log_hi - log_lo);
  auto x = [&](double v) { return kMargin + (std::log10(v) - log_lo) / span * kSize; };
  auto y = [&](double v) { return kMargin + kSize - (std::log10(v) - log_lo) / span * kSize; };
  const double w = kSize + 2 * kMargin;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{0:.0f}\" viewBox=\"0 0 {0:.0f} "
      "{0:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      w);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"24\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n", w / 2,
                     escape(title));
  // Decade grid and tick labels.
  for (double d = log_lo; d <= log_hi + 1e-9; d += 1) {
    const double v = std::pow(10.0, d);
    svg +=
        fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>\n",
                    x(v), kMargin, kMargin + kSize);
    svg +=
        fmt::format("<line x1=\"{1:.1f}\" y1=\"{0:.1f}\" x2=\"{2:.1f}\" y2=\"{0:.1f}\" stroke=\"#ddd\"/>\n",
                    y(v), kMargin, kMargin + kSize);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{:g}</text>\n", x(v),
                       kMargin + kSize + 16, v);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>\n", kMargin - 6,
                       y(v) + 4, v);
  }
  // y = x and the tolerance band.
  const double a = std::pow(10.0, log_lo), b = std::pow(10.0, log_hi);
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
        x(p.reference), y(p.predicted), p.within ? "#1f4e9c" : "white", escape(p.label), p.reference,
        p.predicted);
  }
  svg +=
      fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">published</text>\n", w / 2, w - 12);
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\">filled: within ±{:g}% (dashed band); hollow: outside</text>\n",
      kMargin + 8, kMargin + 16, band_pct);
  svg += fmt::format(
      "<text x=\"16\" y=\"{:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 16 "
      "{:.1f})\">predicted</text>\n",
      w / 2, w / 2);
  svg += "</svg>\n";
  return svg;
}

}  // namespace v41sim
