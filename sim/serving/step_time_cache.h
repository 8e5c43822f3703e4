// StepTimeCache: the kernel model's step time for the shapes a serving run
// asks about, memoised. Contexts are rounded up to a geometric grid (1/16 of
// an octave, under 4.5% apart) so the cache stays small over a long run;
// batch sizes are exact.
#pragma once

#include <absl/container/flat_hash_map.h>
#include <absl/container/node_hash_map.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <tuple>

#include "sim/cost/error_band.h"
#include "sim/cost/kernel_cost.h"
#include "sim/cost/step_cost.h"
#include "sim/graph/step_shape.h"
#include "sim/model/model_analysis.h"

namespace v41sim {

// How a served step charges ranks that carry different tokens, for outputs
// that serve steps.
inline constexpr const char* kGroupTokensAssumption =
    "where the EP group's ranks carry different tokens in a step (a prompt's chunk on one, more decode "
    "sequences on another), each rank's attention runs its own and the routed experts the group's mean, to "
    "the nearest 1/EP, and the slowest rank sets the step (assumed, as data-parallel attention's ranks meet "
    "in the experts; sim/serving/step_time_cache.h)";

class StepTimeCache {
 public:
  // The templates carry each pool's EP size, overlap and load imbalance. A
  // pool whose overlap is optional runs each step shape with or without two
  // micro-batches, whichever is faster.
  // `step_overhead_us`: the engine's time outside each forward (DeploymentSpec),
  // added to every step it times (0: the forwards alone).
  StepTimeCache(const ModelAnalysis& model, const KernelCostModel& prefill_cost,
                const KernelCostModel& decode_cost, StepShape prefill_template, StepShape decode_template,
                bool prefill_overlap_optional = false, bool decode_overlap_optional = false,
                double step_overhead_us = 0);

  // A step's length as the engine runs it (its forward, then the engine's
  // step overhead) and how much of it is EP communication left on the
  // critical path (all of it without overlap; what compute cannot hide with it).
  struct StepCost {
    double us = 0;
    double communication_us = 0;
    ErrorBand band;             // the kernel model's 90% band for this step
    int64_t micro_batches = 1;  // 2: run as two overlapped micro-batches
  };
  // One rank's prefill step: `batch` sequences each computing `new_tokens` on top of a
  // cached prefix, ending at `context`; `continuing` of them have chunks to come
  // (StepShape::continuing). `group_tokens_per_rank`: the tokens the EP
  // group's ranks run in the step, on average, where they differ from this
  // rank's (StepShape::expert_token_share); 0: every rank runs this shape.
  StepCost prefill_step(int64_t batch, int64_t new_tokens, int64_t context, int64_t continuing = 0,
                        int64_t group_tokens_per_rank = 0);
  // One rank's decode step: `batch` sequences with `context` tokens of history on
  // average. With speculative decoding on (the decode template's include_draft)
  // the number of draft tokens verified per step is the one that gives the most
  // expected tokens per second, as DSpark's scheduler picks it from the
  // engine's throughput curve.
  struct DecodeStep {
    double us = 0;
    double communication_us = 0;
    double tokens_per_sequence = 1;  // expected tokens each sequence emits
    int64_t drafts = 0;              // draft tokens verified per sequence
    ErrorBand band;
    int64_t micro_batches = 1;
  };
  DecodeStep decode_step(int64_t batch, int64_t context);
  // The same rank's step (`plain`, its decode_step) where the EP group's ranks
  // send `group_tokens_per_rank` on average (prefill_step's): its experts take
  // the group's tokens, and its sequences verify the drafts their plain step
  // would, as a mixed step's do. `beside_prompts`: run beside another rank's
  // prompt step (StepShape::beside_prompts: launched, its EP transfers in
  // normal mode). Callers that looked the plain step up pass it, so a serving
  // run's hot path looks each rank's step up once.
  DecodeStep decode_in_group(const DecodeStep& plain, int64_t batch, int64_t context,
                             int64_t group_tokens_per_rank, bool beside_prompts = false);
  // One rank's decode step that also computes `prompts` prompt chunks of
  // `prompt_new_tokens` each, ending at `prompt_context`, `prompts_continuing`
  // of them not the last of their prompt (an aggregated engine that mixes them in). The decode sequences
  // verify as many drafts as their plain step would. Timed as launched kernels: engines replay CUDA graphs
  // for decode-only batches only; split as the decode pool says.
  // `group_tokens_per_rank` as prefill_step's: the experts take the group's tokens.
  DecodeStep mixed_step(int64_t batch, int64_t context, int64_t prompts, int64_t prompt_new_tokens,
                        int64_t prompt_context, int64_t prompts_continuing = 0,
                        int64_t group_tokens_per_rank = 0);
  std::size_t size() const;  // step shapes costed

