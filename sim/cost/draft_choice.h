// DraftChoice: how many draft tokens a speculative decode step verifies.
//
// A decode step with speculative decoding runs the backbone on each
// sequence's own token and the k drafts proposed the step before (1 + k
// positions), then the draft stages propose the next ones. Each draft is
// accepted with the model's per-position acceptance p given the ones before
// it, so a sequence emits (1 - p^(k+1)) / (1 - p) tokens a step on average.
// More drafts make the step longer and the expected run of accepted ones
// longer: the count that gives the most expected tokens per second is the
// one DSpark's scheduler picks from the engine's throughput curve. The
// serving runs (StepTimeCache::decode_step) and a standalone step (`step`,
// the report's step tables, the H20 claim) choose it here alike.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "sim/cost/step_cost.h"
#include "sim/graph/step_graph.h"
#include "sim/model/draft_yield.h"
#include "sim/model/model_analysis.h"

namespace v41sim {

struct DraftChoice {
  int64_t drafts = 0;              // draft tokens each sequence's step verifies
  double tokens_per_sequence = 1;  // expected tokens a sequence emits a step
};

// Of 0 to the draft's block size, the count whose step (`step_us(k)`) gives
// the most expected tokens per second, the fewer on a tie; 0 where the model
// has no draft, or no known acceptance, or `speculative` is off.
DraftChoice best_draft_count(const ModelSpec& model, bool speculative,
                             const std::function<double(int64_t drafts)>& step_us);

// "per-position acceptance 0.8 (assumed: ...)": what every draft figure
// rests on, with its provenance; "no draft" for a model without one.
std::string draft_acceptance_phrase(const ModelSpec& model);

// `drafts` given (not chosen): the tokens a sequence can expect from them.
DraftChoice draft_count(const ModelSpec& model, int64_t drafts);

// A decode shape verifying `drafts` drafts a sequence: the backbone's
// positions and the draft stages (run where any draft is verified).
StepShape verifying(StepShape decode, int64_t drafts);

// A standalone decode step as a serving run would take it: `shape`'s batch
// and context verifying the draft count it would choose (on the plain
// decode shape: no prompt chunks, every rank alike), timed on `cost`. A
// prefill shape has none to verify: itself.
struct SpeculativeStep {
  DraftChoice choice;
  StepShape shape;  // `shape` verifying choice.drafts
};
SpeculativeStep as_served(const ModelAnalysis& model, const StepShape& shape, const KernelCostModel& cost);

}  // namespace v41sim
