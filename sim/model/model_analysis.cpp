#include "sim/model/model_analysis.h"

namespace v41sim {

ModelAnalysis analyze_model(ModelSpec spec) {
  ModelAnalysis a;
  a.spec = std::move(spec);
  a.plan = derive_layer_plan(a.spec);
  a.kv = compute_kv_layout(a.spec, a.plan);
  a.params = count_params(a.spec, a.plan);
  a.active = active_params(a.spec, a.plan, a.params);
  a.weights = weight_bytes(a.spec, a.params, a.spec.weights);
  return a;
}

}  // namespace v41sim
