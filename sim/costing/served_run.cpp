#include "sim/costing/served_run.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/common/input_error.h"
#include "sim/common/parallel_for.h"
#include "sim/serving/pool_setup.h"
#include "sim/serving/serving_simulation.h"

namespace v41sim {

namespace {

double share_of(const ClassShare& c) {
  return c.arrived > 0 ? static_cast<double>(c.within_sla) / static_cast<double>(c.arrived) : 0.0;
}

// A mix's classes, each's requests summed over the seeds.
std::vector<ClassShare> pooled_classes(const std::vector<SeedOutcome>& seeds) {
  std::vector<ClassShare> pooled;
  for (const SeedOutcome& s : seeds) {
    pooled.resize(s.classes.size());
    for (std::size_t i = 0; i < s.classes.size(); ++i) {
      pooled[i].arrived += s.classes[i].arrived;
      pooled[i].within_sla += s.classes[i].within_sla;
    }
  }
  return pooled;
}

// Every class some request of which arrived has at least the share within its SLA.
bool each_class_meets(const std::vector<ClassShare>& classes, double min_within_sla) {
  return std::all_of(classes.begin(), classes.end(), [min_within_sla](const ClassShare& c) {
    return c.arrived == 0 || share_of(c) >= min_within_sla;
  });
}

// A latency's p99 over its limit; 0 where nothing finished or no limit is set.
double p99_over(const LatencySummary& latency, double limit_ms) {
  return latency.count == 0 || limit_ms <= 0 ? 0.0 : latency.p99 / limit_ms;
}

// Sets the seed's p99 over its limits: the run's, or a mix's worst class's.
void set_p99_over_limits(const ServingResult& r, const SlaSpec& deployment, SeedOutcome& seed) {
  if (r.by_class.empty()) {
    seed.ttft_p99_over_limit = p99_over(r.ttft_ms, deployment.ttft_ms);
    seed.tpot_p99_over_limit = p99_over(r.tpot_ms, deployment.tpot_ms);
    seed.longest_itl_p99_over_limit = p99_over(r.longest_itl_ms, deployment.itl_ms);
    return;
  }
  for (const ClassOutcome& c : r.by_class) {
    seed.ttft_p99_over_limit = std::max(seed.ttft_p99_over_limit, p99_over(c.ttft_ms, c.sla.ttft_ms));
    seed.tpot_p99_over_limit = std::max(seed.tpot_p99_over_limit, p99_over(c.tpot_ms, c.sla.tpot_ms));
    seed.longest_itl_p99_over_limit =
        std::max(seed.longest_itl_p99_over_limit, p99_over(c.longest_itl_ms, c.sla.itl_ms));
  }
}

// One seed's headline figures, of its run `r`.
SeedOutcome seed_outcome(const ServedRun& r, uint64_t seed, const SlaSpec& deployment) {
  SeedOutcome s;
  s.seed = seed;
  s.arrived = r.result.arrived;
  s.within_sla = share_within_sla(r.result);
  s.ttft_p99_ms = r.result.ttft_ms.p99;
  s.tpot_p99_ms = r.result.tpot_ms.p99;
  s.itl_p99_ms = r.result.itl_ms.p99;
  s.longest_itl_p99_ms = r.result.longest_itl_ms.p99;
  s.output_tokens_per_s_per_gpu = r.result.output_tokens_per_s_per_gpu;
  s.usd_per_million_output = r.cost.known ? r.cost.usd_per_million_output : 0.0;
  s.kwh_per_million_output = r.cost.power.kwh_per_million_output;
  set_p99_over_limits(r.result, deployment, s);
  s.misses = r.result.sla_misses;
  for (const ClassOutcome& c : r.result.by_class) s.classes.push_back({c.arrived, c.within_sla});
  // A benchmark served to its last prompt empties the deployment by design:
  // its load is the client's, and whether it settled is not asked.
  const bool asked = !r.result.window_ends_with_prompts;
  s.steady = !asked || r.result.steady_state.steady();
  s.tail_steady = !asked || r.result.steady_state.tail_steady();
  return s;
}

// A window no request arrived in has nothing to judge: its shares and
// percentiles would read as a deployment that serves nothing (plan: no
// variant meets the SLA; capacity: a capacity below the rate).
void require_arrivals(const ServedRun& run, const WorkloadSpec& workload, const ServeOptions& options) {
  if (run.arrived() > 0) return;
  // Named where the load was set (the workload's field, or the flag that replaced it).
  const bool closed_loop = workload.arrival == WorkloadSpec::Arrival::kClosedLoop;
  const std::string load =
      closed_loop ? fmt::format("{} sessions at a time: none ended to start another", workload.concurrency)
                  : fmt::format("{:.4g} sessions/s: about {:.2g} sessions in it", workload.sessions_per_s,
                                workload.sessions_per_s * options.duration_s);
  throw InputError(closed_loop ? workload.concurrency_where : workload.sessions_per_s_where,
                   fmt::format("no request arrived in the {:g} s measured window of '{}' ({}{}): nothing to "
                               "judge a deployment by; lengthen --duration or raise the load",
                               options.duration_s, workload.name, load,
                               options.seeds > 1 ? fmt::format(", {} seeds", options.seeds) : ""));
}

}  // namespace

double warm_up_of(const ServeOptions& options, const WorkloadSpec& workload) {
  if (options.warm_up_s) return *options.warm_up_s;
  return workload.arrival == WorkloadSpec::Arrival::kTrace ? 0.0 : kDefaultWarmUpS;
}

void require_warm_up(double warm_up_s, double duration_s) {
  const double longest_s = longest_run_s();
  if (warm_up_s >= 0 && warm_up_s + duration_s <= longest_s) return;
  throw InputError({"", 0, "--warm-up"},
                   fmt::format("expected seconds in [0, {:.0f}] (with --duration {:g} after them), got {}",
                               longest_s - duration_s, duration_s, warm_up_s));
}

double share_within_sla(const ServingResult& r) {
  if (r.arrived == 0) return 0.0;
  return r.goodput_fraction * static_cast<double>(r.finished) / static_cast<double>(r.arrived);
}

ServedRun serve_deployment(const Catalog& catalog, const ModelAnalysis& model,
                           const DeploymentSpec& deployment, const WorkloadSpec& workload,
                           const ServeOptions& options, bool priors_only) {
  const DeploymentCostModels gpus(catalog, deployment, priors_only);
  const auto steps = std::make_shared<StepTimeCache>(
      deployment_step_times(model, gpus.prefill.cost(), gpus.decode.cost(), deployment));
  return serve_deployment(gpus, steps, model, deployment, workload, options);
}

ServedRun serve_deployment(const DeploymentCostModels& gpus, const std::shared_ptr<StepTimeCache>& steps,
                           const ModelAnalysis& model, const DeploymentSpec& deployment,
                           const WorkloadSpec& workload, const ServeOptions& options) {
  // Each seed's run, latencies included, is kept until the seeds are pooled.
  constexpr int64_t kMaxSeeds = 1000;
  if (options.seeds < 1 || options.seeds > kMaxSeeds) {
    throw InputError({"", 0, "--seeds"},
                     fmt::format("expected 1..{} seeds, got {}", kMaxSeeds, options.seeds));
  }
  const double warm_up_s = warm_up_of(options, workload);
  require_warm_up(warm_up_s, options.duration_s);
  const GpuCostModel& prefill = gpus.prefill;
  const GpuCostModel& decode = gpus.decode;
  const auto n = static_cast<std::size_t>(options.seeds);
  std::vector<ServedRun> runs(n);
  // Seeds run on all cores; each writes its own slot, so the order they end in changes nothing.
  parallel_for(n, [&](std::size_t i) {
    const uint64_t seed = options.seed + i;
    ServingSimulation simulation(model, prefill.cost(), decode.cost(), deployment, workload, seed, steps);
    simulation.set_warm_up(warm_up_s);
    if (i == 0 && options.trace_seconds > 0) simulation.enable_trace(options.trace_seconds);
    if (i == 0 && options.log_requests) simulation.enable_request_log();
    if (i == 0 && options.log_steps) simulation.enable_step_log();
    runs[i].result = simulation.run(options.duration_s, options.drain);
    runs[i].cost = serving_cost(runs[i].result, deployment, prefill.gpu(), decode.gpu());
  });
  ServedRun run = std::move(runs.front());
  // The seeds share one cache and race to cost a shape first: what each saw
  // costed when it ended depends on which won; the shapes they costed together
  // do not (where the cache is shared with other variants too, it counts theirs).
  run.result.step_shapes_costed = steps->size();
  run.prefill_kernel_model = prefill.cost().params().label();
  run.decode_kernel_model = decode.cost().params().label();
  run.prefill_gpu = deployment.prefill.gpu;
  run.decode_gpu = deployment.decode.gpu;
  for (std::size_t i = 0; i < n; ++i) {
    const ServedRun& r = i == 0 ? run : runs[i];
    run.seeds.push_back(seed_outcome(r, options.seed + i, deployment.sla));
  }
  require_arrivals(run, workload, options);
  if (options.on_served) options.on_served(deployment, workload, options, run);
  return run;
}

int64_t ServedRun::arrived() const {
  int64_t n = 0;
  for (const SeedOutcome& s : seeds) n += s.arrived;
  return n;
}

double ServedRun::within_sla() const {
  double within = 0;
  for (const SeedOutcome& s : seeds) within += s.within_sla * static_cast<double>(s.arrived);
  const int64_t n = arrived();
  return n > 0 ? within / static_cast<double>(n) : 0.0;
}

SlaMisses ServedRun::misses() const {
  SlaMisses pooled;
  for (const SeedOutcome& s : seeds) pooled += s.misses;
  return pooled;
}

std::vector<double> ServedRun::class_within_sla() const {
  std::vector<double> out;
  for (const ClassShare& c : pooled_classes(seeds)) out.push_back(share_of(c));
  return out;
}

bool ServedRun::meets_sla(double min_within_sla) const {
  const bool any =
      std::any_of(seeds.begin(), seeds.end(), [](const SeedOutcome& s) { return s.arrived > 0; });
  return any && within_sla() >= min_within_sla && each_class_meets(pooled_classes(seeds), min_within_sla);
}

int64_t ServedRun::seeds_meeting_sla(double min_within_sla) const {
  return std::count_if(seeds.begin(), seeds.end(), [min_within_sla](const SeedOutcome& s) {
    return s.arrived > 0 && s.within_sla >= min_within_sla && each_class_meets(s.classes, min_within_sla);
  });
}

SeedSpread spread_of(const std::vector<double>& values) {
  if (values.empty()) return {};
  SeedSpread out{0, values.front(), values.front()};
  for (const double v : values) {
    out.mean += v / static_cast<double>(values.size());
    out.min = std::min(out.min, v);
    out.max = std::max(out.max, v);
  }
  return out;
}

SeedSpread ServedRun::spread(double SeedOutcome::*figure) const {
  std::vector<double> values;
  for (const SeedOutcome& s : seeds) values.push_back(s.*figure);
  return spread_of(values);
}

int64_t ServedRun::seeds_unsettled() const {
  return std::count_if(seeds.begin(), seeds.end(), [](const SeedOutcome& s) { return !s.steady; });
}

int64_t ServedRun::seeds_unsettled_at_end() const {
  return std::count_if(seeds.begin(), seeds.end(),
                       [](const SeedOutcome& s) { return !s.steady && !s.tail_steady; });
}

}  // namespace v41sim
