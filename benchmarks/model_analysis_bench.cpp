// How long the `kv` / `params` / `fit` questions take (budget: < 100 ms each).
#include <benchmark/benchmark.h>

#include <string>

#include "sim/capacity/memory_fit.h"
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
  const v41sim::FitRequest request{8,
                                   8,
                                   1 << 20,
                                   model.spec.weights,
                                   v41sim::DensePlacement::kReplicated,
                                   v41sim::default_reserve_fraction()};
  for (auto _ : state) benchmark::DoNotOptimize(v41sim::fit_memory(model, gpu, request));
}
BENCHMARK(BM_MemoryFit)->Unit(benchmark::kNanosecond);

}  // namespace

BENCHMARK_MAIN();
