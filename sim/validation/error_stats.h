// ErrorStats: how wrong a set of predictions is, summarized as calibration and
// validation both report it: mean absolute error, worst, signed bias, and the
// 90th percentile of |error| (the band a prediction carries).
#pragma once

#include <vector>

namespace v41sim {

struct ErrorStats {
  int count = 0;
  double mape_pct = 0;
  double worst_pct = 0;  // largest |error|
  double bias_pct = 0;   // mean signed error
  double band_90_pct = 0;
};

// From relative errors ((predicted - reference) / reference, not percent).
ErrorStats error_stats(const std::vector<double>& relative_errors);

}  // namespace v41sim
