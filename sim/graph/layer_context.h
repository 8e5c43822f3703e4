// LayerContext: what the block builders need to know about one layer in one step.
#pragma once

#include <string>
#include <vector>

#include "sim/graph/step_shape.h"
#include "sim/model/model_analysis.h"

namespace v41sim {

// Sequences of a step that attend alike: the decode sequences, or the prompts
// computing a chunk. A plain step has one group; a mixed step (decode with
// prompt chunks, StepShape::mixed_prefill) has both, and each runs its own
// attention, indexer scoring and top-k, while the GEMMs take all tokens.
struct SequenceGroup {
  Phase phase = Phase::kDecode;
  double sequences = 1;
  double tokens = 0;        // queries that run the whole layer (all sequences of the group)
  double query_end = 0;     // position of each sequence's last query
  std::string name_suffix;  // appended to the group's own kernels in a mixed step
  double queries_per_sequence() const { return tokens / sequences; }
};

struct LayerContext {
  const ModelAnalysis& model;
  const StepShape& step;
  const LayerPlanEntry& plan;
  double tokens = 0;     // tokens that run the whole layer in this step (all groups)
  double kv_tokens = 0;  // tokens whose global KV / index keys this layer writes
  std::vector<SequenceGroup> groups = {};
  // Feed-forward of this layer (the draft stages bring their own).
  bool moe = false;
  int64_t routed_experts = 0;
  int64_t redundant_experts = 0;  // replicas of the hottest over the EP group (the backbone's alone)
  int64_t top_k = 0;
  int64_t shared_experts = 0;
  int64_t ffn_intermediate = 0;
};

}  // namespace v41sim
