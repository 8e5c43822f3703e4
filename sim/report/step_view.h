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
#include "sim/graph/step_memory.h"
#include "sim/hw/gpu_profile.h"
#include "sim/model/model_analysis.h"
#include "sim/report/table.h"

namespace v41sim {

// How a dense model's step (no routed experts) is timed: the EP size spreads
// nothing, so the step is one GPU holding and running every weight.
inline constexpr std::string_view kDenseModelStep =
    "no routed experts to spread over EP ranks, so one GPU holds and runs the whole model (tensor "
    "parallelism is not modelled)";

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
// The step's sequences' KV against what one GPU keeps for it (a shape outside
// the GPU is timed all the same, and this says so), and as JSON.
inline constexpr std::string_view kKvHeldLabel = "KV held by the step's sequences";
std::string kv_memory_phrase(const StepMemory& m);
// Its widest layer's residual streams against the reserve kept for activations.
inline constexpr std::string_view kResidualStreamsLabel = "residual streams of its widest layer";
std::string residual_memory_phrase(const StepMemory& m);
nlohmann::json kv_memory_json(const StepMemory& m);
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

// CUDA-core work of one kind over a step: the work itself (as if alone), and
// the time of the kernels whose bound it is.
struct CudaCoreShare {
  double work_us = 0;
  double bound_us = 0;
};
CudaCoreShare widening_share(const StepTiming& timing);  // widening narrow operands
CudaCoreShare fold_share(const StepTiming& timing);      // folding the indexer's heads
// How the indexer's fold is timed, its two figures with their provenance
// (the compare rate and the indexer class's fold efficiency); empty where the
// priors give the class none.
std::string fold_note(const CostParams& params);

// Time of a step's kernels whose bound is `bound`.
double time_bound_by(const StepTiming& timing, Bound bound);

}  // namespace v41sim
