// Expert-parallel load imbalance: how much more routed work the busiest EP
// rank gets than the average one. Each MoE layer synchronises its ranks, so
// the busiest rank sets the step.
//
// Expert popularity follows a power law (Zipf exponent `skew`; 0 = uniform
// routing). As DeepSeek's EPLB (deepseek-ai/EPLB, its global policy) does,
// each of the `redundant` replicas goes in turn to the expert with the most
// load per replica (a hot expert may get several; its replicas share its load
// evenly), and the replicas are packed heaviest first onto the least-loaded
// rank that still has a free slot. This is the static imbalance of the
// placement, the routing statistics taken as known; batch-to-batch
// fluctuation is not modelled, nor EPLB's node-level grouping.
#pragma once

#include <cstdint>

#include "sim/model/model_spec.h"

namespace v41sim {

double ep_load_imbalance(int64_t experts, int64_t ep, double skew, int64_t redundant);
// The same over `model`'s routed experts (1 for a dense model).
double ep_load_imbalance(const ModelSpec& model, int64_t ep, double skew, int64_t redundant);

}  // namespace v41sim
