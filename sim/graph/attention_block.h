// The attention half of a layer: mixing/norm, projections, the compressor and
// indexer where the layer owns them, attention itself, output projection.
// Which pieces appear follows the layer plan: a Reuse layer has no compressor
// or indexer; a Reindex layer has an indexer query but no keys; V3's MLA and a
// GQA model take their own projection shapes.
#pragma once

#include <string>

#include "sim/graph/kernel_factory.h"
#include "sim/graph/layer_context.h"

namespace v41sim {

void add_residual_mixing(const LayerContext& c, KernelFactory& f, const char* block);
// What a token carries from layer to layer: mHC's residual streams (or the
// one residual) in BF16, as add_residual_mixing counts their traffic.
double residual_bytes_per_token(const ModelSpec& m);
void add_attention_block(const LayerContext& c, KernelFactory& f);
// How mHC's kernels are timed, for outputs that show a model with mHC
// (empty for a model without): what they leave untimed, and its intensity.
std::string mhc_projection_assumption(const ModelSpec& m);

}  // namespace v41sim
