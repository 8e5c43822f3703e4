#include "sim/cost/micro_batch_pipeline.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <utility>

namespace v41sim {
namespace {

constexpr std::size_t kCompute = 0;
constexpr std::size_t kLinks = 1;

// A segment in its track's queue: where it is in the step and in its
// micro-batch's chain (it may start once the `position` segments before it in
// the chain are done).
struct Queued {
  std::size_t layer = 0;
  std::size_t segment = 0;
  std::size_t micro_batch = 0;
  std::size_t position = 0;
  const TrackSegment* what = nullptr;
};

// Each track's segments in program order: layer by layer, a layer's first
// segments of both micro-batches, then their next ones.
std::array<std::vector<Queued>, 2> queue_in_program_order(const std::vector<PipelineLayer>& layers) {
  std::array<std::vector<Queued>, 2> queues;
  std::size_t segments = 0;
  for (const PipelineLayer& l : layers) {
    for (const auto* chain : {l.first, l.second}) segments += chain != nullptr ? chain->size() : 0;
  }
  for (std::vector<Queued>& queue : queues) queue.reserve(segments);
  std::array<std::size_t, 2> positions{0, 0};
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const std::array<const std::vector<TrackSegment>*, 2> chains{layers[l].first, layers[l].second};
    std::size_t most = 0;
    for (const auto* chain : chains) most = std::max(most, chain != nullptr ? chain->size() : 0);
    for (std::size_t s = 0; s < most; ++s) {
      for (std::size_t mb = 0; mb < 2; ++mb) {
        if (chains[mb] == nullptr || s >= chains[mb]->size()) continue;
        const TrackSegment& segment = (*chains[mb])[s];
        queues[segment.communication ? kLinks : kCompute].push_back({l, s, mb, positions[mb]++, &segment});
      }
    }
  }
  return queues;
}

// One micro-batch: its segments end to end (what the general layout gives
// then, figure for figure, without its queues).
PipelineLayout one_after_another(const std::vector<PipelineLayer>& layers, PipelineLayout out,
                                 bool with_spans) {
  double now = 0;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    if (layers[l].first == nullptr) {
      out.layer_end_us[l] = now;
      continue;
    }
    const std::vector<TrackSegment>& chain = *layers[l].first;
    for (std::size_t s = 0; s < chain.size(); ++s) {
      const double start = now;
      now = start + chain[s].us;
      if (with_spans) out.spans[0][l][s] = {start, now};
    }
    out.layer_end_us[l] = now;
  }
  out.end_us = now;
  return out;
}

}  // namespace

PipelineLayout lay_out_micro_batches(const std::vector<PipelineLayer>& layers, double sm_share,
                                     bool with_spans) {
  PipelineLayout out;
  out.layer_end_us.assign(layers.size(), 0.0);
  if (with_spans) {
    for (std::size_t mb = 0; mb < 2; ++mb) {
      out.spans[mb].resize(layers.size());
      for (std::size_t l = 0; l < layers.size(); ++l) {
        const std::vector<TrackSegment>* chain = mb == 0 ? layers[l].first : layers[l].second;
        out.spans[mb][l].resize(chain != nullptr ? chain->size() : 0);
      }
    }
  }

  const bool one_chain =
      std::none_of(layers.begin(), layers.end(), [](const PipelineLayer& l) { return l.second != nullptr; });
  if (one_chain) return one_after_another(layers, std::move(out), with_spans);
  const std::array<std::vector<Queued>, 2> queues = queue_in_program_order(layers);
  std::array<std::size_t, 2> next{0, 0};      // each track's next segment in its queue
  std::array<std::size_t, 2> finished{0, 0};  // each chain's segments done
  struct Running {
    const Queued* segment = nullptr;
    double start_us = 0;
    double work_left_us = 0;  // compute: its time alone still to run
    double end_us = 0;        // links: when it ends
  };
  std::array<Running, 2> running;
  double now = 0;

  const auto start_ready = [&](std::size_t track) {
    if (running[track].segment != nullptr || next[track] >= queues[track].size()) return;
    const Queued& q = queues[track][next[track]];
    if (finished[q.micro_batch] != q.position) return;  // its chain's previous segment still runs
    running[track] = {&q, now, q.what->us, now + q.what->us};
    ++next[track];
  };
  const auto finish = [&](std::size_t track) {
    const Queued& q = *running[track].segment;
    out.layer_end_us[q.layer] = std::max(out.layer_end_us[q.layer], now);
    if (with_spans) out.spans[q.micro_batch][q.layer][q.segment] = {running[track].start_us, now};
    ++finished[q.micro_batch];
    running[track] = {};
  };

  for (;;) {
    start_ready(kCompute);
    start_ready(kLinks);
    const Running& compute = running[kCompute];
    const Running& links = running[kLinks];
    if (compute.segment == nullptr && links.segment == nullptr) break;
    // Compute runs on the SMs a running normal-mode transfer leaves it.
    double rate = 1.0;
    if (links.segment != nullptr && links.segment->what->us > 0)
      rate -= sm_share * links.segment->what->holding_us / links.segment->what->us;
    constexpr double kNever = std::numeric_limits<double>::infinity();
    const double compute_end = compute.segment != nullptr ? now + compute.work_left_us / rate : kNever;
    const double links_end = links.segment != nullptr ? links.end_us : kNever;
    const double then = std::min(compute_end, links_end);
    if (compute.segment != nullptr) running[kCompute].work_left_us -= (then - now) * rate;
    now = then;
    if (compute.segment != nullptr && compute_end <= then) finish(kCompute);
    if (links.segment != nullptr && links_end <= then) finish(kLinks);
  }
  if (next[kCompute] != queues[kCompute].size() || next[kLinks] != queues[kLinks].size()) {
    // Program order keeps each chain in order on both tracks: unreachable.
    throw std::logic_error("a micro-batch's segment never became ready");
  }
  for (std::size_t l = 1; l < layers.size(); ++l)
    out.layer_end_us[l] = std::max(out.layer_end_us[l], out.layer_end_us[l - 1]);
  out.end_us = out.layer_end_us.empty() ? 0.0 : out.layer_end_us.back();
  return out;
}

}  // namespace v41sim
