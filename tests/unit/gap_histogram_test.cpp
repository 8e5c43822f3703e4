// GapHistogram: binned percentiles against the exact ones of the same gaps.
#include "sim/metrics/gap_histogram.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace v41sim {
namespace {

TEST(GapHistogram, PercentilesAreWithinHalfABinOfTheExactOnes) {
  // Gaps from picoseconds to seconds: decode steps, prompt stalls, and a few tiny.
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> step_ms(std::log(20.0), 1.5);
  GapHistogram binned;
  std::vector<double> exact_ms;
  for (int i = 0; i < 200000; ++i) {
    const SimTime gap = i % 1000 == 0 ? SimTime::from_ps(i % 300) : SimTime::from_us(step_ms(rng) * 1e3);
    binned.add(gap);
    exact_ms.push_back(gap.ms());
  }
  const LatencySummary want = summarize(exact_ms);
  const LatencySummary got = binned.summary_ms();
  EXPECT_EQ(got.count, want.count);
  EXPECT_NEAR(got.mean, want.mean, want.mean * 1e-12);
  EXPECT_EQ(got.max, want.max);
  const double within = GapHistogram::kBinRelativeWidth / 2;
  for (auto [g, w] : {std::pair{got.p50, want.p50}, {got.p90, want.p90}, {got.p99, want.p99}}) {
    EXPECT_NEAR(g, w, w * within) << "binned " << g << " against " << w;
  }
}

TEST(GapHistogram, SmallGapsAreExactAndOneGapIsEveryPercentile) {
  GapHistogram h;
  for (int64_t ps : {0, 1, 2, 255, 256}) h.add(SimTime::from_ps(ps));
  const LatencySummary s = h.summary_ms();
  EXPECT_EQ(s.count, 5);
  EXPECT_DOUBLE_EQ(s.p50, 2e-9);  // below 256 ps every value has its bin
  EXPECT_DOUBLE_EQ(s.p99, 256e-9);
  // One gap alone: every percentile is it, not the middle of its bin.
  GapHistogram one;
  one.add(SimTime::from_us(17.0));
  EXPECT_DOUBLE_EQ(one.summary_ms().p99, 0.017);
  EXPECT_EQ(GapHistogram().summary_ms().count, 0);
  EXPECT_THROW(h.add(SimTime::from_ps(-1)), std::logic_error);
}

}  // namespace
}  // namespace v41sim