 private:
  // The experts' token share of a step (StepShape::expert_token_share) for a
  // rank of `own_tokens` in an EP group of `group_ranks` sending
  // `group_tokens_per_rank` on average; 1 where that is not given.
  static double expert_token_share(int64_t group_tokens_per_rank, int64_t own_tokens, int64_t group_ranks);
  StepCost compute(Phase phase, int64_t batch, int64_t new_tokens, int64_t context, int64_t drafts = 0,
                   int64_t continuing = 0, double expert_token_share = 1.0, bool beside_prompts = false);
  // A shape as one batch, or as two overlapped micro-batches where its pool
  // always splits, or where splitting is optional and faster; the engine's
  // step overhead after it.
  StepCost cost_of(StepShape shape, bool overlap_optional);
  StepCost forward_cost_of(StepShape shape, bool overlap_optional);
  // A step shape run as one batch (no overlap): its cost and its layers'
  // tracks, from which a two-micro-batch step of it is laid out.
  struct OneBatch {
    StepCost cost;
    std::vector<LayerTracks> tracks;
    double transfer_sm_share = 0;
  };
  const OneBatch& one_batch(const StepShape& shape);  // kept for the run
  OneBatch time_one_batch(const StepShape& shape) const;

  const ModelAnalysis& model_;
  const KernelCostModel& prefill_cost_;
  const KernelCostModel& decode_cost_;
  StepShape prefill_template_;
  StepShape decode_template_;
  bool prefill_overlap_optional_;
  bool decode_overlap_optional_;
  double step_overhead_us_;
  // phase, batch, new tokens, context, continuing prompts, tokens per decode
  // sequence, the prompt chunks of a mixed step (batch, new tokens, context,
  // continuing), the experts' token share (a multiple of 1 / EP, exact as a double), and
  // whether a decode step runs beside prompts
  using ShapeKey = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                              int64_t, double, bool>;
  static ShapeKey key_of(const StepShape& shape);
  // Hash tables (a serving run looks a step up for every rank of every step):
  // never iterated, so their seeded order cannot reach an output. One-batch
  // entries are handed out by reference, so their table keeps them in place.
  absl::flat_hash_map<ShapeKey, StepCost> cache_;
  absl::node_hash_map<ShapeKey, OneBatch> one_batch_;
  absl::flat_hash_map<ShapeKey, StepCost> mixed_;
  StepCost mixed_cost(const ShapeKey& key, const StepShape& shape);
  // Runs of one deployment may share the cache from several threads (the
  // rates of `capacity`): the lock covers lookups and inserts, not costing; a
  // shape costed twice at once gets the same figures and the first insert
  // stays, so sharing never changes a result. Entries never change once in.
  std::unique_ptr<std::shared_mutex> lock_ = std::make_unique<std::shared_mutex>();
  absl::flat_hash_map<std::pair<int64_t, int64_t>, DecodeStep> decode_choice_;
};

// Smallest grid point >= tokens (exact below 256).
int64_t round_up_to_grid(int64_t tokens);

}  // namespace v41sim
