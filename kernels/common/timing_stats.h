// What one timed kernel yields: median, fastest and slowest of its runs (µs).
#pragma once

namespace v41sim::kernels {

struct TimingStats {
  double median_us = 0;
  double min_us = 0;
  double max_us = 0;
};

}  // namespace v41sim::kernels
