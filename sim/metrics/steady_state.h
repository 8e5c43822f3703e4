// SteadyState: whether a run's measured window had settled, by MSER-5.
//
// A run starts with an empty deployment; sessions of many turns take minutes
// to build up to the concurrency the arrival rate sustains, so a window that
// opens too early counts a lighter load than the deployment will carry: its
// throughput too low, its $ per token too high, its latencies too kind.
// The Marginal Standard Error Rule (White 1997) on batch means of five
// (MSER-5) picks the truncation point d that minimises the standard error
// of the mean of what is left, S^2(d) / (n - d)^2; Hoad, Robinson and
// Davies (2010) found it the most reliable automatic warm-up method of those
// they compared. On a settled but strongly correlated series (prefill steps
// of seconds, bursts) its point still wanders a few batches in, so what
// judges the window is what truncating there would change: the mean of what
// is left against the whole window's. A slow creep (sessions of forty turns
// still arriving at their full number, a queue growing under overload)
// moves that mean little, so the last quarter of the window is also set
// against the first. A window that fails either is reported, not truncated:
// the user lengthens the warm-up and the figures keep one meaning.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace v41sim {

struct SteadyState {
  // Steady: truncating at MSER-5's point would move the mean by at most this
  // share. Assumed: on runs of the bundled agent traffic given 25 minutes to
  // settle, the requests in the system moved 0-5% (noise and the slow swings
  // of a queue near its limit); from an empty deployment, 12-40%.
  static constexpr double kSettledShift = 0.1;
  // And its last quarter's mean is within this share of its first quarter's.
  // Assumed: on those settled runs, 12-19%; overloaded (twice the rate an 8
  // x H200 instance serves), +31%; from empty, +330% and more.
  static constexpr double kSettledTrend = 0.25;
  static constexpr int64_t kBatch = 5;  // observations per batch mean (the 5 of MSER-5)

  int64_t batches = 0;    // batch means of kBatch observations
  int64_t truncated = 0;  // of them, MSER-5's truncation point
  // The mean of the batches after the point over the mean of all, less 1
  // (a rate still rising over the window: positive).
  double mean_shift = 0;
  // The first and last batch means, for the reader (quarter_trend judges).
  double first_batch = 0;
  double last_batch = 0;
  // The mean of the last quarter of the batches over that of the first, less
  // 1: a trend through the whole window, less noisy than its two ends.
  double quarter_trend = 0;
  bool judged = false;  // enough batches to judge (MSER-5 looks only at the first half)

  double truncated_share() const {
    return batches > 0 ? static_cast<double>(truncated) / static_cast<double>(batches) : 0.0;
  }
  bool steady() const {
    return judged && std::abs(mean_shift) <= kSettledShift && std::abs(quarter_trend) <= kSettledTrend;
  }
};

// MSER-5 over `series` (observations at equal intervals, in time order; the
// trailing observations that do not fill a batch are left out).
SteadyState mser5(const std::vector<double>& series);

}  // namespace v41sim
