// The report as one HTML page a reader can open, print or attach to a design
// review: the Markdown rendered by md4c (GitHub dialect, for the tables), a
// small style sheet, and every chart the Markdown links drawn inline, so the
// page is one self-contained file. The Markdown stays the source: the page
// says nothing it does not.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace v41sim {

// `chart_dir` holds the SVG files the Markdown's images name (plain file names
// only); each is read and put in place of its <img>. A named chart that is not
// there is an error (std::runtime_error), not a broken picture.
std::string html_page(std::string_view markdown, std::string_view title,
                      const std::filesystem::path& chart_dir);

}  // namespace v41sim
