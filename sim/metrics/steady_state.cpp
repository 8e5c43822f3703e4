#include "sim/metrics/steady_state.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

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

// The batch means' least-squares line over their index: its change across
// the series over their mean, and its slope's t-statistic with the standard
// error widened for the residuals' lag-1 correlation (batch means of a
// queue's length stay correlated from one to the next). At least 3 means.
struct Trend {
  double change = 0;  // over the series, relative to its mean
  double t = 0;
};

Trend least_squares_trend(const std::vector<double>& y) {
  const auto n = static_cast<double>(y.size());
  const double x_mean = (n - 1) / 2;
  double y_mean = 0;
  for (double v : y) y_mean += v / n;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double dx = static_cast<double>(i) - x_mean;
    sxx += dx * dx;
    sxy += dx * (y[i] - y_mean);
  }
  const double slope = sxy / sxx;
  double rss = 0, lagged = 0, previous = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double residual = y[i] - y_mean - slope * (static_cast<double>(i) - x_mean);
    rss += residual * residual;
    if (i > 0) lagged += residual * previous;
    previous = residual;
  }
  Trend out;
  out.change = y_mean != 0 ? slope * n / y_mean : 0.0;
  const double lag1 = rss > 0 ? lagged / rss : 0.0;
  const double widening = lag1 > 0 ? std::sqrt((1 + lag1) / (1 - std::min(lag1, 0.99))) : 1.0;
  const double standard_error = std::sqrt(rss / (n - 2) / sxx) * widening;
  if (standard_error > 0) {
    out.t = slope / standard_error;
  } else if (slope != 0) {  // a straight line: a trend beyond any noise
    out.t = std::copysign(std::numeric_limits<double>::infinity(), slope);
  }
  return out;
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
  const Trend whole = least_squares_trend(y);
  s.trend = whole.change;
  s.trend_t = whole.t;
  const Trend tail =
      least_squares_trend(std::vector<double>(y.begin() + static_cast<std::ptrdiff_t>(n / 2), y.end()));
  s.tail_trend = tail.change;
  s.tail_trend_t = tail.t;
  const double all = sum[0] / static_cast<double>(n);
  const double kept = sum[static_cast<std::size_t>(s.truncated)] /
                      static_cast<double>(n - static_cast<std::size_t>(s.truncated));
  s.mean_shift = all != 0 ? kept / all - 1 : 0.0;
  return s;
}

}  // namespace v41sim
