// MicroBatchPipeline: a step's micro-batches laid out on one GPU's two
// tracks, the compute stream and the EP links, kernel dependencies kept.
//
// Each micro-batch runs its layers' kernels in order, a chain: attention and
// the router compute, the dispatch waits for them, the experts for the
// dispatch, the combine for the experts, the next layer for the combine. A
// chain is cut into segments, runs of consecutive kernels on one track. With
// two micro-batches (two-batch overlap, as DeepSeek and SGLang run it) each
// track takes the micro-batches' segments in turn, in program order (a layer's
// first segment of the first micro-batch, then the second's, then each one's
// next segment), a segment starting once its track is free and its own chain's
// previous segment is done. So one micro-batch's transfers hide behind the
// other's compute only as far as the segments line up: a layer lasts
// max(2 x compute, 2 x transfers) of one micro-batch only where each transfer
// fits behind the other's compute, and the first segment of the step, the
// last one and every mismatch in between are paid (before, the layout took
// that bound for every layer). One micro-batch alone is its chain end to end.
//
// While a normal-mode transfer runs it holds some of the SMs (LinkCost::
// normal_transfer_sms): compute meanwhile runs at the share of the SMs left.
// Low-latency transfers (decode) hold none.
#pragma once

#include <array>
#include <vector>

namespace v41sim {

// A run of one micro-batch's consecutive kernels on one track.
struct TrackSegment {
  bool communication = false;
  double us = 0;          // the kernels' time, each alone on the GPU
  double holding_us = 0;  // of a transfer segment: the time its transfers hold SMs
  bool operator==(const TrackSegment&) const = default;
};

// One layer of a step: each micro-batch's segments in kernel order; `second`
// null where there is no second micro-batch or it skips the layer.
struct PipelineLayer {
  const std::vector<TrackSegment>* first = nullptr;
  const std::vector<TrackSegment>* second = nullptr;
};

struct PipelineLayout {
  // When each layer is done: its last segment over both micro-batches, and no
  // earlier than the layer before it.
  std::vector<double> layer_end_us;
  // Start and end of each segment, per micro-batch and layer (a trace's
  // places for the kernels; none for a layer a micro-batch skips); empty
  // unless asked for.
  struct Span {
    double start_us = 0;
    double end_us = 0;
  };
  std::array<std::vector<std::vector<Span>>, 2> spans;
  double end_us = 0;
};

// `sm_share`: the SMs a normal-mode transfer holds, over the GPU's;
// `with_spans`: keep the spans.
PipelineLayout lay_out_micro_batches(const std::vector<PipelineLayer>& layers, double sm_share,
                                     bool with_spans = true);

}  // namespace v41sim
