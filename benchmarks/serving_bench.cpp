// Event-core throughput and serving-run cost (budgets: >= 10M events/s on one
// core; one simulated hour of a 64-GPU deployment in under 10 s).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>

#include "sim/capacity/memory_fit.h"
#include "sim/common/catalog.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/costing/context_sweep.h"
#include "sim/costing/deployment_plan.h"
#include "sim/costing/load_capacity.h"
#include "sim/des/simulator.h"
#include "sim/model/model_loader.h"
#include "sim/report/study_report.h"
#include "sim/serving/serving_simulation.h"

namespace {

const std::string kRoot = V41SIM_SOURCE_DIR;

// The bundled V4.1-Flash model, a bundled deployment and workload, by file stem.
v41sim::ModelAnalysis v41_flash() {
  return v41sim::analyze_model(v41sim::load_model_file(kRoot + "/models/deepseek_v4_1_flash.yaml"));
}
v41sim::DeploymentSpec bundled_deployment(const std::string& stem) {
  return v41sim::load_deployment_file(kRoot + "/workloads/deployments/" + stem + ".yaml");
}
v41sim::WorkloadSpec bundled_workload(const std::string& stem) {
  return v41sim::load_workload_file(kRoot + "/workloads/" + stem + ".yaml");
}

// Times `seconds` of `workload` on `deployment` (its pools on H200), one run
// an iteration, and counts the requests that arrived in the last.
void time_serving(benchmark::State& state, const v41sim::DeploymentSpec& deployment,
                  const v41sim::WorkloadSpec& workload, double seconds) {
  const v41sim::ModelAnalysis model = v41_flash();
  const v41sim::GpuCostModel prefill(kRoot, kRoot + "/hw_profiles/h200.yaml", false);
  const v41sim::GpuCostModel decode(kRoot, kRoot + "/hw_profiles/h200.yaml", true);
  int64_t requests = 0;
  for (auto _ : state) {
    v41sim::ServingSimulation sim(model, prefill.cost(), decode.cost(), deployment, workload, 1);
    const v41sim::ServingResult r = sim.run(seconds);
    requests = r.arrived;
    benchmark::DoNotOptimize(r);
  }
  state.counters["requests"] = static_cast<double>(requests);
}

// A ring of self-rescheduling events, as steps and arrivals behave in a run.
// Each event captures two pointers, like the serving simulation's
// ([this, &request]), which std::function stores without allocating.
struct Ring {
  v41sim::Simulator* sim;
  int64_t remaining;
  void tick() {
    if (--remaining > 0)
      sim->schedule_after(v41sim::SimTime::from_ns(1 + remaining % 97), [this] { tick(); });
  }
};

void BM_EventCore(benchmark::State& state) {
  const auto pending = state.range(0);
  for (auto _ : state) {
    v41sim::Simulator sim(1);
    Ring ring{&sim, 1'000'000};
    for (int64_t i = 0; i < pending; ++i)
      sim.schedule_at(v41sim::SimTime::from_ns(i), [&ring] { ring.tick(); });
    sim.run_until(v41sim::SimTime::max());
    state.SetItemsProcessed(state.items_processed() + static_cast<int64_t>(sim.events_processed()));
  }
}
BENCHMARK(BM_EventCore)->Arg(64)->Arg(4096)->Unit(benchmark::kMillisecond);

// Simulated seconds of the agent workload on 64 x H200; scale the load with the
// second argument (sessions per second x10) to see how cost grows with requests.
void BM_ServingRun(benchmark::State& state) {
  v41sim::WorkloadSpec workload = bundled_workload("agent_coding");
  workload.sessions_per_s = static_cast<double>(state.range(1)) / 10.0;
  time_serving(state, bundled_deployment("h200_pd_64"), workload, static_cast<double>(state.range(0)));
}
BENCHMARK(BM_ServingRun)
    ->Args({3600, 5})
    ->Args({600, 5})
    ->Args({600, 20})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// Far more traffic than the deployment serves (a minute at 16,000 sessions/s):
// queues grow to hundreds of thousands of prompts, and routing each one must
// not rescan them (the cost stays linear in the requests).
void BM_ServingOverload(benchmark::State& state) {
  v41sim::WorkloadSpec workload = bundled_workload("agent_coding");
  workload.sessions_per_s = 16000;
  const char* deployment = state.range(0) == 0 ? "h200_pd_64" : "h200_agg_8";
  time_serving(state, bundled_deployment(deployment), workload, 60);
  state.SetLabel(deployment);
}
BENCHMARK(BM_ServingOverload)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(1);

// A benchmark's closed loop (bench_random_8k_1k) on one 8 x H200 instance,
// the sessions in flight as the argument: each one that ends starts the next.
void BM_ServingClosedLoop(benchmark::State& state) {
  time_serving(state, bundled_deployment("h200_agg_8"),
               v41sim::at_concurrency(bundled_workload("bench_random_8k_1k"), state.range(0), {}), 600);
}
BENCHMARK(BM_ServingClosedLoop)->Arg(32)->Arg(256)->Unit(benchmark::kMillisecond)->Iterations(1);

// The bundled block-hashed (Mooncake-format) trace replayed four times as
// fast on one 8 x H200 instance: every prompt's blocks looked up and stored.
void BM_ServingBlockHashedTrace(benchmark::State& state) {
  const v41sim::ModelAnalysis model = v41_flash();
  const v41sim::DeploymentSpec deployment = bundled_deployment("h200_agg_8");
  const v41sim::WorkloadSpec trace = bundled_workload("mooncake_sample");
  const v41sim::WorkloadSpec workload = v41sim::at_rate(trace, 4 * trace.sessions_per_s, {});
  const v41sim::GpuCostModel gpu(kRoot, kRoot + "/hw_profiles/h200.yaml", true);
  int64_t requests = 0;
  for (auto _ : state) {
    v41sim::ServingSimulation sim(model, gpu.cost(), gpu.cost(), deployment, workload, 1);
    const v41sim::ServingResult r = sim.run(600, true);
    requests = r.arrived;
    benchmark::DoNotOptimize(r);
  }
  state.counters["requests"] = static_cast<double>(requests);
}
BENCHMARK(BM_ServingBlockHashedTrace)->Unit(benchmark::kMillisecond)->Iterations(1);

// How run cost grows with cluster size: k prefill and 3k decode instances of
// 8 H200s under k x 0.25 agent sessions/s, 600 simulated seconds.
void BM_ServingScale(benchmark::State& state) {
  const int64_t k = state.range(0);
  const v41sim::ModelAnalysis model = v41_flash();
  v41sim::DeploymentSpec deployment = bundled_deployment("h200_pd_64");
  deployment.prefill.instances = k;
  deployment.decode.instances = 3 * k;
  v41sim::WorkloadSpec workload = bundled_workload("agent_coding");
  workload.sessions_per_s = 0.25 * static_cast<double>(k);
  const v41sim::GpuCostModel prefill(kRoot, kRoot + "/hw_profiles/h200.yaml", false);
  const v41sim::GpuCostModel decode(kRoot, kRoot + "/hw_profiles/h200.yaml", true);
  v41sim::ServingResult result;
  for (auto _ : state) {
    v41sim::ServingSimulation sim(model, prefill.cost(), decode.cost(), deployment, workload, 1);
    result = sim.run(600);
  }
  state.counters["gpus"] = static_cast<double>(result.gpus);
  state.counters["requests"] = static_cast<double>(result.arrived);
  state.counters["events"] = static_cast<double>(result.events);
}
BENCHMARK(BM_ServingScale)->Arg(1)->Arg(4)->Arg(16)->Unit(benchmark::kMillisecond)->Iterations(1);

// plan: the report's question, h200_agg_8 over every GPU profile x 1 or 2
// instances (12 variants, each 600 s of agent traffic then drained), on all
// cores.
void BM_Plan(benchmark::State& state) {
  const v41sim::Catalog catalog(kRoot);
  const v41sim::ModelAnalysis model = v41_flash();
  const v41sim::DeploymentSpec base = bundled_deployment("h200_agg_8");
  const v41sim::WorkloadSpec workload = bundled_workload("agent_coding");
  v41sim::PlanGrid grid;
  for (const std::string& file : catalog.gpu_files()) grid.gpus.push_back(file);
  grid.decode_instances = {1, 2};
  v41sim::ServeOptions options;
  options.duration_s = 600;
  std::size_t variants = 0;
  for (auto _ : state) {
    const std::vector<v41sim::PlanRow> rows =
        v41sim::run_plan(catalog, model, {base}, grid, workload, options, 0.99);
    variants = rows.size();
    benchmark::DoNotOptimize(rows);
  }
  state.counters["variants"] = static_cast<double>(variants);
}
BENCHMARK(BM_Plan)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

// context: h200_agg_8 swept over the report's five session lengths, 8K to
// 1M tokens (a lone request served for each, a bisection for the batch).
void BM_ContextSweep(benchmark::State& state) {
  const v41sim::Catalog catalog(kRoot);
  const v41sim::ModelAnalysis model = v41_flash();
  const v41sim::DeploymentSpec base = bundled_deployment("h200_agg_8");
  const v41sim::ContextSweepOptions options{
      {8192, 32768, 131072, 524288, 1048576}, 2000, base.sla.tpot_ms, 0};
  for (auto _ : state) benchmark::DoNotOptimize(v41sim::sweep_contexts(catalog, model, base, options));
}
BENCHMARK(BM_ContextSweep)->Unit(benchmark::kMillisecond);

// capacity: the largest rate of agent traffic h200_agg_8 serves within its
// SLA (the default sweep, 0.25x to 8x the workload's rate, then to within
// 5%; 300 s of arrivals per rate, drained), every rate sharing step times.
void BM_LoadCapacity(benchmark::State& state) {
  const v41sim::Catalog catalog(kRoot);
  const v41sim::ModelAnalysis model = v41_flash();
  const v41sim::DeploymentSpec deployment = bundled_deployment("h200_agg_8");
  const v41sim::WorkloadSpec workload = bundled_workload("agent_coding");
  v41sim::LoadOptions options;
  options.serve.duration_s = 300;
  std::size_t rates = 0;
  for (auto _ : state) {
    const v41sim::LoadCapacity c = v41sim::find_load_capacity(catalog, model, deployment, workload, options);
    rates = c.points.size();
    benchmark::DoNotOptimize(c);
  }
  state.counters["rates"] = static_cast<double>(rates);
}
BENCHMARK(BM_LoadCapacity)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

// The default study (`make run`'s job: `v41sim report` on the bundled
// files), whose budget is under 60 s on a 2-core machine. Wall time: its
// sections run their served runs on all cores.
void BM_StudyReport(benchmark::State& state) {
  const v41sim::Catalog catalog(kRoot);
  v41sim::StudyOptions options;
  options.out_dir = (std::filesystem::temp_directory_path() / "v41sim_bench_report").string();
  options.reserve_fraction = v41sim::default_reserve_fraction();
  for (auto _ : state) benchmark::DoNotOptimize(v41sim::write_study_report(catalog, options));
  std::filesystem::remove_all(options.out_dir);
}
BENCHMARK(BM_StudyReport)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace
