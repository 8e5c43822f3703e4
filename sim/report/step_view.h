// Views of a timed step for `v41sim step`, `compare-layers` and the report:
// per-layer and per-kernel tables, JSON, and a Chrome / Perfetto trace.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sim/capacity/memory_fit.h"
#include "sim/cost/draft_choice.h"
#include "sim/cost/step_cost.h"
#include "sim/graph/step_graph.h"
#include "sim/hw/gpu_profile.h"
#include "sim/model/model_analysis.h"
#include "sim/report/table.h"

namespace v41sim {

// How a dense model's step (no routed experts) is timed: the EP size spreads
// nothing, so the step is one GPU holding and running every weight.
inline constexpr std::string_view kDenseModelStep =
    "no routed experts to spread over EP ranks, so one GPU holds and runs the whole model (tensor "
    "parallelism is not modelled)";

// The KV the step's sequences hold against what one GPU keeps for KV once
// `fit`'s split has placed the weights at the step's EP, and the residual
// streams its widest layer holds against the reserve kept for activations: a
// step that would not fit is timed all the same, and says so.
struct StepMemory {
  double kv_bytes = 0;       // each sequence's global KV at its context and its bounded state (derived)
  double residual_rows = 0;  // tokens of the layer that runs the most (both micro-batches)
  double residual_bytes_per_token = 0;  // what each carries between layers (residual_bytes_per_token)
  // Their residual streams: a floor under the step's activations.
  double residual_stream_bytes() const { return residual_rows * residual_bytes_per_token; }
  FitRequest request;
  FitResult fit;  // sessions at the step's context
  bool fits() const { return fit.kv_bytes_per_gpu > 0 && kv_bytes <= fit.kv_bytes_per_gpu; }
};

struct StepReport {
  const ModelAnalysis& model;
  const GpuProfile& gpu;
  const KernelCostModel& cost;
  const StepGraph& graph;
  const StepTiming& timing;
  // A decode step's drafts verified, and where their count came from.
  enum class DraftsFrom { kChosen, kGiven, kSpeculationOff };
  DraftChoice drafts{};
  DraftsFrom drafts_from = DraftsFrom::kChosen;
  StepMemory memory;
};

std::string phase_name(Phase phase);
std::vector<Table> step_tables(const StepReport& r);
nlohmann::json step_json(const StepReport& r);
// Chrome trace event format ("X" events, one track per stream); opens in ui.perfetto.dev.
nlohmann::json step_trace(const StepReport& r);

// Time per layer mode (summed over the layers of that mode), in plan order.
struct ModeTime {
  std::string mode;
  int layers = 0;
  double time_us = 0;
};
std::vector<ModeTime> time_by_mode(const StepTiming& timing);

// CUDA-core widening of narrow operands over a step: the work itself (as if
// alone), and the time of the kernels whose bound it is.
struct WideningShare {
  double work_us = 0;
  double bound_us = 0;
};
WideningShare widening_share(const StepTiming& timing);

// Time of a step's kernels whose bound is `bound`.
double time_bound_by(const StepTiming& timing, Bound bound);

}  // namespace v41sim
