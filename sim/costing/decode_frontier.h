// DecodeFrontier: the trade a decode deployment offers between the speed one
// user sees (output tokens per second per user) and what a GPU delivers
// (output tokens per second per GPU): every decode rank at batch 1, 2, 4, ...
// up to what KV memory holds, sessions at one context. Over several
// deployments (GPUs, EP sizes), the points no other point beats on both
// speeds at once form the Pareto frontier: the configurations worth deploying.
// A steady-state reading of the serving simulation's decode steps (as the
// context sweep's): no prefill interleaving, no queueing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/catalog.h"
#include "sim/costing/decode_rate.h"
#include "sim/model/model_analysis.h"
#include "sim/serving/deployment_spec.h"

namespace v41sim {

struct FrontierPoint {
  DecodeRate rate;
  bool cost_known = false;
  double usd_per_million_output = 0;  // the decode GPU's price over its output rate
  bool pareto = false;                // no point of any sweep is faster for users and GPUs alike
};

struct DecodeFrontier {
  DeploymentSpec deployment;
  int64_t context = 0;
  int64_t sessions_per_gpu = 0;  // the largest batch: what one decode rank's KV memory (a GPU's) holds
  std::string kernel_model;      // the decode GPU's calibration label
  std::string price_provenance;
  std::vector<FrontierPoint> points;  // by batch, ascending
};

// One deployment's points; throws InputError naming --context for a context
// outside (0, max_context] and for one at which not one session fits.
DecodeFrontier decode_frontier(const Catalog& catalog, const ModelAnalysis& model,
                               const DeploymentSpec& deployment, int64_t context);

// The context a frontier is taken at unless told (`frontier`, the report):
// 128K tokens, or the model's max_context where that is shorter.
inline constexpr int64_t kFrontierContext = 131072;
inline int64_t frontier_context(const ModelSpec& model) {
  return std::min(kFrontierContext, model.max_context);
}

// The layouts a frontier compares: `base` on each of `gpus` (none: its own)
// at its own EP size; and where a GPU's NVLink domain spans more GPUs than that, one EP
// group over the whole domain (an NVL72 rack), with the fewest replicas, no
// fewer than the base's, that deal the routed experts over it (none where
// that takes more replicas than experts).
std::vector<DeploymentSpec> frontier_layouts(const Catalog& catalog, const ModelSpec& model,
                                             const DeploymentSpec& base,
                                             const std::vector<std::string>& gpus);

// Marks the points of all frontiers that no other point dominates.
void mark_pareto(std::vector<DecodeFrontier>& frontiers);

}  // namespace v41sim
