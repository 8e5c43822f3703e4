// The main job's report (make run): KV of every bundled model, the claims
// check, the memory fit of V4.1-Flash on every GPU profile, its decode and
// prefill step times by layer mode, sessions from 8K to 1M tokens, serving runs of the bundled deployments,
// the cheapest deployment within an SLA, and the kernel model's validation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/catalog.h"
#include "sim/common/sourced_value.h"
#include "sim/costing/confirmation.h"
#include "sim/costing/context_sweep.h"
#include "sim/costing/decode_frontier.h"
#include "sim/serving/deployment_spec.h"

namespace v41sim {

struct StudyOptions {
  std::string out_dir;
  std::string focus_model = "deepseek_v4_1_flash";
  std::vector<int64_t> contexts{131072, 1048576};
  int64_t gpus = 8;
  int64_t ep = 8;
  int64_t decode_batch = 32;
  std::vector<int64_t> step_contexts{8192, 131072, 1048576};
  // Which assumed figures move a decode step (batch decode_batch) on this GPU
  // at this context: what our measurements should pin down first.
  std::string sensitivity_gpu = "h200";
  int64_t sensitivity_context = 131072;
  // The engine-choices table also times one prompt of this many tokens' prefill.
  int64_t engine_choices_prefill_context = 131072;
  double sensitivity_swing = 0.25;
  std::string serving_workload = "agent_coding";
  std::string long_context_workload =
      "stress_1m";  // ~1M-token prompts: where context-parallel prefill matters
  double serving_seconds = 300;
  // Several kinds of traffic on one deployment, each class against its own
  // limits, each deployment run this long.
  std::string mix_workload = "chat_and_agents";
  double mix_seconds = 200;
  // The cheapest-deployment question: this base varied over every GPU profile,
  // these EP sizes (16: two 8-GPU nodes over their NICs, except where the
  // NVLink domain spans them) and these instance counts, under the serving
  // workload.
  std::string plan_deployment = "h200_agg_8";
  std::vector<int64_t> plan_eps{8, 16};
  std::vector<int64_t> plan_decode_instances{1, 2};
  // The layout question: one aggregated pool against prefill/decode split
  // into pools (one instance of each) on these
  // GPUs at the base EP size, ranked together; the aggregated pool serving
  // prompts in steps of their own and mixed into decode steps.
  std::vector<std::string> layout_deployments{"h200_agg_8", "h200_pd_64"};
  std::vector<std::string> layout_gpus{"h200", "b200"};
  std::vector<DeploymentSpec::AggregatedSteps> layout_aggregated_steps{
      DeploymentSpec::AggregatedSteps::kPrefillFirst, DeploymentSpec::AggregatedSteps::kMixed};
  // Prompts in steps of their own, with no prefill delay and with SGLang's
  // prefill delayer at its default (--prefill-delayer-max-delay-passes 30).
  std::vector<int64_t> layout_prefill_delay_steps{0, 30};
  // Each variant of the plan sections runs with this many seeds (more show
  // each figure's spread and judge the SLA on the seeds' requests pooled;
  // one keeps the study short, as every run first serves
  // ServeOptions' default warm-up, which the windows here are measured after).
  int64_t served_seeds = 1;
  // The plan sections serve their cheapest variants within the SLA again this
  // long, in rank order (two at a time) until one holds it, and the capacity search its
  // meeting rates, largest first (plan's and capacity's --confirm-seconds).
  double confirm_seconds = kDefaultConfirmS;
  // The KV-tier question: the plan deployment under a workload whose sessions
  // also come back hours later (the serving workload's return within
  // minutes, which any retention serves), with the SSD tier's retention
  // (hours) and the window-state pool's DRAM share varied (0: the tier is off).
  std::string kv_tiers_workload = "agent_resumed";
  std::vector<double> kv_retentions_h{0, 1, 8, 72};
  std::vector<double> swa_pool_fractions{0, 0.10};
  // And the SSD tier bounded to these sizes (TB; 0: unbounded), at the plan
  // deployment's own retention: what a buyer provisions.
  std::vector<double> ssd_capacities_tb{0, 2, 5, 10};
  // On the fewest of these instance counts of the plan deployment that serve
  // the KV-tier workload within the SLA, settled, at the longest retention.
  std::vector<int64_t> kv_tiers_instances{1, 2, 4};
  // The capacity question: the largest rate of the serving workload this
  // deployment serves within its SLA, each rate run this long.
  std::string capacity_deployment = "h200_agg_8";
  double capacity_seconds = 200;
  int64_t capacity_seeds = 1;  // the search runs a dozen rates: one seed each keeps the study short
  std::vector<double> capacity_rate_factors{0.5, 1, 2};  // the sweep around the workload's rate
  double capacity_precision = 0.1;                       // then cut down to within 10%
  // The decode frontier: the context deployment on these GPUs, sessions at
  // this context, batch by batch; each GPU at the deployment's EP, and over
  // its NVLink domain where that is larger (GB200's rack).
  std::vector<std::string> frontier_gpus{"h200", "b200", "gb200_nvl72", "h100_sxm", "h20"};
  int64_t frontier_context = kFrontierContext;
  // The context question: this deployment on these GPUs with sessions of
  // these lengths (prompt + output), the decode batch limited by KV memory
  // and the deployment's TPOT limit alone.
  std::string context_deployment = "h200_agg_8";
  std::vector<std::string> context_gpus{"h200", "b200", "h100_sxm"};
  std::vector<int64_t> context_sweep{kSweptContexts.begin(), kSweptContexts.end()};
  int64_t context_output_tokens = 2000;  // assumed: about the bundled workloads' mean output
  uint64_t seed = 1;
  SourcedValue reserve_fraction;
};

struct StudyOutput {
  std::string markdown_path;
  std::string json_path;
  std::string html_path;  // the Markdown as one page, charts inline
};

StudyOutput write_study_report(const Catalog& catalog, const StudyOptions& options);

}  // namespace v41sim
