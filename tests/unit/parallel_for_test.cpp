// parallel_for: every index once, and the lowest index's exception after all ended.
#include "sim/common/parallel_for.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

namespace v41sim {
namespace {

TEST(ParallelFor, RunsEveryIndexOnce) {
  std::vector<int> runs(1000, 0);
  parallel_for(runs.size(), [&](std::size_t i) { runs[i] += 1; });
  for (std::size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i], 1) << i;
  parallel_for(0, [](std::size_t) { FAIL() << "no job for n = 0"; });
}

TEST(ParallelFor, RethrowsTheLowestIndexsExceptionAfterAllEnded) {
  std::atomic<int> ran{0};
  try {
    parallel_for(64, [&](std::size_t i) {
      ++ran;
      if (i == 40 || i == 17) throw std::runtime_error("job " + std::to_string(i));
    });
    FAIL() << "nothing was rethrown";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "job 17");
  }
  EXPECT_EQ(ran.load(), 64);  // a failing job stops no other
}

}  // namespace
}  // namespace v41sim
