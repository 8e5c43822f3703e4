// How many keys (or compressed positions) the queries of a step see.
//
// Queries sit at positions (end - queries, end]; a query at position p sees
// min(p / ratio, cap) entries. The sum over queries is taken as an integral
// (exact to within one query's worth), which keeps a 1M-token prefill O(1).
#pragma once

#include <algorithm>
#include <limits>

namespace v41sim {

inline constexpr double kUncapped = std::numeric_limits<double>::infinity();

inline double sum_visible(double queries, double end, double ratio, double cap) {
  const double start = std::max(0.0, end - queries);
  const double knee = cap * ratio;  // position where the cap is reached
  auto linear = [ratio](double a, double b) { return (b * b - a * a) / (2.0 * ratio); };
  if (end <= knee) return linear(start, end);
  if (start >= knee) return cap * (end - start);
  return linear(start, knee) + cap * (end - knee);
}

// Entries one query at position `end` sees.
inline double visible_at(double end, double ratio, double cap) { return std::min(end / ratio, cap); }

}  // namespace v41sim
