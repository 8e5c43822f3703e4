#include "sim/metrics/steady_state.h"

#include <cstddef>

namespace v41sim {

namespace {

constexpr auto kBatch = static_cast<std::size_t>(SteadyState::kBatch);
// Fewer batch means than this say little about a trend.
constexpr std::size_t kFewestBatches = 10;

std::vector<double> batch_means(const std::vector<double>& series) {
  std::vector<double> means(series.size() / kBatch);
  for (std::size_t b = 0; b < means.size(); ++b) {
    double sum = 0;
    for (std::size_t i = 0; i < kBatch; ++i) sum += series[b * kBatch + i];
    means[b] = sum / static_cast<double>(kBatch);
  }
  return means;
}

}  // namespace

SteadyState mser5(const std::vector<double>& series) {
  const std::vector<double> y = batch_means(series);
  SteadyState s;
  s.batches = static_cast<int64_t>(y.size());
  if (!y.empty()) {
    s.first_batch = y.front();
    s.last_batch = y.back();
  }
  if (y.size() < kFewestBatches) return s;
  s.judged = true;
  // Sums over the tail y[d..n), grown from the end, so each d costs O(1).
  const std::size_t n = y.size();
  std::vector<double> sum(n + 1, 0.0), sum_sq(n + 1, 0.0);
  for (std::size_t i = n; i-- > 0;) {
    sum[i] = sum[i + 1] + y[i];
    sum_sq[i] = sum_sq[i + 1] + y[i] * y[i];
  }
  // MSER's statistic is unstable past half the series: d is searched there only.
  double best = -1;
  for (std::size_t d = 0; d <= n / 2; ++d) {
    const auto left = static_cast<double>(n - d);
    const double mean = sum[d] / left;
    const double squared_deviations = sum_sq[d] - left * mean * mean;
    const double statistic = squared_deviations / (left * left);
    if (best < 0 || statistic < best) {
      best = statistic;
      s.truncated = static_cast<int64_t>(d);
    }
  }
  const std::size_t quarter = n / 4;
  const double first_quarter = (sum[0] - sum[quarter]) / static_cast<double>(quarter);
  const double last_quarter = sum[n - quarter] / static_cast<double>(quarter);
  s.quarter_trend = first_quarter != 0 ? last_quarter / first_quarter - 1 : 0.0;
  const double all = sum[0] / static_cast<double>(n);
  const double kept = sum[static_cast<std::size_t>(s.truncated)] /
                      static_cast<double>(n - static_cast<std::size_t>(s.truncated));
  s.mean_shift = all != 0 ? kept / all - 1 : 0.0;
  return s;
}

}  // namespace v41sim
