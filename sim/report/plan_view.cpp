#include "sim/report/plan_view.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "sim/graph/step_graph.h"
#include "sim/graph/tensor_parallel.h"
#include "sim/report/run_view.h"

namespace v41sim {
namespace {

// The kernel-model labels of the rows that ran, with their GPUs, in order.
std::vector<KernelModelUse> kernel_models(const std::vector<PlanRow>& rows) {
  std::vector<KernelModelUse> out;
  for (const PlanRow& r : rows) {
    if (r.not_run.empty()) collect_kernel_models(r.run, out);
  }
  return out;
}

// Variants within the SLA over the window that did not hold it over the
// longer run asked of them, with how they fared there.
std::string failed_confirmations_note(const std::vector<PlanRow>& rows) {
  std::vector<std::string> failed;
  std::string window;
  for (const PlanRow& row : rows) {
    if (!row.confirmation || row.confirmation_holds) continue;
    window = longer_window(*row.confirmation, " of arrivals");
    failed.push_back(fmt::format("{} ({})", row.deployment.name, confirmation_phrase(*row.confirmation)));
  }
  if (failed.empty()) return {};
  return fmt::format(
      "within the SLA over the window but not over {} (the same seed and warm-up), so ranked after those "
      "that hold it: {}",
      window, fmt::join(failed, "; "));
}

// The answer in one line: the first row, if it meets the SLA.
std::string verdict(const std::vector<PlanRow>& rows) {
  if (rows.empty() || !rows.front().meets_sla) return "no variant meets the SLA";
  const PlanRow& best = rows.front();
  if (!best.run.cost.known) {
    return "within the SLA: " + best.deployment.name + ", but no variant within it has a known GPU price";
  }
  std::string held;
  if (best.confirmation && best.confirmation_holds) {
    held = fmt::format(", and within it over {} ({})", longer_window(*best.confirmation),
                       confirmation_phrase(*best.confirmation));
  } else if (best.confirmation) {
    held = fmt::format(", but not over {}: {}", longer_window(*best.confirmation),
                       confirmation_phrase(*best.confirmation));
  } else if (best.run.seeds_unsettled() > 0) {
    held = ", but over a window whose requests in the system had not settled";
  }
  return fmt::format("cheapest within the SLA: {} ({} per 1M output tokens){}", best.deployment.name,
                     output_token_price(best.run), held);
}

// The SSD tiers the variants would keep at steady state, which their $ include.
std::string ssd_tier_note(const std::vector<PlanRow>& rows) {
  std::vector<double> terabytes, usd_per_hour;
  for (const PlanRow& r : rows) {
    if (!r.not_run.empty() || r.run.cost.ssd_tier.bytes <= 0) continue;
    terabytes.push_back(r.run.cost.ssd_tier.bytes / 1e12);
    if (r.run.cost.ssd_tier.priced) usd_per_hour.push_back(r.run.cost.ssd_tier.usd_per_hour);
  }
  if (terabytes.empty()) return "no variant keeps an SSD tier";
  // "18.4" or "18.4 to 36.8", as the figures print.
  const auto range = [](const std::vector<double>& values, const char* format) {
    const auto [low, high] = std::minmax_element(values.begin(), values.end());
    const std::string least = fmt::format(fmt::runtime(format), *low);
    const std::string most = fmt::format(fmt::runtime(format), *high);
    return least == most ? least : least + " to " + most;
  };
  return fmt::format("SSD tier at steady state, in the $ figures where it is priced: {} TB, {}",
                     range(terabytes, "{:.1f}"),
                     usd_per_hour.empty() ? "no price" : range(usd_per_hour, "${:.2f}") + " per hour");
}

// Whether the variants keep different SSD tiers (retention or size): then
// each row says the tier it keeps, what sets those variants apart in $.
bool tiers_vary(const std::vector<PlanRow>& rows) {
  const auto size_tb = [](const PlanRow& r) {
    return r.deployment.kv.ssd_capacity_tb ? r.deployment.kv.ssd_capacity_tb->value() : 0.0;
  };
  return std::any_of(rows.begin(), rows.end(), [&](const PlanRow& r) {
    return r.deployment.kv.retention_s != rows.front().deployment.kv.retention_s ||
           size_tb(r) != size_tb(rows.front());
  });
}

std::string ssd_tier_cell(const PlanRow& row) {
  const SsdTierCost& tier = row.run.cost.ssd_tier;
  if (!row.not_run.empty()) return "-";
  if (tier.bytes <= 0 && tier.capacity_bytes <= 0) return "none";
  return fmt::format("{:.1f} TB{}, {}", tier.bytes / 1e12,
                     tier.capacity_bytes > 0
                         ? fmt::format(" of {:.1f} provisioned", tier.capacity_bytes / 1e12)
                         : std::string(),
                     tier.priced ? fmt::format("${:.2f} per hour", tier.usd_per_hour) : "no price");
}

// A pool as a variant lays it out, with the limits plan can vary.
nlohmann::json pool_json(const PoolSpec& pool) {
  return {{"gpu", pool.gpu},
          {"instances", pool.instances},
          {"ep", pool.ep},
          {"attention_tp", pool.attention_tp},
          {"routed_experts_split", pool.experts_split_by_columns ? "columns" : "experts"},
          {"redundant_experts", pool.redundant_experts},
          {"max_tokens_per_step", pool.max_tokens_per_step},
          {"max_batch_per_gpu", pool.max_batch_per_gpu}};
}

}  // namespace

Table plan_table(const PlanReport& p) {
  const SlaSpec& sla = p.bases.front().sla;
  std::vector<std::string> base_files;
  for (const DeploymentSpec& base : p.bases) base_files.push_back(base.file);
  const bool tier_column = tiers_vary(p.rows);
  const bool longest_itl = sla_limits_itl(sla, p.workload);
  std::vector<std::string> columns = with_served_run_columns({"rank", "deployment", "GPUs"}, longest_itl);
  if (tier_column) columns.push_back("SSD tier at steady state");
  Table t(
      fmt::format(
          "{} under '{}': deployments by cost, those within the SLA first (those that hold it before not)",
          p.model, p.workload.name),
      columns);
  int rank = 0;
  for (const PlanRow& row : p.rows) {
    ++rank;
    std::vector<std::string> cells{std::to_string(rank), row.deployment.name,
                                   std::to_string(row.deployment.total_gpus())};
    for (std::string& cell : row.not_run.empty() ? served_run_cells(row.run, p.min_within_sla, longest_itl,
                                                                    row.confirmation, row.confirmation_holds)
                                                 : not_run_cells(row.not_run, longest_itl))
      cells.push_back(std::move(cell));
    if (tier_column) cells.push_back(ssd_tier_cell(row));
    t.add_row(std::move(cells));
  }
  t.add_note(verdict(p.rows));
  if (const std::string note = failed_confirmations_note(p.rows); !note.empty()) t.add_note(note);
  std::vector<std::pair<std::string, const ServedRun*>> runs;
  for (const PlanRow& row : p.rows) {
    if (row.not_run.empty()) runs.emplace_back(row.deployment.name, &row.run);
  }
  if (const std::string note = unsettled_note(runs); !note.empty()) t.add_note(note);
  if (const std::string note = held_trace_rows_note(runs); !note.empty()) t.add_note(note);
  if (!p.rows.empty() && p.rows.front().not_run.empty() && !p.rows.front().run.result.by_class.empty()) {
    t.add_note(fmt::format("by class on {} (the first seed's run): {}", p.rows.front().deployment.name,
                           classes_line(p.rows.front().run.result, p.workload)));
    if (const std::string pooled = pooled_latency_note(p.workload); !pooled.empty()) t.add_note(pooled);
  }
  // A closed loop's sessions start as the deployment's speed lets them: the
  // same sessions, in the same order, not at the same times.
  const char* served = p.workload.arrival == WorkloadSpec::Arrival::kClosedLoop
                           ? "the same sessions in the same order as its speed lets them start"
                           : "the same arrivals";
  t.add_note(
      fmt::format("SLA: {} for at least {:.1f}% of {}; variants of {}, each serving {} ({}, {}), then "
                  "draining",
                  sla_phrase(sla, p.workload), 100 * p.min_within_sla, verdict_share_phrase(p.workload),
                  fmt::join(base_files, " and "), served, arrivals_phrase(p.options, p.workload),
                  seeds_phrase(p.options)));
  if (p.rows.size() <= p.bases.size()) {
    t.add_note(
        "one variant of each base: nothing was ranked against it; the grid flags (--hw, --ep, "
        "--prefill-instances, --decode-instances, --kv-retention-h, ...) each take a list of values to try");
  }
  if (p.bases.size() > 1) {
    t.add_note(
        "several bases: each variant is named after its base; per-pool GPUs and prefill instances vary the "
        "disaggregated bases only, aggregated steps the aggregated ones");
  }
  t.add_note(traffic_note(p.workload));
  if (p.workload.arrival == WorkloadSpec::Arrival::kTrace) t.add_note(kTraceHoldsAssumption);
  t.add_note(step_band_column_note());
  for (const char* steps : {kMixedStepAssumption, kBesidePromptsAssumption}) {
    const bool used = std::any_of(p.rows.begin(), p.rows.end(), [steps](const PlanRow& row) {
      return aggregated_steps_assumption(row.deployment) == steps;
    });
    if (used) t.add_note(steps);
  }
  if (std::any_of(p.rows.begin(), p.rows.end(),
                  [](const PlanRow& row) { return first_token_assumption(row.deployment) != nullptr; }))
    t.add_note(kDecodeSideFirstTokenAssumption);
  if (std::any_of(p.rows.begin(), p.rows.end(), [](const PlanRow& row) {
        return row.deployment.prefill.attention_tp > 1 || row.deployment.decode.attention_tp > 1;
      }))
    t.add_note(kTensorParallelAssumption);
  t.add_note(ssd_tier_note(p.rows));
  t.add_note(itl_column_note());
  t.add_note(misses_note());
  add_served_run_notes(t, kernel_models(p.rows));
  return t;
}

nlohmann::json plan_json(const PlanReport& p) {
  nlohmann::json rows = nlohmann::json::array();
  for (const PlanRow& row : p.rows) {
    const DeploymentSpec& d = row.deployment;
    nlohmann::json j{
        {"deployment", d.name},
        {"gpus", d.total_gpus()},
        {"prefill", pool_json(d.prefill)},
        {"decode", pool_json(d.decode)},
        {"disaggregated", d.disaggregated},
        {"aggregated_steps", d.disaggregated ? nlohmann::json(nullptr)
                                             : nlohmann::json(aggregated_steps_name(d.aggregated_steps))},
        {"prefill_delay_steps", d.prefill_delay_steps},
        {"kv_tiers",
         {{"retention_h", d.kv.retention_s / 3600},
          {"swa_pool_fraction", d.kv.host_pool_fraction},
          {"ssd_capacity_tb",
           d.kv.ssd_capacity_tb ? nlohmann::json(d.kv.ssd_capacity_tb->value()) : nlohmann::json(nullptr)}}}};
    if (!row.not_run.empty()) {
      j["not_run"] = row.not_run;
      rows.push_back(j);
      continue;
    }
    j.update(served_run_json(row.run));
    j.update(sla_verdict_json(row.run, p.min_within_sla));
    if (row.confirmation) {
      j["confirmation"] = confirmation_json(*row.confirmation, p.min_within_sla, row.confirmation_holds);
    }
    j["holds"] = row.meets_sla && row.holds();
    rows.push_back(j);
  }
  nlohmann::json bases = nlohmann::json::array();
  for (const DeploymentSpec& base : p.bases) bases.push_back(base.file);
  return {{"model", p.model},
          {"base_deployments", bases},
          {"workload", p.workload.name},
          {"warm_up_s", warm_up_of(p.options, p.workload)},
          {"duration_s", p.options.duration_s},
          {"seed", p.options.seed},
          {"seeds", p.options.seeds},
          {"min_within_sla", p.min_within_sla},
          {"sla", sla_json(p.bases.front().sla, p.workload)},
          {"kernel_models", kernel_models_json(kernel_models(p.rows))},
          {"rows", rows}};
}

}  // namespace v41sim
