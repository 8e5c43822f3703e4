// LayerContext: what the block builders need to know about one layer in one step.
#pragma once

#include "sim/graph/step_shape.h"
#include "sim/model/model_analysis.h"

namespace v41sim {

struct LayerContext {
  const ModelAnalysis& model;
  const StepShape& step;
  const LayerPlanEntry& plan;
  double tokens = 0;     // tokens that run the whole layer in this step (all sequences)
  double kv_tokens = 0;  // tokens whose global KV / index keys this layer writes
  double query_end = 0;  // position of each sequence's last query
  // Feed-forward of this layer (the draft stages bring their own).
  bool moe = false;
  int64_t routed_experts = 0;
  int64_t top_k = 0;
  int64_t shared_experts = 0;
  int64_t ffn_intermediate = 0;

  double batch() const { return static_cast<double>(step.batch); }
  double queries_per_sequence() const { return tokens / batch(); }
};

}  // namespace v41sim
