// SharedStepTimes: the cost models and step times of the deployments a batch
// of runs serves (plan's variants, capacity's rates), loaded once per
// distinct way of timing a step. Variants that differ only in what no step
// time depends on (instance counts, KV tiers, SLA, batch limits, arrival
// rate, how an aggregated pool schedules its prompts) then cost each step
// shape once between them. Sharing never changes a figure: a step's time is
// a function of its shape, the pools' step templates and the GPUs' cost
// models, which is what the sharing key holds.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "sim/common/catalog.h"
#include "sim/costing/deployment_cost_models.h"
#include "sim/model/model_analysis.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/step_time_cache.h"

namespace v41sim {

struct DeploymentSteps {
  DeploymentSteps(const Catalog& catalog, const ModelAnalysis& model, const DeploymentSpec& deployment);
  DeploymentCostModels gpus;
  std::shared_ptr<StepTimeCache> steps;  // over `gpus`, safe to use from several runs at once
};

class SharedStepTimes {
 public:
  SharedStepTimes(const Catalog& catalog, const ModelAnalysis& model) : catalog_(catalog), model_(model) {}
  // The deployment's steps, loaded on first use of their key; safe to ask
  // from several threads at once (capacity searches side by side).
  const DeploymentSteps& of(const DeploymentSpec& deployment);

 private:
  const Catalog& catalog_;
  const ModelAnalysis& model_;
  std::map<std::string, std::unique_ptr<DeploymentSteps>> by_key_;
  std::mutex lock_;  // over by_key_; the steps it holds are safe to share once loaded
};

}  // namespace v41sim
