#include "sim/validation/step_log.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <map>

#include "sim/common/csv_cells.h"
#include "sim/common/input_error.h"

namespace v41sim {
namespace {

constexpr std::array<const char*, 5> kRequiredColumns = {"phase", "batch", "context", "new_tokens", "drafts"};
constexpr std::array<const char*, 2> kOptionalColumns = {"continuing", "measured_us"};

// Ceilings past any step a GPU runs, low enough that token counts stay exact:
// 2^24 sequences (as a step graph takes them), 2^31 - 1 tokens (as a request's).
constexpr double kMostSequences = 16777216;
constexpr double kMostTokens = 2147483647;
constexpr double kMostDrafts = 1024;
constexpr double kLongestStepUs = 1e9;  // a thousand seconds

bool known_column(const std::string& name) {
  const auto is = [&name](const char* c) { return name == c; };
  return std::any_of(kRequiredColumns.begin(), kRequiredColumns.end(), is) ||
         std::any_of(kOptionalColumns.begin(), kOptionalColumns.end(), is);
}

// Column name -> index, from the header line.
std::map<std::string, std::size_t> read_header(const CsvLine& line, const std::string& path) {
  std::map<std::string, std::size_t> columns;
  for (std::size_t i = 0; i < line.cells.size(); ++i) {
    const std::string& name = line.cells[i];
    if (!known_column(name)) {
      throw InputError({path, line.number, name},
                       fmt::format("unknown column (expected {}, and optionally {})",
                                   fmt::join(kRequiredColumns, ","), fmt::join(kOptionalColumns, ",")));
    }
    if (!columns.emplace(name, i).second) throw InputError({path, line.number, name}, "column given twice");
  }
  for (const char* name : kRequiredColumns) {
    if (!columns.contains(name)) {
      throw InputError({path, line.number, name}, fmt::format("missing column (the header must name {})",
                                                              fmt::join(kRequiredColumns, ",")));
    }
  }
  return columns;
}

class RowReader {
 public:
  RowReader(const CsvLine& line, const std::map<std::string, std::size_t>& columns, const std::string& path)
      : line_(line), columns_(columns), path_(path) {}

  bool has(const char* column) const { return columns_.contains(column); }
  InputLocation at(const char* column) const { return {path_, line_.number, column}; }
  const std::string& cell(const char* column) const { return line_.cells[columns_.at(column)]; }
  int64_t count(const char* column, double min, double max) const {
    return static_cast<int64_t>(csv_number(cell(column), min, max, true, at(column)));
  }
  // A column that does not apply to the row's phase holds 0, so a misplaced value is seen.
  void require_zero(const char* column, const char* why) const {
    if (cell(column) != "0")
      throw InputError(at(column), fmt::format("expected 0 ({}), got '{}'", why, cell(column)));
  }

 private:
  const CsvLine& line_;
  const std::map<std::string, std::size_t>& columns_;
  const std::string& path_;
};

LoggedStep read_step(const RowReader& row, int line) {
  LoggedStep step;
  step.line = line;
  const std::string& phase = row.cell("phase");
  if (phase != "prefill" && phase != "decode") {
    throw InputError(row.at("phase"), "expected prefill or decode, got '" + phase + "'");
  }
  step.phase = phase == "prefill" ? Phase::kPrefill : Phase::kDecode;
  step.batch = row.count("batch", 1, kMostSequences);
  step.context = row.count("context", 1, kMostTokens);
  const bool prefill = step.phase == Phase::kPrefill;
  if (prefill) {
    step.new_tokens = row.count("new_tokens", 1, static_cast<double>(step.context));
    row.require_zero("drafts", "a prefill row verifies no drafts");
    if (row.has("continuing")) step.continuing = row.count("continuing", 0, static_cast<double>(step.batch));
  } else {
    row.require_zero("new_tokens", "a decode row's sequences each compute their own token and its drafts");
    step.drafts = row.count("drafts", 0, kMostDrafts);
    if (row.has("continuing")) row.require_zero("continuing", "only a prefill row's chunks continue");
  }
  if (row.has("measured_us")) {
    step.measured_us = csv_number(row.cell("measured_us"), 0, kLongestStepUs, false, row.at("measured_us"));
    if (*step.measured_us == 0) throw InputError(row.at("measured_us"), "expected a time above 0 us, got 0");
  }
  return step;
}

}  // namespace

StepLog load_step_log(const std::string& path) {
  StepLog log{path, false, {}};
  std::map<std::string, std::size_t> columns;
  bool header = false;
  for (const CsvLine& line : read_csv_lines(path)) {
    if (!header) {
      columns = read_header(line, path);
      log.measured = columns.contains("measured_us");
      header = true;
      continue;
    }
    if (line.cells.size() != columns.size()) {
      throw InputError({path, line.number, ""}, fmt::format("expected {} cells, as the header names, got {}",
                                                            columns.size(), line.cells.size()));
    }
    log.steps.push_back(read_step(RowReader(line, columns, path), line.number));
  }
  if (!header) throw InputError({path, 0, ""}, "no header line");
  if (log.steps.empty()) throw InputError({path, 0, ""}, "the log has no steps");
  return log;
}

}  // namespace v41sim
