#include "sim/model/model_analysis.h"

#include <fmt/format.h>

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

void require_servable_context(const ModelSpec& spec, int64_t context, const char* flag) {
  if (context <= 0 || context > spec.max_context) {
    throw InputError({"", 0, flag}, fmt::format("expected tokens in (0, {}] ({}'s max_context), got {}",
                                                spec.max_context, spec.name, context));
  }
}

void require_ep_divides_experts(const ModelSpec& spec, int64_t ep, const InputLocation& where) {
  if (ep <= 0) throw InputError(where, fmt::format("expected a positive EP size, got {}", ep));
  const int64_t experts = spec.moe ? spec.moe->routed_experts : 1;
  if (experts % ep != 0) {
    throw InputError(
        where, fmt::format("EP size {} does not divide the {} routed experts of {}", ep, experts, spec.name));
  }
}

}  // namespace v41sim
