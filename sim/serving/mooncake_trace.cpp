#include "sim/serving/mooncake_trace.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "sim/common/input_error.h"

namespace v41sim {
namespace {

// A JSON number that is whole and in [min, max], or the line's error naming `field`.
int64_t whole_number(const nlohmann::json& value, double min, double max, const InputLocation& where) {
  const double x = value.is_number() ? value.get<double>() : std::nan("");
  if (!(x >= min && x <= max) || x != std::floor(x)) {
    throw InputError(
        where, fmt::format("expected a whole number in [{:.0f}, {:.0f}], got {}", min, max, value.dump()));
  }
  return static_cast<int64_t>(x);
}

// The line's JSON object, its fields those of the format and all of them there.
nlohmann::json parse_line(const std::string& line, const std::function<InputLocation(const char*)>& at) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {  // malformed, or a number past a double
    throw InputError(at(""), fmt::format("malformed JSON: {}", e.what()));
  }
  if (!j.is_object()) throw InputError(at(""), "expected one JSON object per line");
  for (const auto& [key, value] : j.items()) {
    if (key != "timestamp" && key != "input_length" && key != "output_length" && key != "hash_ids") {
      throw InputError(at(key.c_str()),
                       "unknown field (expected timestamp, input_length, output_length, hash_ids)");
    }
  }
  for (const char* field : {"timestamp", "input_length", "output_length", "hash_ids"}) {
    if (!j.contains(field)) throw InputError(at(field), "required field is missing");
  }
  return j;
}

// One request: its time, lengths and block ids (as many as its prompt has blocks).
WorkloadSpec::TraceRow read_row(const nlohmann::json& j, int64_t block_tokens,
                                const std::function<InputLocation(const char*)>& at) {
  WorkloadSpec::TraceRow row;
  const nlohmann::json& timestamp = j["timestamp"];
  const double ms = timestamp.is_number() ? timestamp.get<double>() : std::nan("");
  if (!(ms >= 0 && ms <= longest_run_s() * 1000)) {
    throw InputError(at("timestamp"), fmt::format("expected milliseconds in [0, {:.0f}], got {}",
                                                  longest_run_s() * 1000, timestamp.dump()));
  }
  row.time_s = ms / 1000.0;
  row.input_tokens = whole_number(j["input_length"], 1, kMaxTokensPerRequest, at("input_length"));
  row.output_tokens = whole_number(j["output_length"], 1, kMaxTokensPerRequest, at("output_length"));
  const nlohmann::json& ids = j["hash_ids"];
  if (!ids.is_array()) throw InputError(at("hash_ids"), "expected a list of block ids");
  const int64_t blocks = (row.input_tokens + block_tokens - 1) / block_tokens;
  if (static_cast<int64_t>(ids.size()) != blocks) {
    throw InputError(at("hash_ids"),
                     fmt::format("expected {} block ids (input_length {} in blocks of {} tokens), "
                                 "got {}: is block_tokens the trace's?",
                                 blocks, row.input_tokens, block_tokens, ids.size()));
  }
  for (const nlohmann::json& id : ids) row.blocks.push_back(whole_number(id, 0, kMaxTraceId, at("hash_ids")));
  return row;
}

// How many of the row's blocks no earlier row named, and how many leading ones one did.
void count_blocks_seen(WorkloadSpec::TraceRow& row, std::unordered_set<int64_t>& seen) {
  bool leading = true;
  for (const int64_t block : row.blocks) {
    const bool first = seen.insert(block).second;
    row.blocks_first_seen += first ? 1 : 0;
    leading = leading && !first;
    row.blocks_leading_seen += leading ? 1 : 0;
  }
}

}  // namespace

std::vector<WorkloadSpec::TraceRow> read_mooncake_trace(const std::string& path, int64_t block_tokens) {
  std::ifstream in(path);
  if (!in) throw InputError({path, 0, ""}, "cannot open file");
  std::vector<WorkloadSpec::TraceRow> rows;
  std::unordered_set<int64_t> seen;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto at = [&](const char* field) { return InputLocation{path, number, field}; };
    WorkloadSpec::TraceRow row = read_row(parse_line(line, at), block_tokens, at);
    if (!rows.empty() && row.time_s < rows.back().time_s) {
      throw InputError(at("timestamp"), "lines must be in time order");
    }
    row.session = static_cast<int64_t>(rows.size());
    count_blocks_seen(row, seen);
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw InputError({path, 0, ""}, "the trace has no lines");
  return rows;
}

}  // namespace v41sim
