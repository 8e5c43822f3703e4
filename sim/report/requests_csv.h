// The requests of a run as CSV (`run --requests`): one row per request, in
// arrival order, for a user's own percentiles, CDFs and joins. A stage a
// request never reached is an empty cell.
#pragma once

#include <string>
#include <vector>

#include "sim/serving/serving_result.h"

namespace v41sim {

std::string requests_csv(const std::vector<RequestRecord>& requests);

}  // namespace v41sim
