// SsdTierByModel: the persistent tier one served run would need if each
// bundled model served its sessions: the run's sessions/s and their contexts
// after their last turns are the traffic's, the bytes per token each model's.
// What V4.1's 890 B/token is worth on SSD, against V4-Flash's 3514 and
// V3.2's 48 KB.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/costing/served_run.h"
#include "sim/model/model_analysis.h"
#include "sim/report/table.h"
#include "sim/serving/deployment_spec.h"

namespace v41sim {

struct SsdTierOfModel {
  std::string model;
  double bytes_per_token = 0;
  double bytes = 0;  // at steady state
  double usd_per_hour = 0;
  double of_gpu_cost = 0;  // usd_per_hour over the deployment's GPUs' (0 where either is unpriced)
};

// `run` served `deployment`, which keeps an SSD tier.
std::vector<SsdTierOfModel> ssd_tier_by_model(const std::vector<ModelAnalysis>& models, const ServedRun& run,
                                              const DeploymentSpec& deployment);
// `served_by`: the model the run served.
Table ssd_tier_table(const std::vector<SsdTierOfModel>& rows, const ServedRun& run,
                     const DeploymentSpec& deployment, const std::string& served_by,
                     const std::string& workload);
nlohmann::json ssd_tier_json(const std::vector<SsdTierOfModel>& rows, const ServedRun& run);

}  // namespace v41sim
