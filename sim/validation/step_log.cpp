#include "sim/validation/step_log.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <map>

#include "sim/common/csv_cells.h"
#include "sim/common/input_error.h"
#include "sim/graph/step_graph.h"
#include "sim/model/model_spec.h"

namespace v41sim {
namespace {

constexpr std::array<const char*, 5> kRequiredColumns = {"phase", "batch", "context", "new_tokens", "drafts"};
constexpr std::array<const char*, 5> kOptionalColumns = {"continuing", "chunk_prompts", "chunk_tokens",
                                                         "chunk_context", "measured_us"};
constexpr std::array<const char*, 3> kChunkColumns = {"chunk_prompts", "chunk_tokens", "chunk_context"};

// Ceilings past any step a GPU runs, low enough that counts stay exact: the
// sequences a step graph takes, the tokens a model's context may hold (drafts
// too: the model's block is checked when the steps are timed).
constexpr auto kMostSequences = static_cast<double>(kMaxSequencesPerStep);
constexpr auto kMostTokens = static_cast<double>(kMostContextTokens);
constexpr double kLongestStepUs = 1e9;  // a thousand seconds: a time past it is a unit typed wrong

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

LoggedKind read_kind(const RowReader& row) {
  const std::string& phase = row.cell("phase");
  if (phase == "prefill") return LoggedKind::kPrefill;
  if (phase == "decode") return LoggedKind::kDecode;
  if (phase == "mixed") {
    for (const char* column : kChunkColumns) {
      if (!row.has(column)) {
        throw InputError(row.at("phase"),
                         fmt::format("a mixed row needs the columns {} (the header lacks {})",
                                     fmt::join(kChunkColumns, ","), column));
      }
    }
    return LoggedKind::kMixed;
  }
  throw InputError(row.at("phase"), "expected prefill, decode or mixed, got '" + phase + "'");
}

// A prefill row's prompts, each computing new_tokens of its context.
void read_prompts(const RowReader& row, LoggedStep& step) {
  step.new_tokens = row.count("new_tokens", 1, static_cast<double>(step.context));
  row.require_zero("drafts", "a prefill row verifies no drafts");
  if (row.has("continuing")) step.continuing = row.count("continuing", 0, static_cast<double>(step.batch));
}

// A decode (or mixed) row's sequences, each verifying its drafts; a mixed
// row's prompt chunks beside them.
void read_sequences(const RowReader& row, LoggedStep& step) {
  row.require_zero("new_tokens", "a decode row's sequences each compute their own token and its drafts");
  step.drafts = row.count("drafts", 0, kMostTokens);
  if (step.kind != LoggedKind::kMixed) {
    if (row.has("continuing")) row.require_zero("continuing", "only prompt chunks continue");
    return;
  }
  step.chunk_prompts = row.count("chunk_prompts", 1, kMostSequences);
  step.chunk_context = row.count("chunk_context", 1, kMostTokens);
  step.chunk_tokens = row.count("chunk_tokens", 1, static_cast<double>(step.chunk_context));
  if (row.has("continuing")) {
    step.continuing = row.count("continuing", 0, static_cast<double>(step.chunk_prompts));
  }
}

LoggedStep read_step(const RowReader& row, int line) {
  LoggedStep step;
  step.line = line;
  step.kind = read_kind(row);
  step.batch = row.count("batch", 1, kMostSequences);
  step.context = row.count("context", 1, kMostTokens);
  if (step.kind == LoggedKind::kPrefill) {
    read_prompts(row, step);
  } else {
    read_sequences(row, step);
  }
  if (step.kind != LoggedKind::kMixed) {
    for (const char* column : kChunkColumns) {
      if (row.has(column)) row.require_zero(column, "only a mixed row carries prompt chunks");
    }
  }
  if (row.has("measured_us")) {
    step.measured_us = csv_number(row.cell("measured_us"), 0, kLongestStepUs, false, row.at("measured_us"));
    if (*step.measured_us == 0) throw InputError(row.at("measured_us"), "expected a time above 0 us, got 0");
  }
  return step;
}

}  // namespace

const char* logged_kind_name(LoggedKind kind) {
  switch (kind) {
    case LoggedKind::kPrefill:
      return "prefill";
    case LoggedKind::kMixed:
      return "mixed";
    case LoggedKind::kDecode:
      break;
  }
  return "decode";
}

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
