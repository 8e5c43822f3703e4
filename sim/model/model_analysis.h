// ModelAnalysis: everything v41sim derives from one model file, computed once.
#pragma once

#include "sim/common/input_error.h"
#include "sim/model/kv_layout.h"
#include "sim/model/layer_plan.h"
#include "sim/model/model_spec.h"
#include "sim/model/param_count.h"

namespace v41sim {

struct ModelAnalysis {
  ModelSpec spec;
  LayerPlan plan;
  KvLayout kv;
  ParamCounts params;
  ActiveParams active;
  WeightBytes weights;  // with the model file's own weight formats
};

ModelAnalysis analyze_model(ModelSpec spec);

// The cache formats the model file defines for its index keys besides the one
// it stores them in (the FP8 key of engines without an FP4 indexer, say), by
// name; none for a model without an indexer (analyze_with_index_keys stores
// the keys in one).
std::vector<std::string> other_index_key_formats(const ModelSpec& spec);

// The model analysed with its index keys stored in `format`, one of
// other_index_key_formats(spec): its KV bytes and its logits' reads follow.
ModelAnalysis analyze_with_index_keys(ModelSpec spec, const std::string& format);

// A session length the model serves: (0, max_context] tokens; else an
// InputError naming `flag`.
void require_servable_context(const ModelSpec& spec, int64_t context, const char* flag);

// A positive expert-parallel size that deals the expert slots evenly: the
// routed experts plus `redundant` replicas of the hottest (EPLB), so that
// every rank holds as many (any size, for a dense model). Redundant replicas
// are what make sizes that do not divide the experts possible: DeepSeek's
// decode deploys V3's 256 experts plus 32 replicas over EP 144, two a GPU.
// Else an InputError at `ep_at`, naming the replicas that would deal evenly;
// more replicas than routed experts is an error at `redundant_at`.
void require_ep_divides_expert_slots(const ModelSpec& spec, int64_t ep, int64_t redundant,
                                     const InputLocation& ep_at, const InputLocation& redundant_at);

}  // namespace v41sim
