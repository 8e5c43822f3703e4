// compare-layers: one step shape, several model generations, one GPU; where
// the time goes by layer mode, so CED's prefill saving and the flat cost of
// Reindex layers show as numbers.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/cost/error_band.h"
#include "sim/cost/step_cost.h"
#include "sim/graph/step_memory.h"
#include "sim/report/step_view.h"

namespace v41sim {

struct ModelStep {
  std::string model;
  bool dense = false;  // no routed experts: kDenseModelStep
  StepTiming timing;
  std::vector<ModeTime> modes;
  int64_t reuse_layer_kernels = 0;  // kernels of one Reuse-mode layer, 0 if the model has none
  double published_reuse_layer_kernels = 0;
  ErrorBand band;  // the kernel model's 90% band for this step
  // Its KV, weights and activations against one GPU's HBM: a step that does
  // not fit is timed all the same, and a note says so.
  StepMemory memory;
};

// A model the step cannot run (a context past its max_context, an EP size
// that does not divide its experts), with why.
struct ModelNotRun {
  std::string model;
  std::string reason;
};

struct LayerComparison {
  StepShape shape;
  std::vector<ModelStep> models;
  std::vector<ModelNotRun> not_run;
};

// Throws the first model's InputError where none of them can run the step.
LayerComparison compare_layers(const std::vector<ModelAnalysis>& models, const GpuProfile& gpu,
                               const KernelCostModel& cost, const StepShape& shape);
std::vector<Table> comparison_tables(const LayerComparison& c, const GpuProfile& gpu,
                                     const KernelCostModel& cost);
nlohmann::json comparison_json(const LayerComparison& c, const GpuProfile& gpu, const KernelCostModel& cost);

}  // namespace v41sim
