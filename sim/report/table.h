// Table: rows of text rendered for a terminal or as Markdown, with notes
// (provenance, assumptions) that travel with it. One table serves both the
// CLI and the report, so the two never disagree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace v41sim {

class Table {
 public:
  explicit Table(std::string title, std::vector<std::string> headers);

  void add_row(std::vector<std::string> cells);
  void add_note(std::string note);

  std::string to_text() const;
  std::string to_markdown() const;

 private:
  std::string title_;
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::string> notes_;
};

// Number formatting shared by every view.
std::string format_bytes(double bytes);  // "890 B", "2.70 MB", "0.87 GiB (0.93 GB)"
std::string format_count(double value);  // "552.1 B", "35.4 M"
std::string format_fixed(double value, int decimals);
std::string format_ranges(const std::vector<int64_t>& ids);  // {21,22,23,25} -> "21-23,25"

}  // namespace v41sim
