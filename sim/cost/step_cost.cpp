#include "sim/cost/step_cost.h"

#include <algorithm>

namespace v41sim {

StepTiming time_step(const StepGraph& graph, const KernelCostModel& cost) {
  StepTiming step;
  double main_us = 0;  // compute and communication, in order
  double copy_us = 0;  // the host-copy engine
  for (const LayerKernels& layer : graph.layers) {
    LayerTiming lt;
    lt.layer = layer.layer;
    lt.mode = layer.mode;
    lt.tokens = layer.tokens;
    lt.start_us = main_us;
    copy_us = std::max(copy_us, main_us);
    for (const Kernel& k : layer.kernels) {
      const KernelTiming t = cost.time(k);
      lt.flops += k.flops;
      lt.hbm_bytes += k.hbm_bytes;
      if (k.stream == Stream::kHostCopy) {
        lt.kernel_start_us.push_back(copy_us);
        copy_us += t.time_us;
        lt.host_copy_us += t.time_us;
      } else {
        lt.kernel_start_us.push_back(main_us);
        main_us += t.time_us;
        (k.stream == Stream::kCommunication ? lt.communication_us : lt.compute_us) += t.time_us;
      }
      lt.kernels.push_back(t);
    }
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
