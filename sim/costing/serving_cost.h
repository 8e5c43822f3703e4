// ServingCost: what a run's GPU time costs, per hour and per million tokens,
// at the GPU profile's $/GPU-hour (with that figure's provenance; a profile
// whose price is unknown yields no dollar figures rather than a guess).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/hw/gpu_profile.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/serving_result.h"

namespace v41sim {

struct ServingCost {
  bool known = false;
  std::string provenance;  // the price's source, or why there is none
  double usd_per_hour = 0;
  double usd_per_million_input = 0;   // all input tokens served (prefilled or from cache)
  double usd_per_million_output = 0;  // output tokens generated
};

ServingCost serving_cost(const ServingResult& result, const DeploymentSpec& deployment,
                         const GpuProfile& prefill_gpu, const GpuProfile& decode_gpu);
nlohmann::json cost_json(const ServingCost& cost);

}  // namespace v41sim
