// ServingCost: what a run's GPUs and its SSD tier cost, per hour and per
// million tokens, at the GPU profile's $/GPU-hour and the deployment's $ per
// TB-month of the tier (each with its provenance; a GPU whose price is unknown
// yields no dollar figures rather than a guess, a tier whose price is unknown
// is left out and said so).
//
// The tier is costed at its steady state, not at what a run of minutes
// fills: by Little's law it holds sessions/s x a session's global KV after
// its last turn x the retention time. The minutes a session lasts before its
// last turn are left out (under 1% of a 72-h retention).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/hw/gpu_profile.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/serving_result.h"

namespace v41sim {

// The SSD tier at steady state and what it costs.
struct SsdTierCost {
  double sessions_per_s = 0;
  // A session's context after its last turn, the mean over the run's sessions.
  double last_context_tokens = 0;
  double bytes_per_session = 0;  // its global KV
  double retention_s = 0;
  // How long the tier keeps a context: the retention, or less where its
  // capacity fills first (ServingResult::tier_keeps_s).
  double keeps_s = 0;
  // How long a context is held, token-weighted: what the tier keeps it,
  // less where resumed sessions come back sooner (ServingResult::mean_hold_s).
  double hold_s = 0;
  double capacity_bytes = 0;  // provisioned; 0: unbounded, as large as what it holds
  double bytes = 0;           // held at steady state (at most the capacity)
  bool priced = false;        // the deployment gives the tier's price
  double usd_per_hour = 0;    // of what is provisioned (the capacity, else what it holds); 0 where unpriced
  std::string provenance;     // its price's source, or why it is left out
  // Little's law: what the tier holds with each session keeping `session_bytes` for the hold time.
  double held_bytes(double session_bytes) const { return sessions_per_s * session_bytes * hold_s; }
};

// The GPUs' power at each profile's rated draw (its TDP), and the energy
// each million output tokens takes at it: an upper bound on the GPUs' own draw (decode,
// bound by memory, draws less); hosts, network, storage and cooling are not
// counted.
struct GpuPower {
  bool known = false;  // every pool's GPU gives its rated power
  double rated_kw = 0;
  double kwh_per_million_output = 0;  // 0 where nothing was generated
  std::string provenance;             // the rated power's source (each pool's where they differ)
};

struct ServingCost {
  GpuPower power;
  bool known = false;
  std::string provenance;  // the price's source, or why there is none
  double gpu_usd_per_hour = 0;
  double usd_per_hour = 0;  // GPUs + the SSD tier where priced
  SsdTierCost ssd_tier;
  double usd_per_million_input = 0;   // all input tokens served (prefilled or from cache)
  double usd_per_million_output = 0;  // output tokens generated
};

// $ per hour of keeping `bytes` in the deployment's SSD tier (0 where its price is unknown).
double ssd_tier_usd_per_hour(double bytes, const KvTierSpec& tier);

SsdTierCost ssd_tier_cost(const ServingResult& result, const KvTierSpec& tier);
ServingCost serving_cost(const ServingResult& result, const DeploymentSpec& deployment,
                         const GpuProfile& prefill_gpu, const GpuProfile& decode_gpu);
nlohmann::json cost_json(const ServingCost& cost);

}  // namespace v41sim
