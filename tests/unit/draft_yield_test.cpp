// The yield of a speculative step under a per-position acceptance, and the
// acceptance a measured mean yield implies: the two invert each other.
#include "sim/model/draft_yield.h"

#include <gtest/gtest.h>

namespace v41sim {
namespace {

TEST(DraftYield, AStepYieldsItsTokenAndTheAcceptedRun) {
  EXPECT_DOUBLE_EQ(expected_tokens_per_step(0.0, 5), 1.0);
  EXPECT_NEAR(expected_tokens_per_step(0.5, 2), 1 + 0.5 + 0.25, 1e-15);
  EXPECT_NEAR(expected_tokens_per_step(0.8, 3), 1 + 0.8 + 0.64 + 0.512, 1e-15);
}

TEST(DraftYield, TheAcceptanceOfAMeanYieldGivesItBack) {
  for (const int64_t drafts : {1, 2, 5, 8}) {
    for (const double share : {0.01, 0.3, 0.5, 0.9, 0.999}) {
      const double mean = 1 + share * static_cast<double>(drafts);  // within (1, drafts + 1)
      const double p = acceptance_for_mean_tokens(mean, drafts);
      EXPECT_GT(p, 0.0);
      EXPECT_LT(p, 1.0);
      EXPECT_NEAR(expected_tokens_per_step(p, drafts), mean, 1e-12 * mean) << drafts << " drafts, " << mean;
    }
  }
  // One draft: the mean yield is 1 + p itself.
  EXPECT_NEAR(acceptance_for_mean_tokens(1.75, 1), 0.75, 1e-15);
  // A larger yield needs a larger acceptance; more drafts reach it with a smaller one.
  EXPECT_LT(acceptance_for_mean_tokens(3.0, 5), acceptance_for_mean_tokens(3.5, 5));
  EXPECT_GT(acceptance_for_mean_tokens(3.0, 4), acceptance_for_mean_tokens(3.0, 5));
}

}  // namespace
}  // namespace v41sim
