// DecodeRate: what one decode rank delivers at a batch and context, read off
// the serving simulation's step-time cache: the step, the time per output
// token a user sees (TPOT; speculative decoding emits several tokens a step)
// and the tokens each GPU emits per second (a tensor-parallel rank's over its
// GPUs). The context sweep and the decode frontier both read decode this way;
// their batches are a decode rank's (a GPU's, data-parallel).
#pragma once

#include <cstdint>

#include "sim/cost/error_band.h"
#include "sim/serving/step_time_cache.h"

namespace v41sim {

// What a decode batch above the deployment's own max_batch_per_gpu is, where
// a sweep goes past it (the context sweep with its limit lifted, the frontier).
inline constexpr const char* kAboveEngineBatchLimit =
    "what the GPU allows, not what its engine is set to run";

struct DecodeRate {
  int64_t batch_per_gpu = 0;  // the decode rank's batch (a GPU's, data-parallel)
  double step_us = 0;
  double tpot_ms = 0;
  double tokens_per_s_per_user = 0;
  double tokens_per_s_per_gpu = 0;
  int64_t drafts = 0;  // draft tokens verified per sequence and step
  ErrorBand band;
};

// `gpus_per_rank`: the GPUs a decode rank spans (its pool's attention_tp).
DecodeRate decode_rate(StepTimeCache& steps, int64_t batch_per_gpu, int64_t context, int64_t gpus_per_rank);

}  // namespace v41sim
