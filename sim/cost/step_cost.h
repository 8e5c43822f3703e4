// StepTiming: a step graph laid out in time on one GPU.
//
// Compute kernels and EP transfers run one after another, unless the step
// overlaps them with two micro-batches (StepGraph::micro_batches): then each
// micro-batch's compute and transfers take turns, one micro-batch's transfers
// running while the other computes, each kernel still waiting for the one
// before it in its own micro-batch (micro_batch_pipeline.h lays them out: a
// layer lasts at least the busier of its two tracks over both micro-batches,
// and more where one micro-batch's transfer has no compute of the other to
// hide behind). While a normal-mode transfer runs it holds some SMs
// (LinkCost::normal_transfer_sms), so compute meanwhile runs on the rest.
// Host copies (Engram prefetch) run on their own copy engine from the start
// of their layer. Per-kernel times are one micro-batch's; layer and step
// totals count both. Per-layer and per-kernel times, FLOPs and bytes are kept
// for the tables and the trace.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "sim/cost/kernel_cost.h"
#include "sim/cost/micro_batch_pipeline.h"
#include "sim/graph/step_graph.h"

namespace v41sim {

// A layer's time on each track, over its kernels: what laying micro-batches
// out needs of a timing (a few numbers per layer, so caches of many step
// shapes can keep them).
struct LayerTracks {
  int64_t layer = 0;
  double compute_us = 0;
  double communication_us = 0;
  double host_copy_us = 0;
  // The first micro-batch's kernels as runs on one track, in order: what the
  // micro-batches are laid out from (shared by the layers of one kind, never
  // changed once made: copying a layer's tracks copies no segment).
  std::shared_ptr<const std::vector<TrackSegment>> segments =
      std::make_shared<const std::vector<TrackSegment>>();
};

// A layer's timing in full: its tracks, and what views and traces show.
struct LayerTiming : LayerTracks {
  std::string mode;
  double tokens = 0;
  double start_us = 0;
  double flops = 0;
  double hbm_bytes = 0;
  std::vector<KernelTiming> kernels;  // parallel to the graph's kernels (the first micro-batch's)
  std::vector<double> kernel_start_us;
  // The second micro-batch's, where it runs the layer: its kernels' timings
  // and starts, parallel to its kernels (the first's, unless the halves differ:
  // StepGraph::second_layers). kFull only.
  std::vector<KernelTiming> second_kernels;
  std::vector<double> second_kernel_start_us;
  // The second micro-batch's runs on each track, where it runs the layer (the
  // first's where the halves are alike); null otherwise.
  std::shared_ptr<const std::vector<TrackSegment>> second_segments;
  int64_t kernels_run = 0;  // over every micro-batch
  double critical_us = 0;   // from the layer before it done to this one done, both micro-batches
};

struct StepTiming {
  std::vector<LayerTiming> layers;
  // Each kernel class's time over the first micro-batch's kernels, each
  // counted once (what a step's error band weights its classes by).
  std::array<double, kKernelClassCount> class_us{};
  double total_us = 0;
  double compute_us = 0;
  double communication_us = 0;
  double host_copy_us = 0;
  double flops = 0;
  double hbm_bytes = 0;
  int64_t kernel_count = 0;
  double transfer_sm_share = 0;  // SMs a normal-mode transfer holds, over the GPU's
};

// What a timing keeps: kFull, every kernel's timing and start (the step
// views and traces); kTracks, each layer's tracks and sums alone, layers of a
// kind summed once (a serving run's step cache, which costs thousands of
// shapes and keeps only those). Both give the same tracks and totals.
enum class TimingDetail { kFull, kTracks };
StepTiming time_step(const StepGraph& graph, const KernelCostModel& cost,
                     TimingDetail detail = TimingDetail::kFull);

std::vector<LayerTracks> layer_tracks(const StepTiming& timing);

// What time_step gives for a step of two overlapped micro-batches, from each
// one's timing laid out alone (its graph built without overlap; the second's
// layers some of the first's, as StepGraph::second_layers): the same critical
// path, without rebuilding or retiming kernels. `transfer_sm_share` as
// StepTiming's.
struct OverlappedSpan {
  double total_us = 0;
  double exposed_communication_us = 0;  // what compute did not hide
};
OverlappedSpan overlapped_span(const std::vector<LayerTracks>& first, const std::vector<LayerTracks>& second,
                               double transfer_sm_share);

}  // namespace v41sim
