// The error band a step-time prediction carries (issue: "predictions carry an
// error band derived from the calibration residuals").
//
// Each calibrated kernel class has a 90% band (the 90th percentile of
// |relative error| on its held-out shapes, widened when the calibration was
// transferred from another GPU). A step's band weights those by each kernel's
// share of the step's kernel time and adds them up, as if every kernel erred
// the same way at once: an upper bound, since it assumes fully correlated
// errors. A class no measurement calibrated carries the priors' error on
// published figures where enough exist (published_bands.h: mostly in-sample,
// so it says how well the priors fit those figures), and the band says which
// share of it is such. Kernels of classes with neither have no band; the share
// of time they take is reported, never silently counted as exact.
#pragma once

#include <string>

#include "sim/cost/cost_params.h"
#include "sim/cost/step_cost.h"
#include "sim/graph/step_graph.h"

namespace v41sim {

struct ErrorBand {
  double pct = 0;              // +/- percent at 90%, over the covered time
  double covered_share = 0;    // share of kernel time from classes with a band
  double published_share = 0;  // share of the covered time whose band is the priors' published error
  // A mix of no steps at all (a run whose prompts all went into mixed decode
  // steps has no prompt steps): nothing to band, which is not an unknown band.
  bool no_steps = false;
  // "±4.2% at 90% on 35% of the time (no band on the rest)"; names the
  // published share: "(the priors' error on published figures)".
  std::string describe() const;
};

// How a band is made, for a note under the tables that show one.
inline constexpr const char* kErrorBandMethod =
    "band: each kernel class's 90th-percentile error (held-out error where our measurements calibrated the "
    "class; else the priors' error on published figures of the class, mostly the ones they were read off, "
    "where enough exist), widened when carried to another GPU, weighted by kernel time and added as "
    "if correlated; classes with neither carry none";

// Over the step's kernel classes (StepTiming::class_us: the first
// micro-batch's kernels, each once).
ErrorBand step_error_band(const StepTiming& timing, const CostParams& params);

// Bands of many steps (a serving run's) combined the same way, by step time.
class ErrorBandMix {
 public:
  void add(const ErrorBand& band, double time_us) {
    time_ += time_us;
    covered_ += time_us * band.covered_share;
    published_ += time_us * band.covered_share * band.published_share;
    weighted_ += time_us * band.covered_share * band.pct;
  }
  ErrorBand mixed() const {
    ErrorBand out;
    if (covered_ > 0) {
      out.pct = weighted_ / covered_;
      out.published_share = published_ / covered_;
    }
    if (time_ > 0) out.covered_share = covered_ / time_;
    out.no_steps = time_ <= 0;
    return out;
  }

 private:
  double time_ = 0, covered_ = 0, published_ = 0, weighted_ = 0;
};

}  // namespace v41sim
