// Views of an assumption-sensitivity study for `v41sim sensitivity`: a table
// of the assumptions that move the answer, largest first, and one JSON object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/costing/assumption_sensitivity.h"
#include "sim/report/table.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/workload_spec.h"

namespace v41sim {

struct SensitivityReport {
  const std::string& model;
  const DeploymentSpec& deployment;
  const WorkloadSpec& workload;
  const ServeOptions& options;
  const std::string& data_dir;  // file names are printed relative to it
  const Sensitivity& sensitivity;
};

Table sensitivity_table(const SensitivityReport& r);
nlohmann::json sensitivity_json(const SensitivityReport& r);

}  // namespace v41sim
