#include "sim/cost/step_cost.h"

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <stdexcept>
#include <utility>

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
    if (!k.low_latency) lt.sm_holding_communication_us += t.time_us * runs;
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
  std::vector<KernelTiming> time(const std::vector<Kernel>& kernels) const {
    std::vector<KernelTiming> timings;
    timings.reserve(kernels.size());
    for (const Kernel& k : kernels) timings.push_back(cost_.time(k));
    return timings;
  }

  const KernelCostModel& cost_;
  // Deques: the timings handed out stay where they are as more are added.
  std::deque<std::vector<KernelTiming>> by_kind_[2];
  std::deque<std::vector<KernelTiming>> unkinded_;
};

// A layer's sums over its kernels (and its second micro-batch's), its
// position in the step left out: its tracks, FLOPs and bytes, and each kernel
// class's time over the first micro-batch's kernels, each once (the band's
// weights). kFull also keeps every kernel's timing and start, each on its
// track from the start of the layer (transfers after compute unless
// overlapped; host copies from when the copy engine is free).
struct KindSums {
  LayerTiming layer;
  std::array<double, kKernelClassCount> class_us{};
};

KindSums sum_layer(const LayerKernels& layer, const LayerKernels* second, LayerTimings& timings, double runs,
                   bool overlap, bool full, double start_us, double copy_free_us) {
  KindSums sums;
  LayerTiming& lt = sums.layer;
  double compute_at = start_us, comm_at = start_us, copy_at = copy_free_us;
  const std::vector<KernelTiming>& layer_timings = timings.of(layer, 0);
  if (full) {
    lt.kernel_start_us.reserve(layer.kernels().size());
    lt.kernels.reserve(layer.kernels().size());
  }
  for (std::size_t i = 0; i < layer.kernels().size(); ++i) {
    const Kernel& k = layer.kernels()[i];
    const KernelTiming& t = layer_timings[i];
    add_to_layer(lt, k, t, runs);
    sums.class_us[static_cast<std::size_t>(k.kernel_class)] += t.time_us;
    if (!full) continue;
    double* track = &compute_at;
    if (k.stream == Stream::kHostCopy) {
      track = &copy_at;
    } else if (k.stream == Stream::kCommunication && overlap) {
      track = &comm_at;
    }
    lt.kernel_start_us.push_back(*track);
    *track += t.time_us;
    lt.kernels.push_back(t);
  }
  lt.kernels_run = static_cast<int64_t>(layer.kernels().size()) * static_cast<int64_t>(runs);
  if (second != nullptr) {
    const std::vector<KernelTiming>& second_timings = timings.of(*second, 1);
    for (std::size_t i = 0; i < second->kernels().size(); ++i)
      add_to_layer(lt, second->kernels()[i], second_timings[i], 1.0);
    lt.kernels_run += static_cast<int64_t>(second->kernels().size());
  }
  return sums;
}

}  // namespace

StepTiming time_step(const StepGraph& graph, const KernelCostModel& cost, TimingDetail detail) {
  StepTiming step;
  step.layers.reserve(graph.layers.size());
  step.transfer_sm_share = cost.normal_transfer_sm_share();
  const bool overlap = graph.micro_batches > 1;
  const bool full = detail == TimingDetail::kFull;
  // The first micro-batch's kernels count once per micro-batch, unless the
  // second's differ and count on their own.
  const double runs = graph.second_layers.empty() ? static_cast<double>(graph.micro_batches) : 1.0;
  Timeline timeline(overlap);
  LayerTimings timings(cost);
  // kTracks: a layer's sums by its kind and its second micro-batch's (-1:
  // none), as the first layer of that pair summed them (the same kernels in
  // the same order: the same sums).
  std::map<std::pair<int64_t, int64_t>, KindSums> by_kind;
  pair_layers(graph.layers, graph.second_layers, [&](const LayerKernels& layer, const LayerKernels* second) {
    const std::pair<int64_t, int64_t> kinds{layer.kind, second != nullptr ? second->kind : -1};
    const bool shared = !full && layer.kind >= 0 && (second == nullptr || second->kind >= 0);
    const auto known = shared ? by_kind.find(kinds) : by_kind.end();
    const double start_us = timeline.now_us();
    KindSums sums = known != by_kind.end() ? known->second
                                           : sum_layer(layer, second, timings, runs, overlap, full, start_us,
                                                       timeline.copy_engine_free_us());
    if (shared && known == by_kind.end()) by_kind.emplace(kinds, sums);
    LayerTiming& lt = sums.layer;
    lt.layer = layer.layer;
    if (full) lt.mode = layer.mode;
    lt.tokens = layer.tokens * runs + (second != nullptr ? second->tokens : 0.0);
    lt.start_us = start_us;
    lt.critical_us = timeline.add(lt.compute_us, lt.communication_us, lt.host_copy_us,
                                  lt.sm_holding_communication_us, step.transfer_sm_share);
    for (std::size_t c = 0; c < sums.class_us.size(); ++c) step.class_us[c] += sums.class_us[c];
    step.compute_us += lt.compute_us;
    step.communication_us += lt.communication_us;
    step.host_copy_us += lt.host_copy_us;
    step.flops += lt.flops;
    step.hbm_bytes += lt.hbm_bytes;
    step.kernel_count += lt.kernels_run;
    step.layers.push_back(std::move(lt));
  });
  step.total_us = timeline.total_us();
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
  Timeline timeline(true);
  OverlappedSpan out;
  pair_layers(first, second, [&](const LayerTracks& a, const LayerTracks* b) {
    const auto both = [&](double LayerTracks::*track) { return a.*track + (b != nullptr ? b->*track : 0.0); };
    const double compute = both(&LayerTracks::compute_us);
    out.exposed_communication_us +=
        timeline.add(compute, both(&LayerTracks::communication_us), both(&LayerTracks::host_copy_us),
                     both(&LayerTracks::sm_holding_communication_us), transfer_sm_share) -
        compute;
  });
  out.total_us = timeline.total_us();
  return out;
}

}  // namespace v41sim
