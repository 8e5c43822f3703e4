// The harness runs each measurement group in a child process: what the child
// writes comes back, and a crash or a hang costs only that group, named.
#include "kernels/harness/isolated_run.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <string>

namespace v41sim::kernels {
namespace {

TEST(IsolatedRun, ReturnsWhatTheChildWrote) {
  const GroupOutcome out = run_isolated(
      [](int fd) {
        const std::string text = "# gpu: test\nrow,1\n";
        return ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) ? 0 : 1;
      },
      10);
  EXPECT_TRUE(out.ok) << out.why;
  EXPECT_EQ(out.text, "# gpu: test\nrow,1\n");
}

TEST(IsolatedRun, AFailureKeepsTheRowsWrittenBeforeIt) {
  const GroupOutcome out = run_isolated(
      [](int fd) {
        const std::string text = "row,1\n";
        if (::write(fd, text.data(), text.size()) < 0) return 1;
        return 3;
      },
      10);
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.why, "exit status 3");
  EXPECT_EQ(out.text, "row,1\n");
}

TEST(IsolatedRun, ACrashIsNamedNotPropagated) {
  const GroupOutcome out = run_isolated(
      [](int) {
        std::raise(SIGSEGV);
        return 0;
      },
      10);
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.why, "killed by signal " + std::to_string(SIGSEGV));
}

TEST(IsolatedRun, AHangEndsAtTheTimeout) {
  const GroupOutcome out = run_isolated(
      [](int) {
        for (;;) ::pause();
        return 0;
      },
      1);
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.why, "timed out after 1 s");
}

TEST(IsolatedRun, AnExceptionIsAFailure) {
  const GroupOutcome out = run_isolated([](int) -> int { throw std::runtime_error("no device"); }, 10);
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.why, "exit status 1");
}

}  // namespace
}  // namespace v41sim::kernels
