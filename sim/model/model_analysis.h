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

// A session length the model serves: (0, max_context] tokens; else an
// InputError naming `flag`.
void require_servable_context(const ModelSpec& spec, int64_t context, const char* flag);

// A positive expert-parallel size that divides the routed experts (any, for
// a dense model); else an InputError at `where`.
void require_ep_divides_experts(const ModelSpec& spec, int64_t ep, const InputLocation& where);

}  // namespace v41sim
