#include "sim/cost/step_cost.h"

#include <algorithm>

namespace v41sim {
namespace {

// Layers end to end on the step's critical path: each lasts its compute and
// its transfers one after the other, or, overlapped, the longer of the two;
// host copies run on their own engine from the start of their layer.
class Timeline {
 public:
  explicit Timeline(bool overlap) : overlap_(overlap) {}

  // Adds a layer (its tracks' totals over every micro-batch; `holding_us` of
  // the transfers hold `sm_share` of the SMs); returns its span.
  double add(double compute_us, double communication_us, double host_copy_us, double holding_us,
             double sm_share) {
    copy_us_ = std::max(copy_us_, main_us_) + host_copy_us;
    double span = compute_us + communication_us;
    if (overlap_) {
      const double squeezed = compute_us / (1.0 - sm_share);  // compute on the SMs the transfers leave
      const double compute_track = squeezed <= holding_us ? squeezed : compute_us + holding_us * sm_share;
      span = std::max(compute_track, communication_us);
    }
    main_us_ += span;
    return span;
  }
  double now_us() const { return main_us_; }
  double copy_engine_free_us() const { return std::max(copy_us_, main_us_); }
  double total_us() const { return std::max(main_us_, copy_us_); }

 private:
  bool overlap_;
  double main_us_ = 0;
  double copy_us_ = 0;
};

}  // namespace

StepTiming time_step(const StepGraph& graph, const KernelCostModel& cost) {
  StepTiming step;
  step.transfer_sm_share = cost.normal_transfer_sm_share();
  const bool overlap = graph.micro_batches > 1;
  const double runs = static_cast<double>(graph.micro_batches);
  Timeline timeline(overlap);
  for (const LayerKernels& layer : graph.layers) {
    LayerTiming lt;
    lt.layer = layer.layer;
    lt.mode = layer.mode;
    lt.tokens = layer.tokens * runs;
    lt.start_us = timeline.now_us();
    // One micro-batch's kernels, each on its track from the start of the layer
    // (transfers after compute unless overlapped).
    double compute_at = lt.start_us, comm_at = lt.start_us, copy_at = timeline.copy_engine_free_us();
    for (const Kernel& k : layer.kernels) {
      const KernelTiming t = cost.time(k);
      lt.flops += k.flops * runs;
      lt.hbm_bytes += k.hbm_bytes * runs;
      double* track = &compute_at;
      if (k.stream == Stream::kHostCopy) {
        track = &copy_at;
        lt.host_copy_us += t.time_us * runs;
      } else if (k.stream == Stream::kCommunication) {
        lt.communication_us += t.time_us * runs;
        if (!k.low_latency) lt.sm_holding_communication_us += t.time_us * runs;
        if (overlap) track = &comm_at;
      } else {
        lt.compute_us += t.time_us * runs;
      }
      lt.kernel_start_us.push_back(*track);
      *track += t.time_us;
      lt.kernels.push_back(t);
    }
    lt.critical_us = timeline.add(lt.compute_us, lt.communication_us, lt.host_copy_us,
                                  lt.sm_holding_communication_us, step.transfer_sm_share);
    step.compute_us += lt.compute_us;
    step.communication_us += lt.communication_us;
    step.host_copy_us += lt.host_copy_us;
    step.flops += lt.flops;
    step.hbm_bytes += lt.hbm_bytes;
    step.kernel_count += static_cast<int64_t>(layer.kernels.size()) * graph.micro_batches;
    step.layers.push_back(std::move(lt));
  }
  step.total_us = timeline.total_us();
  return step;
}

OverlappedSpan overlapped_span(const StepTiming& one_micro_batch, int64_t micro_batches) {
  const double runs = static_cast<double>(micro_batches);
  Timeline timeline(true);
  OverlappedSpan out;
  for (const LayerTiming& l : one_micro_batch.layers) {
    const double compute = l.compute_us * runs;
    out.exposed_communication_us +=
        timeline.add(compute, l.communication_us * runs, l.host_copy_us * runs,
                     l.sm_holding_communication_us * runs, one_micro_batch.transfer_sm_share) -
        compute;
  }
  out.total_us = timeline.total_us();
  return out;
}

}  // namespace v41sim
