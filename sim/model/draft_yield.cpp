#include "sim/model/draft_yield.h"

#include <cmath>

namespace v41sim {

double expected_tokens_per_step(double acceptance, int64_t drafts) {
  return (1.0 - std::pow(acceptance, static_cast<double>(drafts + 1))) / (1.0 - acceptance);
}

double acceptance_for_mean_tokens(double mean_tokens, int64_t drafts) {
  double low = 0.0, high = 1.0;
  // Halving an interval of 1 reaches adjacent doubles well within 1,100 steps; stop there.
  for (int step = 0; step < 1100; ++step) {
    const double mid = 0.5 * (low + high);
    if (mid <= low || mid >= high) break;
    (expected_tokens_per_step(mid, drafts) < mean_tokens ? low : high) = mid;
  }
  return 0.5 * (low + high);
}

}  // namespace v41sim
