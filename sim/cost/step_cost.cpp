#include "sim/cost/step_cost.h"

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <stdexcept>
#include <utility>

namespace v41sim {
namespace {

// Calls visit(a, b) for each of `first`'s layers and the layer of `second`
// with its id (null where `second` has none); both in layer order, `second`'s
// ids some of `first`'s.
template <typename Layer, typename Visit>
void pair_layers(const std::vector<Layer>& first, const std::vector<Layer>& second, Visit visit) {
  std::size_t j = 0;
  for (const Layer& a : first) {
    const bool matched = j < second.size() && second[j].layer == a.layer;
    visit(a, matched ? &second[j] : nullptr);
    if (matched) ++j;
  }
  if (j != second.size()) {
    throw std::logic_error("the second micro-batch runs a layer the first does not");  // see StepGraph
  }
}

// One kernel's time added to its layer's totals, `runs` times.
void add_to_layer(LayerTiming& lt, const Kernel& k, const KernelTiming& t, double runs) {
  lt.flops += k.flops * runs;
  lt.hbm_bytes += k.hbm_bytes * runs;
  if (k.stream == Stream::kHostCopy) {
    lt.host_copy_us += t.time_us * runs;
  } else if (k.stream == Stream::kCommunication) {
    lt.communication_us += t.time_us * runs;
  } else {
    lt.compute_us += t.time_us * runs;
  }
}

// A step's layers are a few kinds repeated, and the graph numbers each
// backbone layer's kind (LayerKernels::kind): each kind's kernels are timed
// once and its other layers take those timings, the numbers the cost model
// would give again (it is a pure function of the kernel). The draft stages
// are a kind too; the head, of none, is timed as it comes.
class LayerTimings {
 public:
  explicit LayerTimings(const KernelCostModel& cost) : cost_(cost) {}
  // `list`: 0 for the first micro-batch's layers, 1 for the second's (each numbers its kinds).
  const std::vector<KernelTiming>& of(const LayerKernels& layer, std::size_t list) {
    if (layer.kind < 0) return unkinded_.emplace_back(time(layer.kernels()));
    std::deque<std::vector<KernelTiming>>& known = by_kind_[list];
    const auto kind = static_cast<std::size_t>(layer.kind);
    if (known.size() <= kind) known.resize(kind + 1);
    if (known[kind].empty()) known[kind] = time(layer.kernels());
    return known[kind];
  }

 private:
  std::vector<KernelTiming> time(const std::vector<Kernel>& kernels) const { return cost_.time(kernels); }

