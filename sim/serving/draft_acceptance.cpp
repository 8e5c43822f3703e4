#include "sim/serving/draft_acceptance.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace v41sim {
namespace {

// The largest double in (0, 1] at which `reaches` holds, where it holds at
// the smallest and fails at 1 and falls from true to false once as the draw
// grows (positive doubles order as their bit patterns do): 0 where it holds
// at none.
template <class Reaches>
double largest_reaching(Reaches reaches) {
  uint64_t lo = std::bit_cast<uint64_t>(std::numeric_limits<double>::denorm_min());
  uint64_t hi = std::bit_cast<uint64_t>(1.0);
  if (!reaches(std::bit_cast<double>(lo))) return 0.0;
  if (reaches(std::bit_cast<double>(hi))) return 1.0;
  while (hi - lo > 1) {  // reaches(lo), !reaches(hi)
    const uint64_t mid = lo + (hi - lo) / 2;
    (reaches(std::bit_cast<double>(mid)) ? lo : hi) = mid;
  }
  return std::bit_cast<double>(lo);
}

}  // namespace

DraftAcceptance::DraftAcceptance(double acceptance, int64_t most_drafts) {
  if (!(acceptance < 1.0) || !(acceptance >= 0.0)) return;
  log_acceptance_ = std::log(acceptance);
  for (int64_t j = 1; j <= most_drafts; ++j)
    reaches_.push_back(largest_reaching([&](double u) { return run_of(u) >= j; }));
}

int64_t DraftAcceptance::run_of(double at_most_one) const {
  if (log_acceptance_ >= 0) return 0;
  const double run = std::floor(std::log(at_most_one) / log_acceptance_);
  // A run past any step's drafts is cut anyway; kept within int64_t.
  constexpr double kLongest = 1 << 30;
  return static_cast<int64_t>(std::min(run, kLongest));
}

int64_t DraftAcceptance::accepted(double at_most_one, int64_t drafts) const {
  if (drafts <= 0 || log_acceptance_ >= 0) return 0;
  // The thresholds fall as j grows, so those the draw is within are the
  // first `run`: counted without a branch on the draw (its run is random).
  const auto kept =
      static_cast<std::size_t>(std::min<int64_t>(drafts, static_cast<int64_t>(reaches_.size())));
  int64_t run = 0;
  for (std::size_t j = 0; j < kept; ++j) run += at_most_one <= reaches_[j] ? 1 : 0;
  // Past the kept thresholds (more drafts than the block size): the expression.
  if (run == static_cast<int64_t>(reaches_.size()) && run < drafts)
    return std::min(run_of(at_most_one), drafts);
  return run;
}

}  // namespace v41sim
