// Flags shared by the v41sim commands, and the helpers they share. Private
// to sim/cli: each command group lives in its own file and registers its
// flags in commands.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/common/catalog.h"
#include "sim/costing/confirmation.h"
#include "sim/model/model_analysis.h"
#include "sim/report/table.h"

namespace v41sim::cli {

// Flags shared by the commands; each command reads the ones it registers.
struct Flags {
  std::string model = "deepseek_v4_1_flash";
  std::string hw = "h200";
  int64_t context = 0;                     // step, compare-layers (required there)
  std::optional<int64_t> session_context;  // kv, fit: none given = the model's max_context
  int64_t gpus = 8;
  int64_t ep = 8;
  int64_t attention_tp = 1;         // step, fit: GPUs an attention rank spans (tensor-parallel attention)
  bool experts_by_columns = false;  // step: a tensor-parallel rank's experts split by columns
  std::string weights_dtype = "released";
  std::string dense_placement = "replicated";
  std::optional<double> reserve_fraction;  // none given: the default assumption
  std::string out_dir = "reports/latest";
  bool json = false;
  // step / compare-layers
  std::string phase = "decode";
  int64_t batch = 1;
  std::string mhc = "model";
  bool no_cuda_graph = false;
  bool no_draft = false;
  std::optional<int64_t> drafts;  // step, decode: drafts verified (none given: as serving chooses)
  bool overlap = false;
  bool beside_prompts = false;  // step, decode: run beside another rank's prompt step
  std::string step_log;         // step-log: the engine's log of steps (step_log.h)
  bool separate_projections = false;
  bool index_keys_per_query = false;           // decode: a sequence's drafts read its index keys apart
  bool reindex_scores_every_position = false;  // Reindex layers score every position, then mask
  bool experts_bf16 = false;                   // routed experts as W4A16: BF16 activations and math
  // step, fit: EPLB's replicas of the hottest experts over the EP group; step:
  // the routing's Zipf skew (none given: every expert as popular), and routing
  // balanced by construction (each rank exactly its share) instead of by chance
  int64_t redundant_experts = 0;
  std::optional<double> routing_skew;
  bool balanced_routing = false;
  // step, prefill: the EP ranks running this shape, the others none (none
  // given: every one); decode: the EP group's mean sequences per rank (none
  // given: this batch)
  std::optional<int64_t> prompt_ranks;
  std::optional<int64_t> group_batch;
  // step: prompt chunks a decode step carries (an aggregated engine mixing them in)
  int64_t prompt_chunks = 0;
  int64_t chunk_tokens = 0;
  int64_t chunk_context = 0;  // 0: the chunk is a whole fresh prompt
  int64_t chunks_continuing = 0;
  std::string trace;
  std::string models = "deepseek_v4_1_flash,deepseek_v4_flash,deepseek_v3_2";
  // run
  std::string deployment = "h200_pd_64";
  std::string workload = "agent_coding";
  double duration_s = 600;
  std::optional<double> warm_up_s;  // none: ServeOptions' default for the workload
  double trace_seconds = 60;
  std::string requests_csv;              // run: write every request of the first seed's run here
  std::string steps_csv;                 // run: write every measured step of the first seed's run here
  std::optional<double> sessions_per_s;  // run / plan: replaces the workload's arrival rate
  std::optional<int64_t> concurrency;    // run / plan: replaces a closed loop's sessions at a time
  // plan (empty lists: the base deployment's value)
  std::vector<std::string> plan_gpus;
  std::vector<std::string> plan_prefill_gpus;
  std::vector<std::string> plan_decode_gpus;
  std::vector<std::string> plan_eps;  // sizes, or "domain" (each GPU's NVLink domain)
  std::vector<int64_t> plan_prefill_instances;
  std::vector<int64_t> plan_decode_instances;
  bool plan_keep_gpus = false;  // each pool keeps the base's GPUs at every EP size
  std::vector<double> plan_kv_retentions_h;
  std::vector<double> plan_swa_pool_fractions;
  std::vector<std::string> plan_ssd_capacities_tb;
  std::vector<std::string> plan_aggregated_steps;
  std::vector<std::string> plan_routings;
  std::vector<std::string> plan_attention;
  std::vector<int64_t> plan_max_tokens_per_step;
  std::vector<int64_t> plan_max_batch_per_gpu;
  std::vector<int64_t> plan_prefill_delay_steps;
  std::vector<int64_t> plan_redundant_experts;
  double min_within_sla = 0.99;
  // plan: the cheapest variants within the SLA served again this long, in
  // rank order until one holds it; capacity: the rates that met it, largest
  // first. None given: kDefaultConfirmS, where it is longer than --duration
  // (a value given must be, or 0: none).
  std::optional<double> confirm_s;
  // plan, capacity, sensitivity: a line per run to stderr as it ends (also
  // without it where stderr is a terminal); stdout is the same either way.
  bool progress = false;
  // run, plan and capacity: SLA limits other than the deployment's
  std::optional<double> sla_ttft_ms;  // replaces the (base) deployment's TTFT limit
  std::optional<double> sla_tpot_ms;  // replaces its TPOT limit
  std::optional<double> sla_itl_ms;   // replaces (or sets) its limit on a request's longest ITL
  // capacity (--min-within-sla, --ttft-ms, --tpot-ms and --itl-ms as plan's)
  std::vector<double> rate_factors{0.25, 0.5, 1, 2, 4, 8};
  double precision = 0.05;
  // sensitivity: how far each assumption moves, as a share of its value
  double swing = 0.25;
  std::vector<std::string> kinds{"assumed"};  // the sources whose figures it moves
  // context (--hw and --tpot-ms: plan_gpus and sla_tpot_ms)
  std::string context_deployment = "h200_agg_8";
  std::vector<int64_t> contexts;  // none given: swept_contexts (context_sweep.h)
  int64_t output_tokens = 2000;
  std::optional<int64_t> max_batch_per_gpu;  // none: the deployment's decode limit; 0: memory alone
  // frontier (--deployment, --hw and --ep: context_deployment, plan_gpus and plan_eps)
  std::optional<int64_t> frontier_context;  // none given: frontier_context (decode_frontier.h)
  // validate
  bool write_published_bands = false;
  std::vector<std::string> validate_probes;  // none: every probe kind
  std::vector<std::string> validate_gpus;    // none: every GPU
  // calibrate
  std::string measurements;
  bool hw_given = false;
  bool out_given = false;
  uint64_t seed = 1;
  int64_t seeds = 1;  // run, plan, capacity: replications with seeds seed, seed + 1, ...
};

// A model by name or path, analysed (load_model_by_name).
ModelAnalysis load_model_named(const Catalog& catalog, const std::string& name);
void print_tables(std::ostream& out, const std::vector<Table>& tables);

// memory_commands.cpp
void run_kv(const Catalog& catalog, const Flags& f, std::ostream& out);
void run_params(const Catalog& catalog, const Flags& f, std::ostream& out);
void run_fit(const Catalog& catalog, const Flags& f, std::ostream& out);
void run_claims(const Catalog& catalog, const Flags& f, std::ostream& out);
void run_report(const Catalog& catalog, const Flags& f, std::ostream& out);
// step_commands.cpp
void run_step(const Catalog& catalog, const Flags& f, std::ostream& out);
void run_compare_layers(const Catalog& catalog, const Flags& f, std::ostream& out);
void run_step_log(const Catalog& catalog, const Flags& f, std::ostream& out);
// serving_commands.cpp
void run_serving(const Catalog& catalog, const Flags& f, std::ostream& out);
void run_plan(const Catalog& catalog, const Flags& f, std::ostream& out);
void run_context(const Catalog& catalog, const Flags& f, std::ostream& out);
void run_frontier(const Catalog& catalog, const Flags& f, std::ostream& out);
void run_capacity(const Catalog& catalog, const Flags& f, std::ostream& out);
void run_sensitivity(const Catalog& catalog, const Flags& f, std::ostream& out);
// validation_commands.cpp
void run_validate(const Catalog& catalog, const Flags& f, std::ostream& out);
void run_calibrate(const Catalog& catalog, const Flags& f, std::ostream& out);
void run_targets(const Catalog& catalog, const Flags& f, std::ostream& out);

}  // namespace v41sim::cli
