#include "sim/costing/serving_cost.h"

#include <algorithm>

namespace v41sim {
namespace {

constexpr double kHoursPerMonth = 8760.0 / 12.0;  // a month as a twelfth of a 365-day year

}  // namespace

double ssd_tier_usd_per_hour(double bytes, const KvTierSpec& tier) {
  return tier.ssd_usd_per_tb_month.known() ? bytes / 1e12 * tier.ssd_usd_per_tb_month.value() / kHoursPerMonth
                                           : 0.0;
}

SsdTierCost ssd_tier_cost(const ServingResult& r, const KvTierSpec& tier) {
  SsdTierCost c;
  c.sessions_per_s = r.duration_s > 0 ? static_cast<double>(r.sessions_arrived) / r.duration_s : 0.0;
  c.last_context_tokens = r.mean_last_context_tokens;
  c.bytes_per_session = r.persisted_bytes_per_session;
  c.retention_s = tier.retention_s;
  c.keeps_s = r.tier_keeps_s;
  c.hold_s = r.mean_hold_s;
  c.bytes = c.held_bytes(c.bytes_per_session);
  // A tier of bounded size is paid for whole (while the tier is on at all).
  if (tier.ssd_capacity_tb && tier.retention_s > 0) {
    c.capacity_bytes = tier.ssd_capacity_tb->value() * 1e12;
    c.bytes = std::min(c.bytes, c.capacity_bytes);
  }
  c.priced = tier.ssd_usd_per_tb_month.known();
  c.usd_per_hour = ssd_tier_usd_per_hour(c.capacity_bytes > 0 ? c.capacity_bytes : c.bytes, tier);
  c.provenance = c.priced ? tier.ssd_usd_per_tb_month.provenance().label()
                          : "SSD tier left out: " + tier.ssd_usd_per_tb_month.provenance().label();
  return c;
}

namespace {

// A figure of each pool's GPU: its source, each pool's where the pools differ.
std::string pools_provenance(const SourcedValue GpuProfile::*figure, int64_t prefill_gpus,
                             const GpuProfile& prefill_gpu, const GpuProfile& decode_gpu) {
  const std::string decode = (decode_gpu.*figure).provenance().label();
  if (prefill_gpus == 0 || &prefill_gpu == &decode_gpu) return decode;
  return "prefill " + (prefill_gpu.*figure).provenance().label() + "; decode " + decode;
}

GpuPower gpu_power(const ServingResult& r, int64_t prefill_gpus, int64_t decode_gpus,
                   const GpuProfile& prefill_gpu, const GpuProfile& decode_gpu) {
  GpuPower p;
  p.provenance = pools_provenance(&GpuProfile::power_watts, prefill_gpus, prefill_gpu, decode_gpu);
  if (!decode_gpu.power_watts.known() || (prefill_gpus > 0 && !prefill_gpu.power_watts.known())) return p;
  p.known = true;
  p.rated_kw =
      (decode_gpu.power_watts.value() * static_cast<double>(decode_gpus) +
       (prefill_gpus > 0 ? prefill_gpu.power_watts.value() * static_cast<double>(prefill_gpus) : 0.0)) /
      1e3;
  const double kwh = p.rated_kw * r.duration_s / 3600.0;
  if (r.output_tokens_generated > 0)
    p.kwh_per_million_output = kwh / static_cast<double>(r.output_tokens_generated) * 1e6;
  return p;
}

}  // namespace

ServingCost serving_cost(const ServingResult& r, const DeploymentSpec& d, const GpuProfile& prefill_gpu,
                         const GpuProfile& decode_gpu) {
  ServingCost c;
  const int64_t decode_gpus = d.decode.instances * d.decode.gpus_per_instance;
  const int64_t prefill_gpus = d.disaggregated ? d.prefill.instances * d.prefill.gpus_per_instance : 0;
  c.provenance = pools_provenance(&GpuProfile::price_usd_per_gpu_hour, prefill_gpus, prefill_gpu, decode_gpu);
  c.power = gpu_power(r, prefill_gpus, decode_gpus, prefill_gpu, decode_gpu);
  c.ssd_tier = ssd_tier_cost(r, d.kv);
  const bool prefill_known = prefill_gpus == 0 || prefill_gpu.price_usd_per_gpu_hour.known();
  if (!prefill_known || !decode_gpu.price_usd_per_gpu_hour.known()) return c;
  c.known = true;
  c.gpu_usd_per_hour =
      decode_gpu.price_usd_per_gpu_hour.value() * static_cast<double>(decode_gpus) +
      (prefill_gpus > 0 ? prefill_gpu.price_usd_per_gpu_hour.value() * static_cast<double>(prefill_gpus)
                        : 0.0);
  c.usd_per_hour = c.gpu_usd_per_hour + c.ssd_tier.usd_per_hour;
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
  const SsdTierCost& t = c.ssd_tier;
  const nlohmann::json tier = {{"sessions_per_s", t.sessions_per_s},
                               {"last_context_tokens", t.last_context_tokens},
                               {"bytes_per_session", t.bytes_per_session},
                               {"retention_h", t.retention_s / 3600},
                               {"keeps_h", t.keeps_s / 3600},
                               {"mean_hold_h", t.hold_s / 3600},
                               {"capacity_bytes", t.capacity_bytes},
                               {"steady_state_bytes", t.bytes},
                               {"priced", t.priced},
                               {"usd_per_hour", t.usd_per_hour},
                               {"provenance", t.provenance}};
  const nlohmann::json power = {{"known", c.power.known},
                                {"rated_kw", c.power.rated_kw},
                                {"kwh_per_million_output", c.power.kwh_per_million_output},
                                {"provenance", c.power.provenance}};
  if (!c.known)
    return {{"known", false}, {"provenance", c.provenance}, {"ssd_tier", tier}, {"gpu_power", power}};
  return {{"known", true},
          {"gpu_power", power},
          {"usd_per_hour", c.usd_per_hour},
          {"gpu_usd_per_hour", c.gpu_usd_per_hour},
          {"usd_per_million_input_tokens", c.usd_per_million_input},
          {"usd_per_million_output_tokens", c.usd_per_million_output},
          {"provenance", c.provenance},
          {"ssd_tier", tier}};
}

}  // namespace v41sim
