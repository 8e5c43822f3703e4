#include "sim/report/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace v41sim {

Table::Table(std::string title, std::vector<std::string> headers)
    : title_(std::move(title)), headers_(std::move(headers)) {}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

void Table::add_note(std::string note) { notes_.push_back(std::move(note)); }

std::string Table::to_text() const {
  std::vector<std::size_t> width(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) {
    width[c] = headers_[c].size();
    for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      out += fmt::format("{:<{}}", cells[c], width[c]);
      out += c + 1 < cells.size() ? "  " : "";
    }
    out.erase(out.find_last_not_of(' ') + 1);
    return out + "\n";
  };
  std::string out = title_.empty() ? "" : title_ + "\n";
  out += line(headers_);
  std::vector<std::string> rule;
  for (std::size_t w : width) rule.push_back(std::string(w, '-'));
  out += line(rule);
  for (const auto& row : rows_) out += line(row);
  for (const auto& note : notes_) out += "  * " + note + "\n";
  return out;
}

std::string Table::to_markdown() const {
  auto line = [](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (const auto& cell : cells) out += " " + cell + " |";
    return out + "\n";
  };
  std::string out = title_.empty() ? "" : "**" + title_ + "**\n\n";
  out += line(headers_);
  out += line(std::vector<std::string>(headers_.size(), "---"));
  for (const auto& row : rows_) out += line(row);
  if (!notes_.empty()) out += "\n";
  for (const auto& note : notes_) out += "- " + note + "\n";
  return out + "\n";
}

std::string format_fixed(double value, int decimals) { return fmt::format("{:.{}f}", value, decimals); }

std::string format_ranges(const std::vector<int64_t>& ids) {
  std::string out;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

std::string format_bytes(double bytes) {
  const double gib = bytes / std::pow(2.0, 30);
  if (bytes >= 1e9) return fmt::format("{:.2f} GiB ({:.1f} GB)", gib, bytes / 1e9);
  if (bytes >= 1e6) return fmt::format("{:.2f} MB", bytes / 1e6);
  if (bytes >= 1e4) return fmt::format("{:.1f} KB", bytes / 1e3);
  return fmt::format("{:g} B", bytes);
}

std::string format_count(double value) {
  if (value >= 1e12) return fmt::format("{:.3f} T", value / 1e12);
  if (value >= 1e9) return fmt::format("{:.2f} B", value / 1e9);
  if (value >= 1e6) return fmt::format("{:.2f} M", value / 1e6);
  return fmt::format("{:g}", value);
}

}  // namespace v41sim
