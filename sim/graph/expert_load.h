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
// placement, the routing statistics taken as known (EPLB's node-level
// grouping is not modelled). One step's routing then falls unevenly by
// chance on top of it (busiest_rank).
#pragma once

#include <cstdint>

#include "sim/model/model_spec.h"

namespace v41sim {

// How a step's EP load is charged, for outputs that show steps or serve them.
inline constexpr const char* kChanceRoutingAssumption =
    "each step's routing falls by chance: every MoE layer waits for the expected busiest EP rank, by routed "
    "copies and by experts' weights reached, the copies taken as landing independently on equally likely "
    "expert slots (assumed; sim/graph/expert_load.h); the placement's skew comes on top";

double ep_load_imbalance(int64_t experts, int64_t ep, double skew, int64_t redundant);
// The same over `model`'s routed experts (1 for a dense model).
double ep_load_imbalance(const ModelSpec& model, int64_t ep, double skew, int64_t redundant);

// The busiest rank of one step, by chance. Where every slot is equally
// likely to be reached, one step's routed copies still fall unevenly: each of
// the EP group's `tokens` x `top_k` copies lands on one of `slots` expert
// slots, `slots / ep` of them on each rank, and every MoE layer waits for its
// busiest rank. Copies are taken as landing independently (a token's own
// copies reach distinct experts, which lowers the spread a little; tokens
// routed alike, as a prompt's tokens may be, raise it), so this is the
// spread routing cannot avoid, not all there is. Each figure is the expected
// largest over the ranks, each taken alone (the rank with the most copies
// need not be the one with the most experts reached).
struct BusiestRank {
  double rows_over_mean = 1;   // the most routed copies a rank receives, over the mean
  double experts_reached = 0;  // the most of a rank's slots that receive at least one copy
};
BusiestRank busiest_rank(double tokens, double top_k, double slots, int64_t ep);
// The same where every rank receives exactly its share (a benchmark that
// routes evenly by construction): the mean rank.
BusiestRank average_rank(double tokens, double top_k, double slots, int64_t ep);

}  // namespace v41sim
