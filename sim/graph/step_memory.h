// StepMemory: what a step's sequences hold in KV against what one GPU of its
// EP group keeps for KV once `fit`'s split has placed the weights, and the
// residual streams its widest layer holds against the reserve kept for
// activations. A step that would not fit is timed all the same (`step`,
// `compare-layers`), and says so.
#pragma once

#include "sim/capacity/memory_fit.h"
#include "sim/graph/step_graph.h"
#include "sim/hw/gpu_profile.h"
#include "sim/model/model_analysis.h"

namespace v41sim {

struct StepMemory {
  double kv_bytes = 0;       // each sequence's global KV at its context and its bounded state (derived)
  double residual_rows = 0;  // tokens of the layer that runs the most (both micro-batches)
  double residual_bytes_per_token = 0;  // what each carries between layers (residual_bytes_per_token)
  // Their residual streams: a floor under the step's activations.
  double residual_stream_bytes() const { return residual_rows * residual_bytes_per_token; }
  FitRequest request;
  FitResult fit;  // sessions at the step's context
  bool fits() const { return fit.kv_bytes_per_gpu > 0 && kv_bytes <= fit.kv_bytes_per_gpu; }
  bool activations_fit() const { return residual_stream_bytes() <= fit.reserve_bytes_per_gpu; }
};

// The weights placed as a serving run places them: the model's own formats,
// dense weights on every GPU, the default reserve. The residual streams are
// those of the layer that runs the most rows (CED's encoder layers run a
// prompt's every token; both micro-batches are live).
StepMemory step_memory(const ModelAnalysis& m, const GpuProfile& gpu, const StepGraph& graph);

}  // namespace v41sim
