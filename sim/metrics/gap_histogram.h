// GapHistogram: the gaps between a run's streamed output chunks (ITL), too
// many to keep one by one (an hour on 64 GPUs streams some 10^8), counted in
// log-linear bins as HdrHistogram does: below 2^kSubBits ps each value has a
// bin of its own; above, each power of two is split into 2^kSubBits bins, so
// a bin spans at most 1/256 of its values (0.39%). Percentiles are nearest-
// rank over the bins, read at the bin's middle (within 0.2% of the gap they
// stand for) and kept within the smallest and largest gap; count, mean and
// max are exact.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/des/sim_time.h"
#include "sim/metrics/latency_summary.h"

namespace v41sim {

class GapHistogram {
 public:
  static constexpr int kSubBits = 8;
  static constexpr double kBinRelativeWidth = 1.0 / (1 << kSubBits);

  GapHistogram();
  void add(SimTime gap);  // gap >= 0
  // In milliseconds, as LatencySummary's other users are.
  LatencySummary summary_ms() const;

 private:
  static std::size_t bin_of(uint64_t ps);
  static double middle_of(std::size_t bin);  // ps
  double percentile_ps(double p) const;

  std::vector<int64_t> counts_;
  int64_t count_ = 0;
  double sum_ps_ = 0;
  int64_t min_ps_ = INT64_MAX;
  int64_t max_ps_ = 0;
};

}  // namespace v41sim
