#include "sim/costing/decode_rate.h"

namespace v41sim {

DecodeRate decode_rate(StepTimeCache& steps, int64_t batch_per_gpu, int64_t context, int64_t gpus_per_rank) {
  const StepTimeCache::DecodeStep step = steps.decode_step(batch_per_gpu, context);
  DecodeRate r;
  r.batch_per_gpu = batch_per_gpu;
  r.step_us = step.us;
  r.tokens_per_s_per_user = step.tokens_per_sequence / (step.us / 1e6);
  r.tpot_ms = 1e3 / r.tokens_per_s_per_user;
  r.tokens_per_s_per_gpu =
      static_cast<double>(batch_per_gpu) * r.tokens_per_s_per_user / static_cast<double>(gpus_per_rank);
  r.drafts = step.drafts;
  r.band = step.band;
  return r;
}

}  // namespace v41sim
