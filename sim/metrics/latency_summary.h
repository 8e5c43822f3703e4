// LatencySummary: mean and nearest-rank percentiles of a sample.
#pragma once

#include <cstdint>
#include <vector>

namespace v41sim {

struct LatencySummary {
  int64_t count = 0;
  double mean = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double max = 0;
};

LatencySummary summarize(std::vector<double> values);

}  // namespace v41sim
