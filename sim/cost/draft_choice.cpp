#include "sim/cost/draft_choice.h"

#include <fmt/format.h>

namespace v41sim {

std::string draft_acceptance_phrase(const ModelSpec& model) {
  if (!model.draft) return "no draft";
  const SourcedValue& p = model.draft->acceptance;
  if (!p.known()) return "per-position acceptance unknown (" + p.provenance().label() + ")";
  return fmt::format("per-position acceptance {:g} ({})", p.value(), p.provenance().label());
}

DraftChoice draft_count(const ModelSpec& model, int64_t drafts) {
  if (drafts <= 0 || !model.draft || !model.draft->acceptance.known()) return {};
  return {drafts, expected_tokens_per_step(model.draft->acceptance.value(), drafts)};
}

DraftChoice best_draft_count(const ModelSpec& model, bool speculative,
                             const std::function<double(int64_t drafts)>& step_us) {
  DraftChoice best;
  if (!speculative || !model.draft || !model.draft->acceptance.known()) return best;
  double best_rate = 1.0 / step_us(0);  // tokens per us a sequence
  for (int64_t k = 1; k <= model.draft->block_size; ++k) {
    const DraftChoice candidate = draft_count(model, k);
    const double rate = candidate.tokens_per_sequence / step_us(k);
    if (rate > best_rate) {
      best = candidate;
      best_rate = rate;
    }
  }
  return best;
}

StepShape verifying(StepShape decode, int64_t drafts) {
  decode.decode_tokens_per_sequence = 1 + drafts;
  decode.include_draft = drafts > 0;
  return decode;
}

SpeculativeStep as_served(const ModelAnalysis& model, const StepShape& shape, const KernelCostModel& cost) {
  if (shape.phase != Phase::kDecode) return {{}, shape};
  StepShape plain = shape;
  plain.mixed_prefill = {};
  plain.beside_prompts = false;
  plain.expert_token_share = 1.0;
  const DraftChoice choice = best_draft_count(model.spec, shape.include_draft, [&](int64_t k) {
    return time_step(build_step_graph(model, verifying(plain, k)), cost, TimingDetail::kTracks).total_us;
  });
  return {choice, verifying(shape, choice.drafts)};
}

}  // namespace v41sim
