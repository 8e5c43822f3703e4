#include "sim/serving/step_time_cache.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <optional>
#include <shared_mutex>

#include "sim/cost/draft_choice.h"
#include "sim/cost/step_cost.h"
#include "sim/graph/step_graph.h"

namespace v41sim {
namespace {

constexpr int64_t kExactBelow = 256;
constexpr double kStepsPerOctave = 16.0;

// A step that verifies the drafts `plain` chose, timed as `step`.
StepTimeCache::DecodeStep with_drafts_of(const StepTimeCache::DecodeStep& plain,
                                         const StepTimeCache::StepCost& step) {
  return {step.us,   step.communication_us, plain.tokens_per_sequence, plain.drafts,
          step.band, step.micro_batches};
}

}  // namespace

int64_t round_up_to_grid(int64_t tokens) {
  if (tokens <= kExactBelow) return std::max<int64_t>(tokens, 1);
  const double index = std::ceil(std::log2(static_cast<double>(tokens)) * kStepsPerOctave - 1e-9);
  return static_cast<int64_t>(std::ceil(std::exp2(index / kStepsPerOctave)));
}

StepTimeCache::StepTimeCache(const ModelAnalysis& model, const KernelCostModel& prefill_cost,
                             const KernelCostModel& decode_cost, StepShape prefill_template,
                             StepShape decode_template, bool prefill_overlap_optional,
                             bool decode_overlap_optional, double step_overhead_us)
    : model_(model),
      prefill_cost_(prefill_cost),
      decode_cost_(decode_cost),
      prefill_template_(prefill_template),
      decode_template_(decode_template),
      prefill_overlap_optional_(prefill_overlap_optional),
      decode_overlap_optional_(decode_overlap_optional),
      step_overhead_us_(step_overhead_us) {
  prefill_template_.phase = Phase::kPrefill;
  decode_template_.phase = Phase::kDecode;
}

StepTimeCache::ShapeKey StepTimeCache::key_of(const StepShape& shape) {
  const StepShape::PrefillChunks& chunks = shape.mixed_prefill;
  return {static_cast<int>(shape.phase),
          shape.batch,
          shape.new_tokens,
          shape.context,
          shape.continuing,
          shape.decode_tokens_per_sequence,
          chunks.batch,
          chunks.new_tokens,
          chunks.context,
          chunks.continuing,
          shape.expert_token_share,
          shape.beside_prompts};
}

StepTimeCache::StepCost StepTimeCache::compute(Phase phase, int64_t batch, int64_t new_tokens,
                                               int64_t context, int64_t drafts, int64_t continuing,
                                               double expert_token_share, bool beside_prompts) {
  StepShape shape = phase == Phase::kPrefill ? prefill_template_ : decode_template_;
  shape.batch = batch;
  shape.context = std::min(context, model_.spec.max_context);
  shape.new_tokens = phase == Phase::kPrefill ? std::min(new_tokens, shape.context) : 0;
  shape.continuing = continuing;
  shape = verifying(shape, drafts);
  shape.expert_token_share = expert_token_share;
  shape.beside_prompts = beside_prompts;
  const ShapeKey key = key_of(shape);
  {
    const std::shared_lock<std::shared_mutex> look(*lock_);
    if (const auto it = cache_.find(key); it != cache_.end()) return it->second;
  }
  const StepCost step =
      cost_of(shape, phase == Phase::kPrefill ? prefill_overlap_optional_ : decode_overlap_optional_);
  const std::lock_guard<std::shared_mutex> hold(*lock_);
  return cache_.emplace(key, step).first->second;
}

StepTimeCache::StepCost StepTimeCache::cost_of(StepShape shape, bool overlap_optional) {
  StepCost step = forward_cost_of(std::move(shape), overlap_optional);
  // The engine's overhead is no kernel's: the kernel model's band covers the forward's share.
  const double forward_us = step.us;
  step.us += step_overhead_us_;
  if (step.us > 0) step.band.covered_share *= forward_us / step.us;
  return step;
}

StepTimeCache::StepCost StepTimeCache::forward_cost_of(StepShape shape, bool overlap_optional) {
  // Mixed shapes seldom repeat (their decode batch, both contexts and the
  // chunk all vary), nor do their halves: their one-batch timings are laid
  // out and dropped, not kept for the run (whose memory they would fill).
  const bool keep = !shape.is_mixed();
  std::optional<OneBatch> first_dropped;
  std::optional<OneBatch> second_dropped;
  std::optional<OneBatch> whole_dropped;
  const auto timed = [&](const StepShape& s, std::optional<OneBatch>& dropped) -> const OneBatch& {
    if (keep) return one_batch(s);
    return dropped.emplace(time_one_batch(s));
  };
  // Two micro-batches: each half's one-batch timing, overlapped (their
  // kernels are the micro-batches'; the band is the first's).
  const std::vector<StepShape> halves = micro_batches_of(shape);
  std::optional<StepCost> split;
  if (halves.size() == 2) {
    const OneBatch& first = timed(halves[0], first_dropped);
    // The same timing where the halves are alike.
    const OneBatch& second =
        key_of(halves[1]) == key_of(halves[0]) ? first : timed(halves[1], second_dropped);
    const OverlappedSpan span = overlapped_span(first.tracks, second.tracks, first.transfer_sm_share);
    split = StepCost{span.total_us, span.exposed_communication_us, first.cost.band, 2};
  }
  if (split && !overlap_optional) return *split;
  shape.overlap_communication = false;
  const StepCost whole = timed(shape, whole_dropped).cost;
  return split && split->us < whole.us ? *split : whole;
}

const StepTimeCache::OneBatch& StepTimeCache::one_batch(const StepShape& shape) {
  const ShapeKey key = key_of(shape);
  {
    const std::shared_lock<std::shared_mutex> look(*lock_);
    if (const auto it = one_batch_.find(key); it != one_batch_.end()) return it->second;
  }
  OneBatch entry = time_one_batch(shape);
  const std::lock_guard<std::shared_mutex> hold(*lock_);
  return one_batch_.emplace(key, std::move(entry)).first->second;
}

StepTimeCache::OneBatch StepTimeCache::time_one_batch(const StepShape& shape) const {
  const KernelCostModel& cost = shape.decode_only() ? decode_cost_ : prefill_cost_;
  // Each thread builds its graphs in one reused graph (runs share this cache from several threads).
  thread_local StepGraph graph;
  build_step_graph(model_, shape, graph);
  const StepTiming timing = time_step(graph, cost, TimingDetail::kTracks);  // tracks and sums: all it keeps
  double exposed = 0;  // communication time compute did not hide
  for (const LayerTiming& layer : timing.layers) exposed += layer.critical_us - layer.compute_us;
  const StepCost step{timing.total_us, std::max(0.0, exposed), step_error_band(timing, cost.params())};
  // The layers' tracks only: a kept entry lives for a whole run.
  return {step, layer_tracks(timing), timing.transfer_sm_share};
}

StepTimeCache::StepCost StepTimeCache::prefill_step(int64_t batch, int64_t new_tokens, int64_t context,
                                                    int64_t continuing, int64_t group_tokens_per_rank) {
  const int64_t grid_context = round_up_to_grid(context);
  const int64_t grid_new = std::min(round_up_to_grid(new_tokens), grid_context);
  return compute(
      Phase::kPrefill, batch, grid_new, grid_context, 0, continuing,
      expert_token_share(group_tokens_per_rank, batch * new_tokens, prefill_template_.ranks_in_ep_group()));
}

double StepTimeCache::expert_token_share(int64_t group_tokens_per_rank, int64_t own_tokens,
                                         int64_t group_ranks) {
  if (group_tokens_per_rank <= 0 || own_tokens <= 0) return 1.0;
  // To the nearest 1 / EP (ranks' worth of tokens), so a run meets few shares
  // and their shapes repeat in the cache; at most 1: a rank with fewer tokens
  // than the group's mean does not set the step (every rank waits for the
  // experts alike, and its own attention is the lighter).
  const double ep = static_cast<double>(std::max<int64_t>(group_ranks, 1));
  const double share = static_cast<double>(group_tokens_per_rank) / static_cast<double>(own_tokens);
  return std::clamp(std::round(share * ep) / ep, 1.0 / ep, 1.0);
}

StepTimeCache::DecodeStep StepTimeCache::decode_step(int64_t batch, int64_t context) {
  const int64_t grid_context = round_up_to_grid(context);
  const auto key = std::make_pair(batch, grid_context);
  {
    const std::shared_lock<std::shared_mutex> look(*lock_);
    if (const auto it = decode_choice_.find(key); it != decode_choice_.end()) return it->second;
  }
  const DraftChoice choice = best_draft_count(model_.spec, decode_template_.include_draft, [&](int64_t k) {
    return compute(Phase::kDecode, batch, 0, grid_context, k).us;
  });
  const StepCost step = compute(Phase::kDecode, batch, 0, grid_context, choice.drafts);
  const DecodeStep best{step.us,   step.communication_us, choice.tokens_per_sequence, choice.drafts,
                        step.band, step.micro_batches};
  const std::lock_guard<std::shared_mutex> hold(*lock_);
  return decode_choice_.emplace(key, best).first->second;
}

StepTimeCache::DecodeStep StepTimeCache::decode_in_group(const DecodeStep& plain, int64_t batch,
                                                         int64_t context, int64_t group_tokens_per_rank,
                                                         bool beside_prompts) {
  const double share = expert_token_share(group_tokens_per_rank, batch * (1 + plain.drafts),
                                          decode_template_.ranks_in_ep_group());
  if (share == 1.0 && !beside_prompts) return plain;
  return with_drafts_of(plain, compute(Phase::kDecode, batch, 0, round_up_to_grid(context), plain.drafts, 0,
                                       share, beside_prompts));
}

StepTimeCache::DecodeStep StepTimeCache::mixed_step(int64_t batch, int64_t context, int64_t prompts,
                                                    int64_t prompt_new_tokens, int64_t prompt_context,
                                                    int64_t prompts_continuing,
                                                    int64_t group_tokens_per_rank) {
  const DecodeStep plain = decode_step(batch, context);
  StepShape shape = decode_template_;
  shape.batch = batch;
  shape.context = std::min(round_up_to_grid(context), model_.spec.max_context);
  shape = verifying(shape, plain.drafts);
  const int64_t grid_prompt_context = std::min(round_up_to_grid(prompt_context), model_.spec.max_context);
  shape.mixed_prefill = {prompts, std::min(round_up_to_grid(prompt_new_tokens), grid_prompt_context),
                         grid_prompt_context, prompts_continuing};
  shape.expert_token_share =
      expert_token_share(group_tokens_per_rank, batch * (1 + plain.drafts) + prompts * prompt_new_tokens,
                         decode_template_.ranks_in_ep_group());
  return with_drafts_of(plain, mixed_cost(key_of(shape), shape));
}

StepTimeCache::StepCost StepTimeCache::mixed_cost(const ShapeKey& key, const StepShape& shape) {
  {
    const std::shared_lock<std::shared_mutex> look(*lock_);
    if (const auto it = mixed_.find(key); it != mixed_.end()) return it->second;
  }
  const StepCost step = cost_of(shape, decode_overlap_optional_);
  const std::lock_guard<std::shared_mutex> hold(*lock_);
  return mixed_.emplace(key, step).first->second;
}

std::size_t StepTimeCache::size() const {
  const std::shared_lock<std::shared_mutex> look(*lock_);
  return cache_.size() + mixed_.size();
}

}  // namespace v41sim
