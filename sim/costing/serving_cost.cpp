#include "sim/costing/serving_cost.h"

namespace v41sim {

ServingCost serving_cost(const ServingResult& r, const DeploymentSpec& d, const GpuProfile& prefill_gpu,
                         const GpuProfile& decode_gpu) {
  ServingCost c;
  const int64_t decode_gpus = d.decode.instances * d.decode.gpus_per_instance;
  const int64_t prefill_gpus = d.disaggregated ? d.prefill.instances * d.prefill.gpus_per_instance : 0;
  c.provenance = decode_gpu.price_usd_per_gpu_hour.provenance().label();
  if (prefill_gpus > 0 && &prefill_gpu != &decode_gpu) {
    c.provenance =
        "prefill " + prefill_gpu.price_usd_per_gpu_hour.provenance().label() + "; decode " + c.provenance;
  }
  const bool prefill_known = prefill_gpus == 0 || prefill_gpu.price_usd_per_gpu_hour.known();
  if (!prefill_known || !decode_gpu.price_usd_per_gpu_hour.known()) return c;
  c.known = true;
  c.usd_per_hour =
      decode_gpu.price_usd_per_gpu_hour.value() * static_cast<double>(decode_gpus) +
      (prefill_gpus > 0 ? prefill_gpu.price_usd_per_gpu_hour.value() * static_cast<double>(prefill_gpus)
                        : 0.0);
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