  const KernelCostModel& cost_;
  // Deques: the timings handed out stay where they are as more are added.
  std::deque<std::vector<KernelTiming>> by_kind_[2];
  std::deque<std::vector<KernelTiming>> unkinded_;
};

// A MoE layer runs four (attention and routing, dispatch, experts, combine):
// room for them and a few more, so building a layer's runs allocates once.
constexpr std::size_t kSegmentsReserved = 8;

// A kernel added to its layer's runs on one track (host copies, on their own
// engine, neither count nor cut a run).
void add_to_segments(std::vector<TrackSegment>& segments, const Kernel& k, double time_us) {
  if (k.stream == Stream::kHostCopy) return;
  const bool communication = k.stream == Stream::kCommunication;
  if (segments.empty() || segments.back().communication != communication) segments.push_back({communication});
  segments.back().us += time_us;
  if (communication && !k.low_latency) segments.back().holding_us += time_us;
}

// A layer's sums over its kernels (and its second micro-batch's), its
// position in the step left out: its tracks and runs, FLOPs and bytes, and
// each kernel class's time over the first micro-batch's kernels, each once
// (the band's weights). kFull also keeps every kernel's timing.
struct KindSums {
  LayerTiming layer;
  std::array<double, kKernelClassCount> class_us{};
};

// One micro-batch's kernels of a layer added to its totals, `runs` times;
// returns their runs on each track.
std::shared_ptr<const std::vector<TrackSegment>> add_kernels(LayerTiming& lt,
                                                             const std::vector<Kernel>& kernels,
                                                             const std::vector<KernelTiming>& timings,
                                                             double runs) {
  std::vector<TrackSegment> segments;
  segments.reserve(kSegmentsReserved);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    add_to_layer(lt, kernels[i], timings[i], runs);
    add_to_segments(segments, kernels[i], timings[i].time_us);
  }
  lt.kernels_run += static_cast<int64_t>(kernels.size()) * static_cast<int64_t>(runs);
  return std::make_shared<const std::vector<TrackSegment>>(std::move(segments));
}

KindSums sum_layer(const LayerKernels& layer, const LayerKernels* second, LayerTimings& timings, double runs,
                   bool full) {
  KindSums sums;
  LayerTiming& lt = sums.layer;
  const std::vector<KernelTiming>& layer_timings = timings.of(layer, 0);
  lt.segments = add_kernels(lt, layer.kernels(), layer_timings, runs);
  for (std::size_t i = 0; i < layer.kernels().size(); ++i)
    sums.class_us[static_cast<std::size_t>(layer.kernels()[i].kernel_class)] += layer_timings[i].time_us;
  if (full) lt.kernels = layer_timings;
  if (runs > 1) {
    lt.second_segments = lt.segments;
    if (full) lt.second_kernels = layer_timings;
  }
  if (second != nullptr) {
    const std::vector<KernelTiming>& second_timings = timings.of(*second, 1);
    lt.second_segments = add_kernels(lt, second->kernels(), second_timings, 1.0);
    if (full) lt.second_kernels = second_timings;
  }
  return sums;
}

// The step's layers laid out: the micro-batches on the compute stream and the
// links, host copies on the copy engine from the start of their layer (when
// the layer before it is done).
struct StepLayout {
  PipelineLayout pipeline;
  std::vector<double> copy_start_us;  // each layer's first host copy
  double total_us = 0;
};

StepLayout lay_out_step(const std::vector<PipelineLayer>& layers, const std::vector<double>& host_copy_us,
                        double sm_share, bool with_spans) {
  StepLayout out;
  out.pipeline = lay_out_micro_batches(layers, sm_share, with_spans);
  out.copy_start_us.reserve(layers.size());
  double copy_free = 0;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const double layer_start = l == 0 ? 0.0 : out.pipeline.layer_end_us[l - 1];
    out.copy_start_us.push_back(std::max(copy_free, layer_start));
    copy_free = out.copy_start_us.back() + host_copy_us[l];
  }
  out.total_us = std::max(out.pipeline.end_us, copy_free);
  return out;
}

// Each of a micro-batch's kernels in a layer placed: compute and transfers
// inside their run's span (a run that went slower, on the SMs a transfer left
// it, stretched evenly), host copies one after another from `copy_at`, which
// moves past them.
std::vector<double> kernel_starts(const std::vector<Kernel>& kernels,
                                  const std::vector<KernelTiming>& timings,
                                  const std::vector<TrackSegment>& segments,
                                  const std::vector<PipelineLayout::Span>& spans, double& copy_at) {
  std::vector<double> starts;
  starts.reserve(kernels.size());
  std::size_t segment = 0;
  double into_segment = 0;  // time alone of the run's kernels placed so far
  bool started = false;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const Kernel& k = kernels[i];
    const double time_us = timings[i].time_us;
    if (k.stream == Stream::kHostCopy) {
      starts.push_back(copy_at);
      copy_at += time_us;
      continue;
    }
    const bool communication = k.stream == Stream::kCommunication;
    if (started && segments[segment].communication != communication) {
      ++segment;
      into_segment = 0;
    }
    started = true;
    const TrackSegment& s = segments[segment];
    const double stretch = s.us > 0 ? (spans[segment].end_us - spans[segment].start_us) / s.us : 1.0;
    starts.push_back(spans[segment].start_us + into_segment * stretch);
    into_segment += time_us;
  }
  return starts;
}

}  // namespace

