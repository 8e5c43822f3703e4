// ServedRun: one deployment serving one workload, simulated and costed, with
// the kernel models its step times came from. `run`, the study report and
// `plan` all go through here, so a run means the same thing in each.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sim/common/catalog.h"
#include "sim/costing/deployment_cost_models.h"
#include "sim/costing/serving_cost.h"
#include "sim/model/model_analysis.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/serving_result.h"
#include "sim/serving/step_time_cache.h"
#include "sim/serving/workload_spec.h"

namespace v41sim {

struct ServedRun {
  ServingResult result;
  ServingCost cost;
  std::string prefill_kernel_model;  // calibration labels of each pool's GPU
  std::string decode_kernel_model;
};

struct ServeOptions {
  double duration_s = 600;
  uint64_t seed = 1;
  bool drain = false;        // after duration_s, no new turns; run until every request is done
  double trace_until_s = 0;  // > 0: record spans that start before this time, for the trace
};

// Requests that finished within the deployment's TTFT and TPOT limits, of
// those that arrived (0 when none arrived): the share an SLA is judged on.
double share_within_sla(const ServingResult& result);

ServedRun serve_deployment(const Catalog& catalog, const ModelAnalysis& model,
                           const DeploymentSpec& deployment, const WorkloadSpec& workload,
                           const ServeOptions& options);
// The same over cost models and step times loaded once for several runs of
// the deployment (`steps` built by deployment_step_times over `gpus`).
ServedRun serve_deployment(const DeploymentCostModels& gpus, const std::shared_ptr<StepTimeCache>& steps,
                           const ModelAnalysis& model, const DeploymentSpec& deployment,
                           const WorkloadSpec& workload, const ServeOptions& options);

}  // namespace v41sim
