#include "sim/report/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace v41sim {

const char* series_color(std::size_t i) {
  static constexpr std::array<const char*, 6> kPalette{"#1f4e9c", "#c2452d", "#2e8b57",
                                                       "#8a5ab8", "#d08c1a", "#555555"};
  return kPalette[i % kPalette.size()];
}

std::string svg_escape(const std::string& text) {
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

LogAxis LogAxis::spanning(double lo, double hi, double from, double length, bool flip) {
  if (!(lo <= hi) || lo <= 0) lo = 1, hi = 10;
  const double log_lo = std::floor(std::log10(lo));
  const double log_hi = std::max(log_lo + 1, std::ceil(std::log10(hi)));
  return {log_lo, log_hi, from, length, flip};
}

double LogAxis::operator()(double value) const {
  const double share = (std::log10(value) - log_lo) / (log_hi - log_lo);
  return flip ? from + length - share * length : from + share * length;
}

std::string svg_open(double width, double height, const std::string& title) {
  return fmt::format(
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 "
             "{0:.0f} {1:.0f}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" "
             "height=\"100%\" fill=\"white\"/>\n",
             width, height) +
         fmt::format("<text x=\"{:.1f}\" y=\"24\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n",
                     width / 2, svg_escape(title));
}

std::vector<double> LogAxis::ticks() const {
  // An axis of one or two decades reads better with 2 and 5 between them.
  const bool fine = log_hi - log_lo <= 2 + 1e-9;
  std::vector<double> out;
  for (double d = log_lo; d <= log_hi + 1e-9; d += 1) {
    const double decade = std::pow(10.0, d);
    out.push_back(decade);
    if (fine && d < log_hi - 1e-9) {
      out.push_back(2 * decade);
      out.push_back(5 * decade);
    }
  }
  return out;
}

std::string svg_decade_grid(const LogAxis& x, const LogAxis& y, std::string (*x_label)(double),
                            std::string (*y_label)(double)) {
  std::string svg;
  const double bottom = y.from + y.length;
  for (const double v : x.ticks()) {
    svg +=
        fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>\n",
                    x(v), y.from, bottom);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x(v),
                       bottom + 16, x_label(v));
  }
  for (const double v : y.ticks()) {
    svg +=
        fmt::format("<line x1=\"{1:.1f}\" y1=\"{0:.1f}\" x2=\"{2:.1f}\" y2=\"{0:.1f}\" stroke=\"#ddd\"/>\n",
                    y(v), x.from, x.from + x.length);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", x.from - 6,
                       y(v) + 4, y_label(v));
  }
  return svg;
}

std::string svg_axis_titles(const LogAxis& x, const LogAxis& y, const std::string& x_title,
                            const std::string& y_title) {
  const double middle_y = y.from + y.length / 2;
  return fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                     x.from + x.length / 2, y.from + y.length + 40, svg_escape(x_title)) +
         fmt::format(
             "<text x=\"16\" y=\"{0:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 16 "
             "{0:.1f})\">{1}</text>\n",
             middle_y, svg_escape(y_title));
}

std::string plain_tick(double value) { return fmt::format("{:g}", value); }

std::string tokens_tick(double value) {
  if (value >= 1e6) return fmt::format("{:g}M", value / 1e6);
  if (value >= 1e3) return fmt::format("{:g}K", value / 1e3);
  return fmt::format("{:g}", value);
}

}  // namespace v41sim
