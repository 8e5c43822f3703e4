// DeploymentPlan: which variant of one or more deployments serves a workload
// within their SLA for the least money. The variants change each base
// deployment's GPU, EP size (one EP group per instance) and instance counts;
// each serves the same traffic (same seed) and then drains, so every request
// that arrived ends finished or rejected. A variant meets the SLA when at
// least `min_within_sla` of the requests that arrived finished within the
// bases' TTFT and TPOT limits (several bases must share them). Several bases
// put layouts side by side: aggregated against disaggregated, or different
// prefill/decode splits.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/common/catalog.h"
#include "sim/costing/served_run.h"
#include "sim/costing/shared_step_times.h"
#include "sim/model/model_analysis.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/workload_spec.h"

namespace v41sim {

// How a variant's pools lay out attention: GPUs an attention rank spans (1:
// data-parallel), or every GPU of an instance (one tensor-parallel rank, at
// whatever EP size the variant has).
struct AttentionLayout {
  static constexpr int64_t kWholeInstance = 0;
  int64_t gpus_per_rank = 1;
  bool operator==(const AttentionLayout&) const = default;
};
// "dp" (1), "tp" (the whole instance) or a GPU count, as plan's --attention spells them.
std::optional<AttentionLayout> parse_attention_layout(std::string_view text);

// What to vary; an empty list keeps the base deployment's value.
struct PlanGrid {
  std::vector<std::string> gpus{};          // GPU profiles, for both pools
  std::vector<std::string> prefill_gpus{};  // or for each pool (disaggregated deployments only)
  std::vector<std::string> decode_gpus{};
  std::vector<int64_t> eps{};                        // EP size = GPUs per instance, both pools
  std::vector<AttentionLayout> attention_layouts{};  // both pools
  std::vector<int64_t> prefill_instances{};          // disaggregated deployments only
  std::vector<int64_t> decode_instances{};
  // Each pool keeps the base's GPUs at every EP size: its instances are its
  // GPUs over the EP size (which must divide them), not the base's count.
  bool keep_gpus = false;
  // KV tiers: how long the SSD tier keeps a session's global KV (hours; 0:
  // no persistent tier) and the share of each node's DRAM that parks window
  // state (0: none, every returning turn replays its window).
  std::vector<double> kv_retentions_h{};
  std::vector<double> swa_pool_fractions{};
  // The SSD tier's size, TB (0: unbounded, as large as what the retention keeps).
  std::vector<double> ssd_capacities_tb{};
  // Aggregated deployments only: prompts in steps of their own, or mixed into decode steps.
  std::vector<DeploymentSpec::AggregatedSteps> aggregated_steps{};
  // Where prompts go among instances and ranks: least load or round robin.
  std::vector<DeploymentSpec::Routing> routings{};
  // The schedulers' limits: prompt tokens a rank runs in one step (the
  // prefill chunk; aggregated and mixed, the decode step's budget too), and
  // sequences a decode rank holds.
  std::vector<int64_t> max_tokens_per_step{};
  std::vector<int64_t> max_batch_per_gpu{};
  // Aggregated deployments whose prompts run first only: decode steps a rank's
  // prompts may wait in a row for the other ranks' (0: no delay).
  std::vector<int64_t> prefill_delay_steps{};
  // EPLB's replicas of the hottest experts per EP group, both pools (they
  // spread the load and let EP sizes that do not divide the routed experts
  // run; each costs a rank an expert's weights). Empty: as set_ep leaves the base's.
  std::vector<int64_t> redundant_experts{};
  // The model's routed experts (0: not known), for how an EP size carries a
  // base's redundant experts (plan_variants).
  int64_t routed_experts = 0;
  // EP over each GPU's NVLink domain (`--ep domain`): each decode GPU's domain
  // size by its name (its profile's, as the variants name their GPUs). Empty: not
  // asked. Each GPU then also runs one EP group over its whole domain, with
  // the fewest replicas, no fewer than the base's, that deal the routed
  // experts over it (unless the grid sets the replicas).
  std::map<std::string, int64_t> domain_eps{};
};

// The cross product of the grid over the base, in a fixed order (GPUs, EP,
// prefill instances, decode instances, aggregated steps, routing, attention
// layout, redundant experts, tokens per prefill step, decode batch, prefill delay, KV retention, window-state
// pool, SSD tier size). Where the grid does not set them, redundant experts
// keep the base's count per rank where both EP sizes divide the routed
// experts (or the model is not known), else their count in all (DeepSeek and
// SGLang deploy 32 replicas at EP 32, 72 and 144); the model then checks that
// they deal the slots evenly. Throws InputError
// naming the flag for a value that is not positive (a retention or a replica
// count below 0, a pool share outside [0, 1)), per-pool GPUs or prefill instances for an
// aggregated deployment, aggregated steps for a disaggregated one, GPUs for
// both pools and for one at once, or an EP of 1 where the base's prefill is
// context-parallel.
std::vector<DeploymentSpec> plan_variants(const DeploymentSpec& base, const PlanGrid& grid);

// The fewest EPLB replicas, at least `at_least`, that make `routed_experts`
// plus them a multiple of `ep` (so each rank holds as many expert slots).
int64_t replicas_to_deal(int64_t routed_experts, int64_t ep, int64_t at_least);

// The variants of each base in turn. With several bases, what only a
// disaggregated deployment has (per-pool GPUs, prefill instances) varies the
// disaggregated bases and leaves the aggregated ones as they are, and the
// aggregated steps the other way round; it is an error where no base has it. No bases, or bases whose SLAs
// differ, are an InputError (the SLA flags make them agree).
std::vector<DeploymentSpec> plan_variants(const std::vector<DeploymentSpec>& bases, const PlanGrid& grid);

struct PlanRow {
  DeploymentSpec deployment;
  std::string not_run;  // why the variant could not run (e.g. the model does not fit); empty if it ran
  ServedRun run;
  bool meets_sla = false;
  // The variant served again over a longer window (the same seeds and
  // warm-up), asked of the variants within the SLA in rank order until one
  // holds: a deployment near its capacity can meet the SLA for minutes while
  // its queue creeps. Absent where not asked.
  std::optional<ServedRun> confirmation;
  bool confirmation_holds = false;  // met the SLA over it, its window's second half settled
  // Within the SLA and, as far as was asked, for longer than the window:
  // settled over it, and over the confirmation where one was served.
  bool holds() const;
};

// Every variant, served (on all cores: the rows do not depend on how the
// runs interleave), in rank_plan_rows' order. Variants that time
// steps alike share their step times: in `shared` where given (a caller's,
// such as the study report's), else in the plan's own.
// With `confirm_s` longer than the options' window, the cheapest variants
// within the SLA are then served again over it (confirm_in_rank_order) and
// ranked again.
std::vector<PlanRow> run_plan(const Catalog& catalog, const ModelAnalysis& model,
                              const std::vector<DeploymentSpec>& bases, const PlanGrid& grid,
                              const WorkloadSpec& workload, const ServeOptions& options,
                              double min_within_sla, double confirm_s = 0, SharedStepTimes* shared = nullptr);

// Rows that meet the SLA first, those that hold it (PlanRow::holds) before
// those whose window was still moving or whose confirmation missed, each
// cheapest per output token first (unknown prices after known ones); then
// the others by their share within the SLA. Ties keep the rows' order.
void rank_plan_rows(std::vector<PlanRow>& rows);

// Serves ranked rows within the SLA again with `serve_again`, in rank order,
// two at a time (confirm_two_at_a_time), until one meets the SLA over that
// run with its second half settled (its first may still fill up:
// SteadyState::tail_steady); then ranks the rows again, so the first row is
// the cheapest that held (the next may have been asked with it; rows past
// that are not).
void confirm_in_rank_order(std::vector<PlanRow>& rows, double min_within_sla,
                           const std::function<ServedRun(const PlanRow&)>& serve_again);

}  // namespace v41sim