StepTiming time_step(const StepGraph& graph, const KernelCostModel& cost, TimingDetail detail) {
  StepTiming step;
  step.layers.reserve(graph.layers.size());
  step.transfer_sm_share = cost.normal_transfer_sm_share();
  const bool full = detail == TimingDetail::kFull;
  // The first micro-batch's kernels count once per micro-batch, unless the
  // second's differ and count on their own.
  const double runs = graph.second_layers.empty() ? static_cast<double>(graph.micro_batches) : 1.0;
  LayerTimings timings(cost);
  // kTracks: a layer's sums by its kind and its second micro-batch's (-1:
  // none), as the first layer of that pair summed them (the same kernels in
  // the same order: the same sums).
  std::map<std::pair<int64_t, int64_t>, KindSums> by_kind;
  pair_layers(graph.layers, graph.second_layers, [&](const LayerKernels& layer, const LayerKernels* second) {
    const std::pair<int64_t, int64_t> kinds{layer.kind, second != nullptr ? second->kind : -1};
    const bool shared = !full && layer.kind >= 0 && (second == nullptr || second->kind >= 0);
    const auto known = shared ? by_kind.find(kinds) : by_kind.end();
    KindSums sums = known != by_kind.end() ? known->second : sum_layer(layer, second, timings, runs, full);
    if (shared && known == by_kind.end()) by_kind.emplace(kinds, sums);
    LayerTiming& lt = sums.layer;
    lt.layer = layer.layer;
    if (full) lt.mode = layer.mode;
    lt.tokens = layer.tokens * runs + (second != nullptr ? second->tokens : 0.0);
    for (std::size_t c = 0; c < sums.class_us.size(); ++c) step.class_us[c] += sums.class_us[c];
    step.compute_us += lt.compute_us;
    step.communication_us += lt.communication_us;
    step.host_copy_us += lt.host_copy_us;
    step.flops += lt.flops;
    step.hbm_bytes += lt.hbm_bytes;
    step.kernel_count += lt.kernels_run;
    step.layers.push_back(std::move(lt));
  });
  std::vector<PipelineLayer> pipeline;
  std::vector<double> host_copy_us;
  pipeline.reserve(step.layers.size());
  host_copy_us.reserve(step.layers.size());
  for (const LayerTiming& l : step.layers) {
    pipeline.push_back({l.segments.get(), l.second_segments.get()});
    host_copy_us.push_back(l.host_copy_us);
  }
  const StepLayout layout = lay_out_step(pipeline, host_copy_us, step.transfer_sm_share, full);
  for (std::size_t l = 0; l < step.layers.size(); ++l) {
    LayerTiming& lt = step.layers[l];
    lt.start_us = l == 0 ? 0.0 : layout.pipeline.layer_end_us[l - 1];
    lt.critical_us = layout.pipeline.layer_end_us[l] - lt.start_us;
    if (!full) continue;
    double copy_at = layout.copy_start_us[l];
    lt.kernel_start_us = kernel_starts(graph.layers[l].kernels(), lt.kernels, *lt.segments,
                                       layout.pipeline.spans[0][l], copy_at);
    if (const LayerKernels* second = second_micro_batch_layer(graph, l); second != nullptr) {
      lt.second_kernel_start_us = kernel_starts(second->kernels(), lt.second_kernels, *lt.second_segments,
                                                layout.pipeline.spans[1][l], copy_at);
    }
  }
  step.total_us = layout.total_us;
  return step;
}

std::vector<LayerTracks> layer_tracks(const StepTiming& timing) {
  std::vector<LayerTracks> out;
  out.reserve(timing.layers.size());
  for (const LayerTiming& l : timing.layers) out.push_back(l);  // its tracks alone
  return out;
}

OverlappedSpan overlapped_span(const std::vector<LayerTracks>& first, const std::vector<LayerTracks>& second,
                               double transfer_sm_share) {
  std::vector<PipelineLayer> pipeline;
  std::vector<double> host_copy_us;
  pipeline.reserve(first.size());
  host_copy_us.reserve(first.size());
  double compute_us = 0;
  pair_layers(first, second, [&](const LayerTracks& a, const LayerTracks* b) {
    pipeline.push_back({a.segments.get(), b != nullptr ? b->segments.get() : nullptr});
    host_copy_us.push_back(a.host_copy_us + (b != nullptr ? b->host_copy_us : 0.0));
    compute_us += a.compute_us + (b != nullptr ? b->compute_us : 0.0);
  });
  const StepLayout layout = lay_out_step(pipeline, host_copy_us, transfer_sm_share, false);
  return {layout.total_us, layout.pipeline.end_us - compute_us};
}

}  // namespace v41sim
