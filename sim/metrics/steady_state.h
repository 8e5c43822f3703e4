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
// moves that mean little, so the batch means' least-squares line is judged
// too: a rise over the window larger than the noise of the batch means
// explains (its t-statistic, with the standard error widened for their lag-1
// correlation), or a fall beyond that noise too large for a settled run's swings.
// A window that fails is reported, not truncated: the user lengthens the
// warm-up and the figures keep one meaning.
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
  // Not settled where the least-squares line rises by more than this share
  // of the mean over the window and the rise is significant (t above
  // kRiseT). The warm-up starts from empty, so what it leaves unsettled, a
  // deployment still filling up or overloaded, rises. Assumed, from the
  // bundled agent traffic after the 1,200 s warm-up, seeds 1-3: on
  // deployments whose 3,600 s window is settled (h200_pd_64; 8 x B200
  // aggregated: the line moves at most 11% there, t <= 0.9) windows of 600 s
  // moved -17% to +14% (t -5.5 to 2.3); on one 8 x H200 instance at rates
  // whose 3,600 s window keeps rising (+42% to +132%: 0.33 and 0.5
  // sessions/s with prompts in steps of their own, 0.4 and 0.5 mixed) they
  // rose 8-41% (t 2.7-28), ten of twelve past both limits (of windows of
  // 300 s, eight of twelve).
  static constexpr double kSettledRise = 0.1;
  static constexpr double kRiseT = 3.0;
  // Nor where it falls by more than this share, also beyond the noise (|t|
  // above kRiseT): the settled windows above fell by up to 17% (the
  // arrivals' own swings, a burst the warm-up left draining). A move the
  // noise explains is a swing, however large: a window of two periods of
  // bursty arrivals (the bundled chat's 60 s) moves 30-40% with their phase.
  static constexpr double kSettledFall = 0.25;
  static constexpr int64_t kBatch = 5;  // observations per batch mean (the 5 of MSER-5)

  int64_t batches = 0;    // batch means of kBatch observations
  int64_t truncated = 0;  // of them, MSER-5's truncation point
  // The mean of the batches after the point over the mean of all, less 1
  // (a rate still rising over the window: positive).
  double mean_shift = 0;
  // The first and last batch means, for the reader.
  double first_batch = 0;
  double last_batch = 0;
  // The batch means' least-squares line: its change over the window, over
  // their mean (a rate still rising: positive), and the t-statistic of its
  // slope, its standard error widened by sqrt((1 + r) / (1 - r)) for the
  // residuals' lag-1 correlation r > 0.
  double trend = 0;
  double trend_t = 0;
  // The same line through the window's second half alone: a long window
  // whose first half still filled (sessions of forty turns near a
  // deployment's capacity take longer than the warm-up) has settled if its
  // second half does not rise; one whose queue grows under overload rises
  // there too. Judged by the same limits (tail_steady).
  double tail_trend = 0;
  double tail_trend_t = 0;
  bool judged = false;  // enough batches to judge (MSER-5 looks only at the first half)

  double truncated_share() const {
    return batches > 0 ? static_cast<double>(truncated) / static_cast<double>(batches) : 0.0;
  }
  // The window's second half neither rises nor falls beyond the limits.
  bool tail_steady() const { return judged && !moves(tail_trend, tail_trend_t); }
  bool steady() const { return judged && std::abs(mean_shift) <= kSettledShift && !moves(trend, trend_t); }

  // A line that rises or falls past its limit beyond the noise (one rule for
  // the whole window and its second half).
  static bool moves(double change, double t) {
    return (change > kSettledRise && t > kRiseT) || (change < -kSettledFall && t < -kRiseT);
  }
};

// MSER-5 over `series` (observations at equal intervals, in time order; the
// trailing observations that do not fill a batch are left out).
SteadyState mser5(const std::vector<double>& series);

}  // namespace v41sim
