#include "sim/costing/serving_cost.h"

namespace v41sim {

ServingCost serving_cost(const ServingResult& r, const GpuProfile& gpu) {
  ServingCost c;
  c.provenance = gpu.price_usd_per_gpu_hour.provenance().label();
  if (!gpu.price_usd_per_gpu_hour.known()) return c;
  c.known = true;
  c.usd_per_hour = gpu.price_usd_per_gpu_hour.value() * static_cast<double>(r.gpus);
  const double dollars = c.usd_per_hour * r.duration_s / 3600.0;
  const auto input = static_cast<double>(r.input_tokens_prefilled + r.input_tokens_cached);
  const auto output = static_cast<double>(r.output_tokens_generated);
  // The whole deployment's cost is charged to each token kind in turn: these
  // are upper bounds per kind, not a split.
  c.usd_per_million_input = input > 0 ? dollars / input * 1e6 : 0;
  c.usd_per_million_output = output > 0 ? dollars / output * 1e6 : 0;
  return c;
}

nlohmann::json cost_json(const ServingCost& c) {
  if (!c.known) return {{"known", false}, {"provenance", c.provenance}};
  return {{"known", true},
          {"usd_per_hour", c.usd_per_hour},
          {"usd_per_million_input_tokens", c.usd_per_million_input},
          {"usd_per_million_output_tokens", c.usd_per_million_output},
          {"provenance", c.provenance}};
}

}  // namespace v41sim
