// ServedRun: one deployment serving one workload, simulated and costed, with
// the kernel models its step times came from. `run`, the study report and
// `plan` all go through here, so a run means the same thing in each.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/common/catalog.h"
#include "sim/costing/deployment_cost_models.h"
#include "sim/costing/serving_cost.h"
#include "sim/model/model_analysis.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/serving_result.h"
#include "sim/serving/step_time_cache.h"
#include "sim/serving/workload_spec.h"

namespace v41sim {

// A class of a mix of traffic in one seed's run: its requests, and those
// within its SLA.
struct ClassShare {
  int64_t arrived = 0;
  int64_t within_sla = 0;
};

// The headline figures of one seed's run. Arrivals, prompt and output
// lengths and think times are random, so one run's p99 or SLA verdict is a
// sample; runs with other seeds say how far it moves.
struct SeedOutcome {
  uint64_t seed = 0;
  int64_t arrived = 0;
  double within_sla = 0;  // share_within_sla of the run
  double ttft_p99_ms = 0;
  double tpot_p99_ms = 0;
  double itl_p99_ms = 0;          // of the gaps between streamed chunks (ServingResult::itl_ms)
  double longest_itl_p99_ms = 0;  // of each finished request's longest gap (ServingResult::longest_itl_ms)
  double output_tokens_per_s_per_gpu = 0;
  double usd_per_million_output = 0;  // 0 when the GPU price is unknown
  double kwh_per_million_output = 0;  // at the GPUs' rated power; 0 when it is unknown
  // The p99 over its SLA limit; in a mix of traffic, the worst class's, each
  // against its own limit (0: nothing finished to take a p99 of).
  double ttft_p99_over_limit = 0;
  double tpot_p99_over_limit = 0;
  double longest_itl_p99_over_limit = 0;  // of each request's longest gap; 0 also where no ITL limit is set
  SlaMisses misses;                       // its requests that missed the SLA, by what they missed
  std::vector<ClassShare> classes;        // a mix's, in the workload's order; empty without one
  bool steady = true;       // the requests in the system had settled over the window (SteadyState::steady)
  bool tail_steady = true;  // and over its second half (SteadyState::tail_steady)
};

// The mean, least and most of one figure over the seeds run.
struct SeedSpread {
  double mean = 0;
  double min = 0;
  double max = 0;
};
SeedSpread spread_of(const std::vector<double>& values);  // all zero when empty

struct ServedRun {
  ServingResult result;              // the first seed's run, in full
  ServingCost cost;                  // of the first seed's run
  std::string prefill_kernel_model;  // calibration labels of each pool's GPU
  std::string decode_kernel_model;
  std::string prefill_gpu;  // each pool's GPU, as the deployment names it
  std::string decode_gpu;
  std::vector<SeedOutcome> seeds;  // every seed run, the first included

