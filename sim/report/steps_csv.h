// The steps of a run as CSV (`run --steps`): one row per step of the
// measured window, in the order they began, for a user's own distributions
// of batch sizes, contexts and step times (Vidur's per-batch metrics).
// Written row by row: an hour of a 64-GPU deployment is over a million steps.
#pragma once

#include <ostream>
#include <vector>

#include "sim/serving/serving_result.h"

namespace v41sim {

void write_steps_csv(std::ostream& out, const std::vector<StepRecord>& steps);

}  // namespace v41sim
