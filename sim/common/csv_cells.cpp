#include "sim/common/csv_cells.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace v41sim {

std::vector<CsvLine> read_csv_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError({path, 0, ""}, "cannot open file");
  std::vector<CsvLine> lines;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // a CSV written with CRLF line ends
    if (number == 1 && line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);  // and a UTF-8 byte order mark
    if (line.empty() || line[0] == '#') continue;
    CsvLine parsed{number, {}};
    std::stringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) parsed.cells.push_back(cell);
    lines.push_back(std::move(parsed));
  }
  return lines;
}

double csv_number(const std::string& cell, double min, double max, bool whole, const InputLocation& where) {
  try {
    // A plain decimal (std::stod would also read "0x3c", "inf" and leading blanks).
    if (cell.empty() || cell.find_first_not_of("0123456789+-.eE") != std::string::npos)
      throw std::invalid_argument("");
    std::size_t used = 0;
    const double value = std::stod(cell, &used);
    if (used != cell.size() || !(value >= min && value <= max) || (value == 0 && std::signbit(value)) ||
        (whole && value != std::floor(value)))
      throw std::invalid_argument("");
    return value;
  } catch (const std::exception&) {
    const std::string range =
        whole ? fmt::format("[{:.0f}, {:.0f}]", min, max) : fmt::format("[{:g}, {:g}]", min, max);
    throw InputError(where, fmt::format("expected {} in {}, got '{}'", whole ? "a whole number" : "a number",
                                        range, cell));
  }
}

}  // namespace v41sim
