// The steps of a run as CSV (`run --steps`): one row per step of the
// measured window, in the order they began, for a user's own distributions
// of batch sizes, contexts and step times (Vidur's per-batch metrics).
#pragma once

#include <string>
#include <vector>

#include "sim/serving/serving_result.h"

namespace v41sim {

std::string steps_csv(const std::vector<StepRecord>& steps);

}  // namespace v41sim
