#include "sim/graph/step_memory.h"

#include <algorithm>

#include "sim/graph/residual_mixing.h"

namespace v41sim {

StepMemory step_memory(const ModelAnalysis& m, const GpuProfile& gpu, const StepGraph& graph) {
  const StepShape& s = graph.shape;
  StepMemory memory;
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    const LayerKernels* second = second_micro_batch_layer(graph, i);
    memory.residual_rows =
        std::max(memory.residual_rows, graph.layers[i].tokens + (second != nullptr ? second->tokens : 0.0));
  }
  memory.residual_bytes_per_token = residual_bytes_per_token(m.spec);
  memory.kv_bytes = static_cast<double>(s.batch) * m.kv.session_bytes(s.context);
  if (s.is_mixed()) {
    memory.kv_bytes +=
        static_cast<double>(s.mixed_prefill.batch) * m.kv.session_bytes(s.mixed_prefill.context);
  }
  memory.request = FitRequest{s.ep,
                              s.ep,
                              s.context,
                              m.spec.weights,
                              DensePlacement::kReplicated,
                              default_reserve_fraction(),
                              s.redundant_experts};
  memory.request.attention_tp = s.attention_tp;
  memory.fit = lay_out_memory(m, gpu, memory.request);
  return memory;
}

}  // namespace v41sim
