// Views of `v41sim plan`: the variants ranked in one table, or one JSON object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/costing/deployment_plan.h"
#include "sim/report/table.h"

namespace v41sim {

struct PlanReport {
  const std::string& model;
  const std::vector<DeploymentSpec>& bases;  // at least one; they share their SLA
  const WorkloadSpec& workload;
  const ServeOptions& options;
  double min_within_sla;
  const std::vector<PlanRow>& rows;
};

Table plan_table(const PlanReport& p);
nlohmann::json plan_json(const PlanReport& p);

}  // namespace v41sim
