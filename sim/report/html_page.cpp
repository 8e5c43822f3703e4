#include "sim/report/html_page.h"

#include <fmt/format.h>
#include <md4c-html.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "sim/report/svg_plot.h"

namespace v41sim {
namespace {

// Wide tables scroll inside the page rather than squeezing their columns;
// numbers line up by the alignment the Markdown gives each column.
constexpr const char* kStyle =
    R"(body { font-family: sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em;
       line-height: 1.45; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; display: block; overflow-x: auto; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f3f3f3; }
tr:nth-child(even) td { background: #fafafa; }
code { background: #f3f3f3; padding: 0 0.2em; }
.chart { display: block; overflow-x: auto; margin: 1em 0; }
)";

void append_output(const MD_CHAR* text, MD_SIZE size, void* out) {
  static_cast<std::string*>(out)->append(text, size);
}

std::string render_markdown(std::string_view markdown) {
  std::string html;
  if (md_html(markdown.data(), static_cast<MD_SIZE>(markdown.size()), append_output, &html, MD_DIALECT_GITHUB,
              0) != 0) {
    throw std::runtime_error("report.html: md4c could not render the report's Markdown");
  }
  return html;
}

// The value of `attribute="..."` inside one tag, as md4c wrote it (escaped).
std::string attribute_of(std::string_view tag, std::string_view attribute) {
  const std::string key = std::string(" ") + std::string(attribute) + "=\"";
  const std::size_t at = tag.find(key);
  if (at == std::string_view::npos) return "";
  const std::size_t from = at + key.size();
  return std::string(tag.substr(from, tag.find('"', from) - from));
}

std::string read_chart(const std::filesystem::path& chart_dir, const std::string& file) {
  std::ifstream in(chart_dir / file);
  if (!in) {
    throw std::runtime_error(fmt::format("report.html: the chart {} that the report shows is not in {}", file,
                                         chart_dir.string()));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Each <img src="name.svg" ...> becomes the chart itself, labelled by its alt text.
std::string inline_charts(const std::string& html, const std::filesystem::path& chart_dir) {
  std::string out;
  std::size_t done = 0;
  for (std::size_t at = html.find("<img ", done); at != std::string::npos; at = html.find("<img ", done)) {
    const std::size_t end = html.find('>', at);
    if (end == std::string::npos) break;  // md4c closes its tags; keep the rest as it is
    const std::string_view tag(html.data() + at, end - at);
    const std::string src = attribute_of(tag, "src");
    out.append(html, done, at - done);
    done = end + 1;
    const bool own_chart = src.ends_with(".svg") && src.find('/') == std::string::npos;
    if (!own_chart) {
      out.append(html, at, done - at);
      continue;
    }
    out += fmt::format("<span class=\"chart\" role=\"img\" aria-label=\"{}\">\n{}</span>",
                       attribute_of(tag, "alt"), read_chart(chart_dir, src));
  }
  out.append(html, done);
  return out;
}

}  // namespace

std::string html_page(std::string_view markdown, std::string_view title,
                      const std::filesystem::path& chart_dir) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n"
      "<style>\n{}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
      svg_escape(std::string(title)), kStyle, inline_charts(render_markdown(markdown), chart_dir));
}

}  // namespace v41sim
