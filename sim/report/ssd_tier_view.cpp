#include "sim/report/ssd_tier_view.h"

#include <fmt/format.h>

#include "sim/costing/serving_cost.h"
#include "sim/report/run_view.h"

namespace v41sim {

std::vector<SsdTierOfModel> ssd_tier_by_model(const std::vector<ModelAnalysis>& models, const ServedRun& run,
                                              const DeploymentSpec& deployment) {
  const SsdTierCost& tier = run.cost.ssd_tier;
  const double gpu_usd_per_hour = run.cost.known ? run.cost.gpu_usd_per_hour : 0.0;
  std::vector<SsdTierOfModel> rows;
  for (const ModelAnalysis& m : models) {
    SsdTierOfModel& row = rows.emplace_back();
    row.model = m.spec.name;
    row.bytes_per_token = m.kv.global_bytes_per_token;
    row.bytes = tier.held_bytes(tier.last_context_tokens * row.bytes_per_token);
    row.usd_per_hour = ssd_tier_usd_per_hour(row.bytes, deployment.kv);
    row.of_gpu_cost = gpu_usd_per_hour > 0 ? row.usd_per_hour / gpu_usd_per_hour : 0.0;
  }
  return rows;
}

Table ssd_tier_table(const std::vector<SsdTierOfModel>& rows, const ServedRun& run,
                     const DeploymentSpec& deployment, const std::string& served_by,
                     const std::string& workload) {
  const SsdTierCost& tier = run.cost.ssd_tier;
  Table t(fmt::format("The SSD tier at steady state under '{}', by model ({} sessions/s, {:g} h retention)",
                      workload, fmt::format("{:.3f}", tier.sessions_per_s), tier.retention_s / 3600),
          {"model", "global KV per token", "SSD tier", "$ per hour", "of the GPUs' $ per hour"});
  for (const SsdTierOfModel& r : rows) {
    t.add_row({r.model, format_bytes(r.bytes_per_token), fmt::format("{:.1f} TB", r.bytes / 1e12),
               tier.priced ? fmt::format("${:.2f}", r.usd_per_hour) : "unknown",
               r.of_gpu_cost > 0 ? fmt::format("{:.1f}%", 100 * r.of_gpu_cost) : "-"});
  }
  t.add_note(fmt::format(
      "the sessions of {} as {} served them (seed {}): {:.3f} sessions/s, each session's context after its "
      "last turn {:.0f} tokens on average; each model's global KV per token (derived from its file) times "
      "those tokens, held {} after the session's last turn (Little's law; a token-weighted mean, less than "
      "the retention where resumed sessions come back sooner); window state is not persisted (bounded "
      "replay or the host-DRAM pool); a model with a shorter context would end some sessions sooner",
      deployment.name, served_by, run.seeds.empty() ? 0 : run.seeds.front().seed, tier.sessions_per_s,
      tier.last_context_tokens, time_held(tier)));
  if (run.cost.known) {
    t.add_note(fmt::format(
        "of the GPUs' $ per hour: against the deployment's GPUs as they serve {} (${:.2f} per hour); another "
        "model would need GPUs of its own",
        served_by, run.cost.gpu_usd_per_hour));
  }
  t.add_note("SSD tier price " + tier.provenance + "; GPU price " + run.cost.provenance);
  return t;
}

nlohmann::json ssd_tier_json(const std::vector<SsdTierOfModel>& rows, const ServedRun& run) {
  nlohmann::json out = nlohmann::json::array();
  for (const SsdTierOfModel& r : rows) {
    out.push_back({{"model", r.model},
                   {"global_kv_bytes_per_token", r.bytes_per_token},
                   {"steady_state_bytes", r.bytes},
                   {"usd_per_hour", r.usd_per_hour},
                   {"of_gpu_usd_per_hour", r.of_gpu_cost}});
  }
  return {{"sessions_per_s", run.cost.ssd_tier.sessions_per_s},
          {"last_context_tokens", run.cost.ssd_tier.last_context_tokens},
          {"retention_h", run.cost.ssd_tier.retention_s / 3600},
          {"mean_hold_h", run.cost.ssd_tier.hold_s / 3600},
          {"models", out}};
}

}  // namespace v41sim
