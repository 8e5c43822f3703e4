// The timeline of a serving run in the Chrome trace-event format (opens in
// ui.perfetto.dev): one process per instance with its steps, and requests as
// async spans (whole request, with its prefill and decode inside).
#pragma once

#include <nlohmann/json.hpp>

#include "sim/serving/deployment_spec.h"
#include "sim/serving/serving_result.h"

namespace v41sim {

nlohmann::json run_trace(const ServingResult& result, const DeploymentSpec& deployment);

}  // namespace v41sim
