// A wall-clock budget for a whole harness run. A lent GPU machine stops a
// command at its call limit; with a deadline the harness stops starting new
// work in time, cuts the last step's timeout to what is left, and still
// writes its file, naming what it did not get to.
#pragma once

#include <algorithm>
#include <chrono>

namespace v41sim::kernels {

class RunDeadline {
 public:
  static constexpr unsigned kMinimumStepS = 10;  // less than this left: do not start a step

  // budget_s <= 0: no deadline.
  explicit RunDeadline(double budget_s,
                       std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now())
      : budget_s_(budget_s), start_(start) {}

  // The timeout for the next step: its own, or what is left if that is less;
  // 0 when too little is left to start it.
  unsigned timeout_for(unsigned step_s,
                       std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now()) const {
    if (budget_s_ <= 0) return step_s;
    const double left = budget_s_ - std::chrono::duration<double>(now - start_).count();
    if (left < kMinimumStepS) return 0;
    return std::min(step_s, static_cast<unsigned>(left));
  }

 private:
  double budget_s_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace v41sim::kernels
