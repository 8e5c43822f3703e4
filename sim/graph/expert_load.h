// Expert-parallel load imbalance: how much more routed work the busiest EP
// rank gets than the average one. Each MoE layer synchronises its ranks, so
// the busiest rank sets the step.
//
// Expert popularity follows a power law (Zipf exponent `skew`; 0 = uniform
// routing). The `redundant` most popular experts get a second replica that
// takes half of their load (EPLB-style), and experts are placed greedily,
// heaviest first, on the least-loaded rank that still has a free slot. This
// is the static imbalance of the placement; batch-to-batch fluctuation is
// not modelled.
#pragma once

#include <cstdint>

namespace v41sim {

double ep_load_imbalance(int64_t experts, int64_t ep, double skew, int64_t redundant);

}  // namespace v41sim
