// The error band a step-time prediction carries (issue: "predictions carry an
// error band derived from the calibration residuals").
//
// Each calibrated kernel class has a 90% band (the 90th percentile of
// |relative error| on its held-out shapes, widened when the calibration was
// transferred from another GPU). A step's band weights those by each kernel's
// share of the step's kernel time and adds them up, as if every kernel erred
// the same way at once: an upper bound, since it assumes fully correlated
// errors. Kernels of uncalibrated classes (and link transfers, which kernel
// measurements do not calibrate) have no band; the share of time they take is
// reported, never silently counted as exact.
#pragma once

#include <string>

#include "sim/cost/cost_params.h"
#include "sim/cost/step_cost.h"
#include "sim/graph/step_graph.h"

namespace v41sim {

struct ErrorBand {
  double pct = 0;                // +/- percent at 90%, over the covered time
  double covered_share = 0;      // share of kernel time from classes with a band
  std::string describe() const;  // "±4.2% at 90% on 35% of the time (no band on the rest)"
};

// How a band is made, for a note under the tables that show one.
inline constexpr const char* kErrorBandMethod =
    "band: each calibrated kernel class's 90th-percentile held-out error (widened when transferred from "
    "another GPU), weighted by kernel time and added as if correlated; uncalibrated classes and link "
    "transfers carry none";

ErrorBand step_error_band(const StepGraph& graph, const StepTiming& timing, const CostParams& params);

// Bands of many steps (a serving run's) combined the same way, by step time.
class ErrorBandMix {
 public:
  void add(const ErrorBand& band, double time_us) {
    time_ += time_us;
    covered_ += time_us * band.covered_share;
    weighted_ += time_us * band.covered_share * band.pct;
  }
  ErrorBand mixed() const {
    ErrorBand out;
    if (covered_ > 0) out.pct = weighted_ / covered_;
    if (time_ > 0) out.covered_share = covered_ / time_;
    return out;
  }

 private:
  double time_ = 0, covered_ = 0, weighted_ = 0;
};

}  // namespace v41sim
