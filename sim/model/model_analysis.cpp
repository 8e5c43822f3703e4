#include "sim/model/model_analysis.h"

#include <fmt/format.h>

#include <algorithm>

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

std::vector<std::string> other_index_key_formats(const ModelSpec& spec) {
  std::vector<std::string> names;
  if (!spec.attention.indexer) return names;
  for (const auto& [name, format] : spec.cache_formats) {
    const bool index_key = !format.parts.empty() &&
                           std::all_of(format.parts.begin(), format.parts.end(),
                                       [](const CacheEntryPart& p) { return p.dimension == "index_key"; });
    if (index_key && name != spec.attention.indexer->key_cache) names.push_back(name);
  }
  return names;
}

ModelAnalysis analyze_with_index_keys(ModelSpec spec, const std::string& format) {
  spec.attention.indexer->key_cache = format;
  return analyze_model(std::move(spec));
}

void require_servable_context(const ModelSpec& spec, int64_t context, const char* flag) {
  if (context <= 0 || context > spec.max_context) {
    throw InputError({"", 0, flag}, fmt::format("expected tokens in (0, {}] ({}'s max_context), got {}",
                                                spec.max_context, spec.name, context));
  }
}

void require_ep_divides_expert_slots(const ModelSpec& spec, int64_t ep, int64_t redundant,
                                     const InputLocation& ep_at, const InputLocation& redundant_at) {
  if (ep <= 0) throw InputError(ep_at, fmt::format("expected a positive EP size, got {}", ep));
  if (!spec.moe) {
    if (redundant != 0) {
      throw InputError(redundant_at,
                       fmt::format("expected 0 redundant replicas: {} has no routed experts, got {}",
                                   spec.name, redundant));
    }
    return;
  }
  const int64_t experts = spec.moe->routed_experts;
  if (redundant < 0 || redundant > experts) {
    throw InputError(redundant_at, fmt::format("expected 0..{} redundant replicas (at most as many as {}'s "
                                               "routed experts), got {}",
                                               experts, spec.name, redundant));
  }
  const int64_t slots = experts + redundant;
  if (slots % ep == 0) return;
  // The fewest replicas past those given that would deal evenly.
  const int64_t more = ep - slots % ep;
  const std::string replicas =
      redundant > 0 ? fmt::format(" + {} redundant replicas = {} slots", redundant, slots) : std::string();
  // Named where the fault lies: the replicas where the experts alone deal evenly, else the EP size.
  const InputLocation& at = redundant > 0 && experts % ep == 0 ? redundant_at : ep_at;
  throw InputError(at, fmt::format("EP size {} does not divide the {} routed experts of {}{} (each rank "
                                   "holds as many); {} redundant {} would make {} slots",
                                   ep, experts, spec.name, replicas, redundant + more,
                                   redundant + more == 1 ? "replica" : "replicas", slots + more));
}

}  // namespace v41sim
