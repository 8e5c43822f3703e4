// The attention half of a layer: mixing/norm, projections, the compressor and
// indexer where the layer owns them, attention itself, output projection.
// Which pieces appear follows the layer plan: a Reuse layer has no compressor
// or indexer; a Reindex layer has an indexer query but no keys; V3's MLA and a
// GQA model take their own projection shapes.
#pragma once

#include "sim/graph/kernel_factory.h"
#include "sim/graph/layer_context.h"

namespace v41sim {

// The block's kernels, its residual mixing first (residual_mixing.h).
void add_attention_block(const LayerContext& c, KernelFactory& f);

}  // namespace v41sim
