// ModelAnalysis: everything v41sim derives from one model file, computed once.
#pragma once

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

}  // namespace v41sim
