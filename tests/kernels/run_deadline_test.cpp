// The harness's run deadline: steps get their own timeout while time is
// plentiful, what is left near the end, and none once too little is left.
#include "kernels/harness/run_deadline.h"

#include <gtest/gtest.h>

namespace v41sim::kernels {
namespace {

using std::chrono::seconds;
using std::chrono::steady_clock;

TEST(RunDeadline, CutsTheLastStepsAndStopsStartingNew) {
  const steady_clock::time_point start{};
  const RunDeadline deadline(300, start);
  EXPECT_EQ(deadline.timeout_for(120, start), 120u);
  EXPECT_EQ(deadline.timeout_for(120, start + seconds(250)), 50u);
  EXPECT_EQ(deadline.timeout_for(120, start + seconds(295)), 0u);
  EXPECT_EQ(deadline.timeout_for(120, start + seconds(400)), 0u);
}

TEST(RunDeadline, NoBudgetMeansNoDeadline) {
  const steady_clock::time_point start{};
  EXPECT_EQ(RunDeadline(0, start).timeout_for(120, start + seconds(100000)), 120u);
}

}  // namespace
}  // namespace v41sim::kernels
