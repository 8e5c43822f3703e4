// The outcomes of a `--checks` run, kept in a file for the sweep that
// follows it on the same device (`--checks-from`): a kernel checked there
// is not checked alone again before its group, so a check that hung costs
// its timeout once, not twice, on a lent machine's few minutes. One line a
// check: its name, PASS or FAIL, and for a failure what differed (tabs and
// line breaks made spaces). Plain C++, so a CPU test holds the format.
#pragma once

#include <algorithm>
#include <map>
#include <sstream>
#include <string>

namespace v41sim::kernels {

struct CheckOutcome {
  bool ok = false;
  std::string detail;  // what differed, for a failure
};

inline std::string check_record_line(const std::string& name, const CheckOutcome& outcome) {
  std::string detail = outcome.detail;
  std::replace_if(
      detail.begin(), detail.end(), [](char c) { return c == '\t' || c == '\n' || c == '\r'; }, ' ');
  return name + "\t" + (outcome.ok ? "PASS" : "FAIL") + (outcome.ok ? "" : "\t" + detail) + "\n";
}

// The outcomes by check name; lines of another form (a run cut off mid-line)
// are skipped, so such a check counts as not run.
inline std::map<std::string, CheckOutcome> parse_check_record(const std::string& text) {
  std::map<std::string, CheckOutcome> outcomes;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t tab = line.find('\t');
    if (tab == std::string::npos || tab == 0) continue;
    const std::string verdict = line.substr(tab + 1, 4);
    const bool tail_ok = line.size() == tab + 5 || (line.size() > tab + 5 && line[tab + 5] == '\t');
    if ((verdict != "PASS" && verdict != "FAIL") || !tail_ok) continue;
    CheckOutcome outcome{verdict == "PASS", line.size() > tab + 6 ? line.substr(tab + 6) : ""};
    outcomes[line.substr(0, tab)] = outcome;
  }
  return outcomes;
}

}  // namespace v41sim::kernels
