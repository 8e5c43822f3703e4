// How long the `kv` / `params` / `fit` questions take (budget: < 100 ms each).
#include <benchmark/benchmark.h>

#include <string>

#include "sim/capacity/memory_fit.h"
#include "sim/cost/cost_params.h"
#include "sim/cost/draft_choice.h"
#include "sim/cost/kernel_cost.h"
#include "sim/cost/step_cost.h"
#include "sim/graph/step_graph.h"
#include "sim/hw/gpu_profile_loader.h"
#include "sim/model/model_analysis.h"
#include "sim/model/model_loader.h"

namespace {

const std::string kModel = std::string(V41SIM_SOURCE_DIR) + "/models/deepseek_v4_1_flash.yaml";
const std::string kGpu = std::string(V41SIM_SOURCE_DIR) + "/hw_profiles/h200.yaml";

void BM_LoadAndAnalyzeModel(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(v41sim::analyze_model(v41sim::load_model_file(kModel)));
}
BENCHMARK(BM_LoadAndAnalyzeModel)->Unit(benchmark::kMicrosecond);

void BM_MemoryFit(benchmark::State& state) {
  const v41sim::ModelAnalysis model = v41sim::analyze_model(v41sim::load_model_file(kModel));
  const v41sim::GpuProfile gpu = v41sim::load_gpu_profile_file(kGpu);
  v41sim::FitRequest request;  // 8 GPUs at EP 8, data-parallel attention
  request.context_tokens = 1 << 20;
  request.weights = model.spec.weights;
  request.reserve_fraction = v41sim::default_reserve_fraction();
  for (auto _ : state) benchmark::DoNotOptimize(v41sim::fit_memory(model, gpu, request));
}
BENCHMARK(BM_MemoryFit)->Unit(benchmark::kNanosecond);

// One full decode step (batch 64, 128K context, verifying the drafts a
// serving run would) and one 128K-token prefill of the 40-layer model: build
// the kernel graph and time it. The kernel-time cache is warm after the
// first iteration, as in a serving simulation.
void BM_Step(benchmark::State& state, v41sim::Phase phase, int64_t batch) {
  const v41sim::ModelAnalysis model = v41sim::analyze_model(v41sim::load_model_file(kModel));
  const v41sim::GpuProfile gpu = v41sim::load_gpu_profile_file(kGpu);
  const v41sim::KernelCostModel cost(gpu, v41sim::load_calibration_for(V41SIM_SOURCE_DIR, gpu, "h200"), true);
  v41sim::StepShape shape;
  shape.phase = phase;
  shape.batch = batch;
  shape.context = 131072;
  shape = v41sim::as_served(model, shape, cost).shape;
  for (auto _ : state) {
    benchmark::DoNotOptimize(v41sim::time_step(v41sim::build_step_graph(model, shape), cost));
  }
}
BENCHMARK_CAPTURE(BM_Step, decode_b64_128k, v41sim::Phase::kDecode, 64)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Step, prefill_128k, v41sim::Phase::kPrefill, 1)->Unit(benchmark::kMicrosecond);

// A decode step (batch 64 at 32K) that also computes one prompt chunk whose
// length changes every iteration, as in a serving run mixing prompts into
// decode steps, where nearly every step is a shape of its own (README:
// Performance). Here most of the chunk's kernels are new to the
// kernel-time cache, where a serving run finds most of them: this times the
// dearer end of costing a new mixed shape, graph built and fully timed.
void BM_MixedStepNewShape(benchmark::State& state) {
  const v41sim::ModelAnalysis model = v41sim::analyze_model(v41sim::load_model_file(kModel));
  const v41sim::GpuProfile gpu = v41sim::load_gpu_profile_file(kGpu);
  const v41sim::KernelCostModel cost(gpu, v41sim::load_calibration_for(V41SIM_SOURCE_DIR, gpu, "h200"),
                                     false);
  v41sim::StepShape shape;
  shape.phase = v41sim::Phase::kDecode;
  shape.batch = 64;
  shape.context = 32768;
  shape = v41sim::as_served(model, shape, cost).shape;  // its sequences verify their plain step's drafts
  int64_t chunk = 0;
  for (auto _ : state) {
    shape.mixed_prefill = {1, 1000 + chunk++ % 15000, 16384, 0};
    benchmark::DoNotOptimize(v41sim::time_step(v41sim::build_step_graph(model, shape), cost));
  }
}
BENCHMARK(BM_MixedStepNewShape)->Unit(benchmark::kMicrosecond);

}  // namespace
