// Helpers for the step-model tests: a model, a GPU and its cost model, a timed step.
#pragma once

#include <string>

#include "sim/cost/cost_params.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/cost/kernel_cost.h"
#include "sim/cost/step_cost.h"
#include "sim/graph/step_graph.h"
#include "sim/hw/gpu_profile_loader.h"
#include "tests/test_data.h"

namespace v41sim::testing {

struct GpuUnderTest {
  explicit GpuUnderTest(const std::string& stem, bool cuda_graph = true)
      : model(V41SIM_SOURCE_DIR, gpu_path(stem), cuda_graph), cost(model.cost()) {}
  GpuCostModel model;
  const KernelCostModel& cost;
};

inline StepShape shape(Phase phase, int64_t batch, int64_t context, int64_t ep = 8) {
  StepShape s;
  s.phase = phase;
  s.batch = batch;
  s.context = context;
  s.ep = ep;
  return s;
}

inline StepTiming timed(const ModelAnalysis& m, const KernelCostModel& cost, const StepShape& s) {
  return time_step(build_step_graph(m, s), cost);
}

}  // namespace v41sim::testing
