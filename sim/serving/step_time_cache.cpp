#include "sim/serving/step_time_cache.h"

#include <algorithm>
#include <cmath>

#include "sim/cost/step_cost.h"
#include "sim/graph/step_graph.h"

namespace v41sim {
namespace {

constexpr int64_t kExactBelow = 256;
constexpr double kStepsPerOctave = 16.0;

}  // namespace

int64_t round_up_to_grid(int64_t tokens) {
  if (tokens <= kExactBelow) return std::max<int64_t>(tokens, 1);
  const double index = std::ceil(std::log2(static_cast<double>(tokens)) * kStepsPerOctave - 1e-9);
  return static_cast<int64_t>(std::ceil(std::exp2(index / kStepsPerOctave)));
}

StepTimeCache::StepTimeCache(const ModelAnalysis& model, const KernelCostModel& prefill_cost,
                             const KernelCostModel& decode_cost, int64_t prefill_ep, int64_t decode_ep)
    : model_(model),
      prefill_cost_(prefill_cost),
      decode_cost_(decode_cost),
      prefill_ep_(prefill_ep),
      decode_ep_(decode_ep) {}

double StepTimeCache::compute(Phase phase, int64_t batch, int64_t new_tokens, int64_t context) {
  const auto key = std::make_tuple(static_cast<int>(phase), batch, new_tokens, context);
  if (const auto it = cache_.find(key); it != cache_.end()) return it->second;
  StepShape shape;
  shape.phase = phase;
  shape.batch = batch;
  shape.context = std::min(context, model_.spec.max_context);
  shape.new_tokens = phase == Phase::kPrefill ? std::min(new_tokens, shape.context) : 0;
  shape.ep = phase == Phase::kPrefill ? prefill_ep_ : decode_ep_;
  shape.include_draft = false;  // speculative decoding is not modelled in serving yet
  const KernelCostModel& cost = phase == Phase::kPrefill ? prefill_cost_ : decode_cost_;
  const double us = time_step(build_step_graph(model_, shape), cost).total_us;
  cache_.emplace(key, us);
  return us;
}

double StepTimeCache::prefill_us(int64_t batch, int64_t new_tokens, int64_t context) {
  const int64_t grid_context = round_up_to_grid(context);
  const int64_t grid_new = std::min(round_up_to_grid(new_tokens), grid_context);
  return compute(Phase::kPrefill, batch, grid_new, grid_context);
}

double StepTimeCache::decode_us(int64_t batch, int64_t context) {
  return compute(Phase::kDecode, batch, 0, round_up_to_grid(context));
}

}  // namespace v41sim
