// MSER-5: where a series settles, and whether truncating there would move its mean.
#include "sim/metrics/steady_state.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace v41sim {
namespace {

// A level with a small alternating wobble: stationary, never constant.
std::vector<double> flat(std::size_t n, double level) {
  std::vector<double> y(n);
  for (std::size_t i = 0; i < n; ++i) y[i] = level + ((i / 5) % 2 == 0 ? 1.0 : -1.0);
  return y;
}

TEST(SteadyState, AFlatSeriesIsSteadyAndKeptWhole) {
  const SteadyState s = mser5(flat(200, 100));
  EXPECT_TRUE(s.judged);
  EXPECT_EQ(s.batches, 40);
  EXPECT_LE(s.truncated, 1);
  EXPECT_NEAR(s.mean_shift, 0.0, 0.01);
  EXPECT_TRUE(s.steady());
}

// A ramp from 0 to the level over its first quarter, then the level: MSER-5
// cuts near the ramp's end, and the mean left is well above the whole's.
TEST(SteadyState, ARampIsTruncatedNearItsEndAndIsNotSteady) {
  std::vector<double> y = flat(200, 100);
  for (std::size_t i = 0; i < 50; ++i) y[i] *= static_cast<double>(i) / 50.0;
  const SteadyState s = mser5(y);
  EXPECT_TRUE(s.judged);
  EXPECT_GE(s.truncated, 7);  // the ramp is 10 batches; its last ones are near the level
  EXPECT_LE(s.truncated, 11);
  EXPECT_GT(s.mean_shift, SteadyState::kSettledShift);
  EXPECT_FALSE(s.steady());
}

// A series that rises throughout has no settled tail: MSER-5's point goes
// as far as it may look (half the series).
TEST(SteadyState, ASeriesRisingThroughoutIsCutAtHalfAndNotSteady) {
  std::vector<double> y(200);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = 10.0 + static_cast<double>(i);
  const SteadyState s = mser5(y);
  EXPECT_EQ(s.truncated, 20);
  EXPECT_DOUBLE_EQ(s.truncated_share(), 0.5);
  EXPECT_FALSE(s.steady());
}

// A slow creep (a queue growing under overload): truncating moves the mean
// little, but a line through the batch means rises a third over the window,
// far beyond the wobble.
TEST(SteadyState, ASlowCreepIsNotSteadyThoughTruncatingMovesTheMeanLittle) {
  std::vector<double> y = flat(200, 100);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += 0.2 * static_cast<double>(i);
  const SteadyState s = mser5(y);
  EXPECT_LE(std::abs(s.mean_shift), SteadyState::kSettledShift);
  // Batch k's mean is 100 + 0.2 (5k + 2) +-1 (+ for even k): slope 1 per batch
  // less 20 / 5330 (the wobble against the centred index, over its sum of
  // squares 40 (40^2 - 1) / 12), over 40 batches, on a mean of 119.9.
  EXPECT_NEAR(s.trend, (1.0 - 20.0 / 5330.0) * 40.0 / 119.9, 1e-9);
  EXPECT_GT(s.trend_t, SteadyState::kRiseT);
  EXPECT_FALSE(s.steady());
  EXPECT_NEAR(s.first_batch, 100.4 + 1, 1e-9);  // the first five, each 100 + 0.2 i + 1
}

// The line's verdict: a move is judged against the batch means' noise and
// its size, a rise from 10% and a fall from 25% (the warm-up fills from
// empty, so what it leaves unsettled rises).
std::vector<double> tilted(double change_over_window, double wobble) {
  std::vector<double> y(200);
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double phase = static_cast<double>(i) / static_cast<double>(y.size()) - 0.5;
    // A wobble of five-observation batches, deterministic and not periodic in
    // the batch index (so a line does not fit it away).
    const double noise = wobble * std::sin(static_cast<double>(i / 5) * 2.39996);
    y[i] = 100.0 * (1.0 + change_over_window * phase) + noise;
  }
  return y;
}

// A long window whose first half still fills up and whose second is level:
// not steady as a whole, steady in its second half; a creep rises in both.
TEST(SteadyState, ASecondHalfIsJudgedOnItsOwn) {
  std::vector<double> y = flat(200, 100);
  for (std::size_t i = 0; i < 100; ++i) y[i] -= 30.0 * (1.0 - static_cast<double>(i) / 100.0);
  const SteadyState filling = mser5(y);
  EXPECT_FALSE(filling.steady());
  EXPECT_TRUE(filling.tail_steady());
  EXPECT_NEAR(filling.tail_trend, 0.0, 0.05);
  std::vector<double> creep = flat(200, 100);
  for (std::size_t i = 0; i < creep.size(); ++i) creep[i] += 0.2 * static_cast<double>(i);
  EXPECT_FALSE(mser5(creep).tail_steady());
}

TEST(SteadyState, ARiseBeyondItsNoiseIsNotSteadyAFallOnlyPastItsLimit) {
  const SteadyState small_rise = mser5(tilted(0.08, 1.0));
  EXPECT_GT(small_rise.trend_t, SteadyState::kRiseT);
  EXPECT_TRUE(small_rise.steady()) << "a rise of 8% is within kSettledRise";
  const SteadyState rise = mser5(tilted(0.15, 1.0));
  EXPECT_NEAR(rise.trend, 0.15, 0.01);
  EXPECT_FALSE(rise.steady());
  const SteadyState noisy_rise = mser5(tilted(0.15, 40.0));
  EXPECT_LT(noisy_rise.trend_t, SteadyState::kRiseT);
  EXPECT_TRUE(noisy_rise.steady()) << "a rise the noise explains";
  const SteadyState fall = mser5(tilted(-0.2, 1.0));
  EXPECT_LT(fall.trend_t, -SteadyState::kRiseT);
  EXPECT_LE(std::abs(fall.mean_shift), SteadyState::kSettledShift);
  EXPECT_TRUE(fall.steady()) << "a fall within kSettledFall";
  EXPECT_FALSE(mser5(tilted(-0.3, 1.0)).steady());
  const SteadyState swing = mser5(tilted(-0.4, 60.0));
  EXPECT_LT(swing.trend, -SteadyState::kSettledFall);
  EXPECT_GT(swing.trend_t, -SteadyState::kRiseT);
  EXPECT_TRUE(swing.steady()) << "a fall the noise explains is a swing";
}

// Too short to judge: fewer than ten batches of five; the trailing
// observations that fill no batch are left out.
TEST(SteadyState, TooFewBatchesAreNotJudged) {
  const SteadyState s = mser5(flat(49, 100));
  EXPECT_EQ(s.batches, 9);
  EXPECT_FALSE(s.judged);
  EXPECT_FALSE(s.steady());
  EXPECT_EQ(mser5({}).batches, 0);
}

}  // namespace
}  // namespace v41sim
