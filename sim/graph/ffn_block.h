// The feed-forward half of a layer: MoE (router, EP dispatch, grouped expert
// GEMMs, shared expert, combine) or a dense gated MLP; plus the Engram
// lookup where the layer has one.
#pragma once

#include "sim/graph/kernel_factory.h"
#include "sim/graph/layer_context.h"

namespace v41sim {

void add_ffn_block(const LayerContext& c, KernelFactory& f);

// One EP dispatch or combine as seen by one rank.
struct AllToAllShape {
  double tokens = 0;  // tokens on this rank
  int64_t top_k = 0;
  int64_t hidden = 0;
  double bytes_per_value = 1;
  int64_t ep = 1;
  int64_t ep_per_node = 1;  // ranks of the group inside one NVLink domain
  double load_imbalance = 1;
  bool low_latency = false;  // decode: the low-latency kernels (a message per routed copy, few SMs)
  int64_t experts = 0;       // routed experts over the group; 0: no per-node deduplication known
};

// Expected nodes other than the sender's that a token's top_k experts (of
// `experts`, uniformly, spread evenly over `nodes`) reach.
double expected_remote_nodes(int64_t nodes, int64_t experts, int64_t top_k);
Kernel make_all_to_all(std::string name, const AllToAllShape& shape);
void add_engram_lookup(const LayerContext& c, KernelFactory& f);

}  // namespace v41sim
