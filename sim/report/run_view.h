// Views of a serving run for `v41sim run`: tables and one JSON object.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "sim/costing/served_run.h"
#include "sim/costing/serving_cost.h"
#include "sim/report/table.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/serving_result.h"
#include "sim/serving/workload_spec.h"

namespace v41sim {

struct RunReport {
  const std::string& model;
  const DeploymentSpec& deployment;
  const WorkloadSpec& workload;
  uint64_t seed;  // the first seed's; the run's figures are its
  const ServedRun& run;
};

std::vector<Table> run_tables(const RunReport& r);
// Whether a run's window had settled (SteadyState::steady), in words and as JSON.
std::string steady_state_phrase(const ServingResult& x);
nlohmann::json steady_state_json(const ServingResult& x);
// How long the SSD tier holds a context: its retention, or less where
// resumed sessions come back sooner or a full tier evicts first.
std::string time_held(const SsdTierCost& tier);
// "traffic 'NAME' (SOURCE)": the workload a table served, and where its shape
// comes from; a closed loop's adds its sessions at a time.
std::string traffic_note(const WorkloadSpec& workload);
nlohmann::json run_json(const RunReport& r);

// For tables that compare served runs (the report's serving sections, plan):
// the $ per 1M output tokens cell ("unknown" without a public GPU price); the
// run's kernel-model labels added to `labels` unless already there; and the
// notes naming those kernel models and how the $ figure is charged.
// The mean over the run's seeds, to `decimals` places.
// A mix of traffic's classes in one line ("chat 99.6% within the SLA (TTFT p99 ... ms, TPOT p99 ... ms);
// ..."; a class held to limits of its own names them), the first seed's run; empty without a mix.
std::string classes_line(const ServingResult& result, const WorkloadSpec& workload);
// "p50 / p99" of a latency to `decimals` places; "-" where nothing was timed.
std::string p50_p99(const LatencySummary& s, int decimals);
// "TTFT <= T ms and TPOT <= P ms": the limits a run's requests are held to;
// where a mix's classes give their own, theirs follow ("; chat's own: ...").
std::string sla_phrase(const SlaSpec& deployment, const WorkloadSpec& workload);
// Where a mix's classes have limits of their own, a note that the p99
// columns pool the classes while each is judged on its own; else empty.
std::string pooled_latency_note(const WorkloadSpec& workload);
// What a verdict's share counts: "the requests that arrived", or in a mix "each class's requests that
// arrived".
std::string verdict_share_phrase(const WorkloadSpec& workload);
// The same for JSON: {ttft_ms, tpot_ms, classes: [{class, ttft_ms, tpot_ms}]}, the classes with their own.
nlohmann::json sla_json(const SlaSpec& deployment, const WorkloadSpec& workload);

std::string output_token_price(const ServedRun& run, int decimals = 2);
// Tables that rank served runs (plan's variants, capacity's rates) share
// these cells, in this order: within SLA (pooled over the seeds), TTFT p99,
// TPOT p99, ITL p99 (and, with `longest_itl`, the p99 of each request's
// longest gap, what an ITL limit judges), output tokens/s per GPU, $ and
// kWh per 1M output tokens (each the mean over the seeds, least-most in
// brackets where more than one ran), whether it meets the SLA, and the
// kernel-model band of its steps. `leading` columns, then those.
std::vector<std::string> with_served_run_columns(std::vector<std::string> leading, bool longest_itl);
// Whether an ITL limit judges some request: the deployment's, or a class's of the mix.
bool sla_limits_itl(const SlaSpec& deployment, const WorkloadSpec& workload);
// Whether it meets the SLA is judged on the seeds' requests pooled; with
// several seeds the cell also says how many of them meet it alone. Where it
// met it and was served again over a longer window (`confirmation`, plan's
// and capacity's), the cell says how that went: "yes, and over 1800 s" where
// it held there, "yes, not over a longer run" where it did not.
std::vector<std::string> served_run_cells(const ServedRun& run, double min_within_sla, bool longest_itl,
                                          const std::optional<ServedRun>& confirmation = std::nullopt,
                                          bool confirmation_holds = false);
// The same cells for a variant that could not run: "-", and why in the verdict's column.
std::vector<std::string> not_run_cells(const std::string& why, bool longest_itl);
// The same figures for JSON, with each seed's; and the verdict, for tables that judge one.
nlohmann::json served_run_json(const ServedRun& run);
nlohmann::json sla_verdict_json(const ServedRun& run, double min_within_sla);
// What the seeds column and notes say: "seed 1", or "seeds 1-5 (figures: mean (least-most); within SLA
// pooled)".
std::string seeds_phrase(const ServeOptions& options);
// A note naming the runs (each by its label) some seed of which ended its
// window with an output rate not yet settled; empty when every one had.
std::string unsettled_note(const std::vector<std::pair<std::string, const ServedRun*>>& runs);
// A note naming the runs (their first seed's) in which a trace's rows waited
// for their session's previous answer, with how many and how long; empty
// where none did.
std::string held_trace_rows_note(const std::vector<std::pair<std::string, const ServedRun*>>& runs);
// How a longer run (plan's and capacity's confirmation) fared: "97.2% within, not settled".
std::string confirmation_phrase(const ServedRun& run);
// How a trace's replay is judged when served again over a longer window.
inline constexpr const char* kTraceHoldsAssumption =
    "served again over the longer window, a trace's replay holds where it meets the SLA: its rows are the "
    "whole traffic, whose load moves as its sessions start and end, so its requests in the system are not "
    "asked to settle (a queue that grows shows in the latencies of the rows after it, all of which the "
    "drained run serves)";
// What a longer run served: its window ("1800 s", or with `seconds_of`
// "1800 s of arrivals"), or "the whole trace" where a trace's last row ended
// the window first.
std::string longer_window(const ServedRun& confirmation, std::string_view seconds_of = "");
// A confirmation run as JSON: its window, share within the SLA, verdict and settling.
nlohmann::json confirmation_json(const ServedRun& run, double min_within_sla, bool holds);
// "600 simulated s of arrivals measured after 1200 s of warm-up": what a run
// served, or what each run of a command serves.
std::string arrivals_phrase(double duration_s, double warm_up_s);
std::string arrivals_phrase(const ServeOptions& options, const WorkloadSpec& workload);
// A kernel model's calibration label and the GPUs whose step times it gave.
struct KernelModelUse {
  std::string label;
  std::vector<std::string> gpus;  // as the deployments name them, in the order met
};
// Adds `gpu` under `label` (labels and GPUs in the order met, each once).
void add_kernel_model_use(std::vector<KernelModelUse>& uses, const std::string& label,
                          const std::string& gpu);
// Adds the run's pools' GPUs under their labels.
void collect_kernel_models(const ServedRun& run, std::vector<KernelModelUse>& uses);
std::vector<KernelModelUse> kernel_models_of(const ServedRun& run);
nlohmann::json kernel_models_json(const std::vector<KernelModelUse>& uses);
// "step times on h200, b200 from the kernel model, <label>": a note per label.
void add_kernel_model_notes(Table& table, const std::vector<KernelModelUse>& kernel_models);
// What a table's ITL column means (run's latency table says it at length).
std::string itl_column_note();
// What a "longest ITL" column or row means.
std::string longest_itl_column_note();
// What the "step band, prefill / decode" column of served runs means.
std::string step_band_column_note();
// What a "no" in the meets-SLA column says after it ("no: 21.4% over TTFT").
std::string misses_note();
// What the requests of a run that missed the SLA missed, the most common
// first: "21.4% over TTFT, 0.3% unfinished" (shares of those that arrived,
// pooled over the seeds); empty where none missed.
std::string misses_phrase(const ServedRun& run);
void add_served_run_notes(Table& table, const std::vector<KernelModelUse>& kernel_models);
// How an aggregated deployment's steps are modelled where prompts and decode
// share them (kMixedStepAssumption, or kBesidePromptsAssumption for prompts
// in steps of their own); null for a disaggregated one.
const char* aggregated_steps_assumption(const DeploymentSpec& deployment);
// Where the first token is timed from, for a disaggregated deployment (null: aggregated).
const char* first_token_assumption(const DeploymentSpec& deployment);
// What the KV tiers found over a run (hits, misses, window-state evictions).
nlohmann::json kv_tiers_json(const KvTierCounters& counters);

}  // namespace v41sim