  // Requests within the SLA of those that arrived, pooled over the seeds:
  // what an SLA verdict is judged on.
  double within_sla() const;
  // The same requests, arrived and missing the SLA by what they missed.
  int64_t arrived() const;
  SlaMisses misses() const;
  // In a mix, each class's share of its requests within its SLA, pooled over
  // the seeds (0 for a class none of whose requests arrived); else empty.
  std::vector<double> class_within_sla() const;
  // Some request arrived and at least `min_within_sla` of them were within
  // the SLA, pooled; in a mix, of each class's that arrived (so a small class
  // served badly is not hidden in a large one's share).
  bool meets_sla(double min_within_sla) const;
  // The seeds whose own run meets it (a pooled verdict near the limit may rest on some of them only).
  int64_t seeds_meeting_sla(double min_within_sla) const;
  SeedSpread spread(double SeedOutcome::*figure) const;
  // The seeds whose window had not settled: their figures are not yet the steady state's.
  int64_t seeds_unsettled() const;
  // The seeds whose window had settled neither as a whole nor in its second
  // half: a longer run's test of whether the deployment holds (plan's and
  // capacity's confirmation), where the first half may still be filling up
  // and a second half alone, of fewer batch means, swings more.
  int64_t seeds_unsettled_at_end() const;
  // Whether its verdicts ask its requests in the system to settle: not a
  // trace's replay, judged on the SLA alone, whose rows are the whole traffic
  // and whose load moves as its sessions start and end (a queue that grows
  // shows in the latencies of the rows after it, all of which a drained run serves).
  bool asks_settling() const { return !result.replays_trace; }
  // A longer run's verdict (plan's and capacity's confirmation): within the
  // SLA, and, where settling is asked, no seed left unsettled at its end.
  bool holds_sla(double min_within_sla) const {
    return meets_sla(min_within_sla) && (!asks_settling() || seeds_unsettled_at_end() == 0);
  }
};

// Sessions of many turns take minutes to build an empty deployment up to the
// concurrency their rate sustains: agent_coding's last up to 40 turns, longer
// where turns queue near a deployment's capacity, and on one 8 x H200
// instance at its rate the requests in the system still climbed 24-45% over
// a window opened after 600 s, 10-18% after 1,200 (its $ per token 14-18%
// lower). A run serves this long before it measures, unless told otherwise.
// Assumed; each run's SteadyState says whether it was enough.
inline constexpr double kDefaultWarmUpS = 1200;

struct ServeOptions {
  double duration_s = 600;  // of arrivals measured, after the warm-up
  // Arrivals served before the measured window (ServingResult::warm_up_s);
  // none given: kDefaultWarmUpS for drawn sessions, none for a trace (it is
  // replayed as it was recorded, from its first row).
  std::optional<double> warm_up_s;
  uint64_t seed = 1;
  // Runs with seeds seed, seed + 1, ...: the first in full, the others for
  // their headline figures (SeedOutcome); verdicts pool them.
  int64_t seeds = 1;
  bool drain = false;  // after duration_s, no new turns; run until every request is done
  // > 0: record the first seed's spans that start this early in the measured window, for the trace.
  double trace_seconds = 0;
  bool log_requests = false;  // keep a record of each of the first seed's requests (ServingResult::requests)
  bool log_steps = false;  // keep a record of each of the first seed's measured steps (ServingResult::steps)
  // Told of each run as it ends, from the thread that served it: long
  // searches (plan, capacity) show their progress through it. It sees the
  // workload at the rate served and the options of that run (a confirmation's
  // longer window); it changes no figure.
  std::function<void(const DeploymentSpec&, const WorkloadSpec&, const ServeOptions&, const ServedRun&)>
      on_served;
};

// The warm-up a run of `workload` with `options` serves before it measures.
double warm_up_of(const ServeOptions& options, const WorkloadSpec& workload);
// Throws InputError naming --warm-up unless `warm_up_s` is at least 0 and,
// with `duration_s` after it, within longest_run_s().
void require_warm_up(double warm_up_s, double duration_s);

// Requests that finished within their TTFT and TPOT limits (the deployment's,
// or in a mix their class's), of those that arrived (0 when none arrived): the share an SLA is judged on.
double share_within_sla(const ServingResult& result);

// With priors_only, the pools' kernel models are the published priors whatever
// calibrations exist (DeploymentCostModels).
ServedRun serve_deployment(const Catalog& catalog, const ModelAnalysis& model,
                           const DeploymentSpec& deployment, const WorkloadSpec& workload,
                           const ServeOptions& options, bool priors_only = false);
// The same over cost models and step times loaded once for several runs of
// the deployment (`steps` built by deployment_step_times over `gpus`).
ServedRun serve_deployment(const DeploymentCostModels& gpus, const std::shared_ptr<StepTimeCache>& steps,
                           const ModelAnalysis& model, const DeploymentSpec& deployment,
                           const WorkloadSpec& workload, const ServeOptions& options);

}  // namespace v41sim
