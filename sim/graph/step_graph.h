// StepGraph: the ordered kernels of one forward step, layer by layer.
//
// Token counts follow the phase: decode runs every layer on one token per
// sequence; prefill runs every layer on the whole prompt, except under CED
// (V4.1), where layers past the encoder run on the last `decoder_keep_tokens`
// only and the decoder's KV-source layers still project the whole prompt.
// After the backbone come the output head and, in decode, the draft stages.
#pragma once

#include <string>
#include <vector>

#include "sim/graph/kernel.h"
#include "sim/graph/step_shape.h"
#include "sim/model/model_analysis.h"

namespace v41sim {

struct LayerKernels {
  int64_t layer = 0;  // backbone layer id; head and draft stages follow num_layers
  std::string mode;   // the layer plan's mode, or "Head" / "Draft"
  double tokens = 0;
  std::vector<Kernel> kernels;
};

struct StepGraph {
  StepShape shape;
  std::vector<LayerKernels> layers;
};

// Throws InputError naming the flag for a batch, context or EP size that cannot be.
void validate_step_shape(const ModelAnalysis& model, const StepShape& shape);
StepGraph build_step_graph(const ModelAnalysis& model, const StepShape& shape);

}  // namespace v41sim
