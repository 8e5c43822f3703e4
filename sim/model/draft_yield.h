// DraftYield: what a speculative decode step yields under the model's
// per-position acceptance, and the acceptance a measured yield implies.
//
// Each draft is accepted with probability p given the ones before it, so a
// step verifying d drafts emits 1 + p + ... + p^d = (1 - p^(d+1)) / (1 - p)
// tokens a sequence on average: the accepted run and the verifier's own
// token. Engines publish that mean as their "acceptance length" (vLLM and
// SGLang count it as 1 + accepted drafts a verify step); a model file may give
// it instead of p, which is then derived here.
#pragma once

#include <cstdint>

namespace v41sim {

// Expected tokens a sequence emits from a step verifying `drafts` drafts at
// per-position acceptance `acceptance` (0 <= p < 1).
double expected_tokens_per_step(double acceptance, int64_t drafts);

// The per-position acceptance p in (0, 1) whose step of `drafts` drafts (>= 1)
// yields `mean_tokens` (in (1, drafts + 1)) on average: the one root, found by
// bisection (the yield grows with p), to the last double.
double acceptance_for_mean_tokens(double mean_tokens, int64_t drafts);

}  // namespace v41sim
