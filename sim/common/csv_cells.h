// Reading the CSV files users give us (a workload's trace, an engine's step
// log): lines numbered as an editor numbers them, a CRLF line end and a UTF-8
// byte order mark taken as written, blank and '#' comment lines skipped, cells
// split on commas; and a cell's number checked into its range, the error
// naming file, line and column.
#pragma once

#include <string>
#include <vector>

#include "sim/common/input_error.h"

namespace v41sim {

struct CsvLine {
  int number = 0;  // 1-based, counting the skipped lines too
  std::vector<std::string> cells;
};

// Every line of `path` that holds data (the header included). Throws
// InputError where the file cannot be opened.
std::vector<CsvLine> read_csv_lines(const std::string& path);

// The number `cell` holds, written as a plain decimal, finite and in [min,
// max] (whole: without a fraction); else InputError at `where` ("expected a
// whole number in [1, 5], got '0.5'"). A signed zero ("-0") is refused as the
// typo it is, and so are hexadecimal, "inf" and blanks around the number.
double csv_number(const std::string& cell, double min, double max, bool whole, const InputLocation& where);

}  // namespace v41sim
