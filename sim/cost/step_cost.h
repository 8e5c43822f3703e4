// StepTiming: a step graph laid out in time on one GPU.
//
// Compute kernels and EP transfers run one after another, unless the step
// overlaps them (two micro-batches), in which case each runs on its own track
// from the start of the layer and the layer lasts as long as the longer one.
// Host copies (Engram prefetch) run on their own copy engine from the start
// of their layer. Per-layer and per-kernel times, FLOPs and bytes are kept for
// the tables and the trace.
#pragma once

#include <string>
#include <vector>

#include "sim/cost/kernel_cost.h"
#include "sim/graph/step_graph.h"

namespace v41sim {

struct LayerTiming {
  int64_t layer = 0;
  std::string mode;
  double tokens = 0;
  double start_us = 0;
  double compute_us = 0;
  double communication_us = 0;
  double host_copy_us = 0;
  double flops = 0;
  double hbm_bytes = 0;
  std::vector<KernelTiming> kernels;  // parallel to the graph's kernels
  std::vector<double> kernel_start_us;
  double critical_us = 0;  // the layer's length on the step's critical path
};

struct StepTiming {
  std::vector<LayerTiming> layers;
  double total_us = 0;
  double compute_us = 0;
  double communication_us = 0;
  double host_copy_us = 0;
  double flops = 0;
  double hbm_bytes = 0;
  int64_t kernel_count = 0;
};

StepTiming time_step(const StepGraph& graph, const KernelCostModel& cost);

}  // namespace v41sim
