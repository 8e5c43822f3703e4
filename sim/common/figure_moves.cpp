#include "sim/common/figure_moves.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace v41sim {

std::vector<SourcedNumber> figures_to_move(const std::vector<std::string>& files,
                                           const std::vector<std::string>& kinds, double swing) {
  if (!(swing > 0 && swing < 1)) {
    throw InputError({"", 0, "--swing"}, fmt::format("expected a share in (0, 1), got {}", swing));
  }
  if (kinds.empty()) throw InputError({"", 0, "--kinds"}, "expected at least one kind of source");
  for (const std::string& kind : kinds) {
    if (std::find(kSourceKinds.begin(), kSourceKinds.end(), kind) == kSourceKinds.end()) {
      throw InputError({"", 0, "--kinds"},
                       fmt::format("expected kinds among {}, got '{}'", fmt::join(kSourceKinds, ", "), kind));
    }
  }
  std::vector<SourcedNumber> out;
  std::set<std::string> seen;
  for (const std::string& file : files) {
    if (!seen.insert(file).second) continue;
    for (SourcedNumber& f : find_sourced_numbers(file, kinds)) out.push_back(std::move(f));
  }
  return out;
}

MovedValue move_figure(const SourcedNumber& figure, double factor) {
  const double target = figure.value * factor;
  double value = target;
  std::string written = fmt::format("{:.6g}", target);
  if (figure.integer) {
    value = std::round(target);
    if (value == figure.value) value += factor < 1 ? -1 : 1;
    written = fmt::format("{:.0f}", value);
  }
  return {value, with_value_replaced(yaml_text(figure.file), figure, written)};
}

}  // namespace v41sim
