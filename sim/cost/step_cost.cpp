#include "sim/cost/step_cost.h"

#include <algorithm>

namespace v41sim {

StepTiming time_step(const StepGraph& graph, const KernelCostModel& cost) {
  StepTiming step;
  const bool overlap = graph.shape.overlap_communication;
  double main_us = 0;  // the start of the next layer
  double copy_us = 0;  // the host-copy engine
  for (const LayerKernels& layer : graph.layers) {
    LayerTiming lt;
    lt.layer = layer.layer;
    lt.mode = layer.mode;
    lt.tokens = layer.tokens;
    lt.start_us = main_us;
    copy_us = std::max(copy_us, main_us);
    double compute_at = main_us;
    double comm_at = main_us;  // used only when overlapping
    for (const Kernel& k : layer.kernels) {
      const KernelTiming t = cost.time(k);
      lt.flops += k.flops;
      lt.hbm_bytes += k.hbm_bytes;
      double* track = &compute_at;
      if (k.stream == Stream::kHostCopy) {
        track = &copy_us;
        lt.host_copy_us += t.time_us;
      } else if (k.stream == Stream::kCommunication) {
        lt.communication_us += t.time_us;
        if (overlap) track = &comm_at;
      } else {
        lt.compute_us += t.time_us;
      }
      lt.kernel_start_us.push_back(*track);
      *track += t.time_us;
      lt.kernels.push_back(t);
    }
    lt.critical_us =
        overlap ? std::max(lt.compute_us, lt.communication_us) : lt.compute_us + lt.communication_us;
    main_us += lt.critical_us;
    step.compute_us += lt.compute_us;
    step.communication_us += lt.communication_us;
    step.host_copy_us += lt.host_copy_us;
    step.flops += lt.flops;
    step.hbm_bytes += lt.hbm_bytes;
    step.kernel_count += static_cast<int64_t>(layer.kernels.size());
    step.layers.push_back(std::move(lt));
  }
  step.total_us = std::max(main_us, copy_us);
  return step;
}

}  // namespace v41sim
