// The drafts a sequence's draw accepts: compared with thresholds found once,
// the same run as floor(log(u) / log(p)) for every draw, at the thresholds'
// own edges too; and the run's law, P(run >= j) = p^j.
#include "sim/serving/draft_acceptance.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace v41sim {
namespace {

int64_t expected_accepted(double p, double u, int64_t drafts) {
  const double run = std::floor(std::log(u) / std::log(p));
  return run >= static_cast<double>(drafts) ? drafts : static_cast<int64_t>(run);
}

TEST(DraftAcceptance, AcceptsWhatTheLogarithmGivesForEveryDraw) {
  for (const double p : {0.8, 0.5, 0.95, 0.3, 0.999}) {
    const int64_t block = 7;
    const DraftAcceptance acceptance(p, block);
    std::mt19937_64 rng(42);
    std::vector<double> draws;
    for (int i = 0; i < 200000; ++i) draws.push_back(1.0 - static_cast<double>(rng() >> 11) * 0x1.0p-53);
    // Each edge between two runs, and the doubles beside it.
    for (int64_t j = 1; j <= block + 1; ++j) {
      const double edge = std::pow(p, static_cast<double>(j));
      double near = edge;
      for (int step = 0; step < 4; ++step) near = std::nextafter(near, 0.0);
      for (int step = 0; step < 8; ++step) {
        draws.push_back(near);
        near = std::nextafter(near, 2.0);
      }
    }
    draws.push_back(1.0);
    draws.push_back(std::numeric_limits<double>::denorm_min());
    for (const double u : draws) {
      for (int64_t drafts = 0; drafts <= block + 2; ++drafts)  // past the block: the expression
        ASSERT_EQ(acceptance.accepted(u, drafts), expected_accepted(p, u, drafts))
            << "p " << p << ", u " << u << ", drafts " << drafts;
    }
  }
}

TEST(DraftAcceptance, RunsFollowTheirLaw) {
  const double p = 0.8;
  const DraftAcceptance acceptance(p, 5);
  std::mt19937_64 rng(7);
  const int draws = 400000;
  std::vector<int> at_least(6, 0);
  for (int i = 0; i < draws; ++i) {
    const int64_t run = acceptance.accepted(1.0 - static_cast<double>(rng() >> 11) * 0x1.0p-53, 5);
    for (int64_t j = 0; j <= run; ++j) ++at_least[static_cast<std::size_t>(j)];
  }
  for (int j = 1; j <= 5; ++j)
    EXPECT_NEAR(at_least[static_cast<std::size_t>(j)] / static_cast<double>(draws), std::pow(p, j), 0.003)
        << "P(run >= " << j << ")";
}

TEST(DraftAcceptance, NothingIsAcceptedWithoutADraftOrAtZero) {
  const DraftAcceptance none;
  EXPECT_EQ(none.accepted(1e-9, 5), 0);
  const DraftAcceptance never(0.0, 5);
  EXPECT_EQ(never.accepted(1e-300, 5), 0);
  EXPECT_EQ(never.accepted(1.0, 5), 0);
  const DraftAcceptance sure(0.9, 5);
  EXPECT_EQ(sure.accepted(1e-12, 0), 0);  // no draft verified
  EXPECT_EQ(sure.accepted(1e-12, 3), 3);  // cut at the drafts verified
}

}  // namespace
}  // namespace v41sim
