#include "sim/validation/error_stats.h"

#include <algorithm>
#include <cmath>

namespace v41sim {
namespace {

// The 90th percentile of |error| (an order statistic: no interpolation), in percent.
double percentile_90_pct(std::vector<double> errors) {
  if (errors.empty()) return 0;
  for (double& e : errors) e = std::fabs(e);
  std::sort(errors.begin(), errors.end());
  const auto rank = static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(errors.size())));
  return 100.0 * errors[std::max<std::size_t>(rank, 1) - 1];
}

}  // namespace

ErrorStats error_stats(const std::vector<double>& relative_errors) {
  ErrorStats s;
  s.count = static_cast<int>(relative_errors.size());
  for (double e : relative_errors) {
    s.mape_pct += std::fabs(e);
    s.worst_pct = std::max(s.worst_pct, std::fabs(e));
    s.bias_pct += e;
  }
  const double n = std::max<double>(1.0, static_cast<double>(relative_errors.size()));
  s.mape_pct *= 100.0 / n;
  s.worst_pct *= 100.0;
  s.bias_pct *= 100.0 / n;
  s.band_90_pct = percentile_90_pct(relative_errors);
  return s;
}

}  // namespace v41sim
