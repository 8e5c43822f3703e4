// StepLogComparison: every step of an engine's log timed by the kernel model,
// and, where the log gives the engine's times, how far the model is from
// them, by phase: the whole-step check that published figures give only four
// of (validate's probe `step`), on the user's own engine and traffic.
#pragma once

#include <optional>
#include <vector>

#include "sim/cost/error_band.h"
#include "sim/cost/kernel_cost.h"
#include "sim/graph/step_shape.h"
#include "sim/model/model_analysis.h"
#include "sim/validation/error_stats.h"
#include "sim/validation/step_log.h"

namespace v41sim {

struct TimedStep {
  LoggedStep logged;
  StepShape shape;  // as timed: the log's row on the settings' deployment
  double predicted_us = 0;
  ErrorBand band;  // the prediction's 90% band (the kernel model's, as `step` gives it)
  // (predicted - logged) / logged, where the log gives the step's time.
  std::optional<double> error;
};

struct PhaseComparison {
  LoggedKind kind = LoggedKind::kDecode;
  int steps = 0;
  double predicted_us = 0;  // summed over the phase's steps
  double measured_us = 0;   // summed; 0 where the log has no times
  ErrorStats errors;        // of each step's (predicted - measured) / measured
  double pearson_r = 0;     // of predicted against measured times (0 under 2 steps or no spread)
  ErrorBand band;           // the steps' bands, mixed by predicted time
  // Of the steps with a logged time, the share within its prediction's band
  // (|logged - predicted| <= band x predicted): near 0.9 where the bands are honest.
  double within_band_share = 0;
};

struct StepLogComparison {
  std::vector<TimedStep> steps;         // in the log's order
  std::vector<PhaseComparison> phases;  // prefill, decode, mixed: those the log has
};

// Times each step of `log` as `base` (EP, placement, overlap, projections,
// mHC form) runs it: plain decode steps on `decode_cost` (CUDA-graph replay
// unless the caller says otherwise), prefill and mixed steps on
// `launched_cost` (as a serving run times them). A row the model cannot run
// (a context past its max_context, more drafts than its block) is an
// InputError at the row's line and column.
StepLogComparison compare_step_log(const StepLog& log, const ModelAnalysis& model, const StepShape& base,
                                   const KernelCostModel& launched_cost, const KernelCostModel& decode_cost);

}  // namespace v41sim
