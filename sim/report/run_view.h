// Views of a serving run for `v41sim run`: tables and one JSON object.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "sim/costing/serving_cost.h"
#include "sim/report/table.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/serving_result.h"
#include "sim/serving/workload_spec.h"

namespace v41sim {

struct RunReport {
  const std::string& model;
  const DeploymentSpec& deployment;
  const WorkloadSpec& workload;
  const std::string& kernel_model;  // calibration label
  uint64_t seed;
  const ServingResult& result;
  const ServingCost& cost;
};

std::vector<Table> run_tables(const RunReport& r);
nlohmann::json run_json(const RunReport& r);

}  // namespace v41sim
