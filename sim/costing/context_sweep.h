// ContextSweep: what one deployment does with sessions of growing context,
// 8K to 1M tokens: how many fit, how long one prompt alone waits for its
// first token, the largest decode batch within the TPOT target, and what an
// output token costs at that batch, with and without paying for the prompt.
//
// A steady-state reading, not a run: the decode rate is every decode rank at
// the same batch with every session at the point's context (the longest it
// reaches: the step a session ends on), prefill interleaving not counted; the
// prompt's cost is its prefill GPU-seconds with each rank busy with prompts
// of its own (packed up to the chunk budget, as the serving simulation packs
// them); each pool is taken as kept busy. Both prices include keeping the
// session's global KV in the SSD tier for the retention time. The first-token time is the serving
// simulation's own, for one request alone. `run` and `plan` give the same
// deployment under traffic, with queueing.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/catalog.h"
#include "sim/cost/error_band.h"
#include "sim/model/model_analysis.h"
#include "sim/serving/deployment_spec.h"

namespace v41sim {

// The contexts swept unless told (`context`, the report): 8K to 1M tokens.
inline constexpr std::array<int64_t, 5> kSweptContexts{8192, 32768, 131072, 524288, 1048576};
// Of kSweptContexts, those `model` holds, ending at its max_context where it
// holds fewer than the longest (a model of 160K tokens sweeps to 160K).
std::vector<int64_t> swept_contexts(const ModelSpec& model);

struct ContextSweepOptions {
  std::vector<int64_t> contexts;  // tokens per session: prompt + output (swept shortest first, once each)
  int64_t output_tokens = 0;      // of every session
  double tpot_ms = 0;             // the decode batch's limit
  int64_t max_batch_per_gpu = 0;  // the decode batch's other limit (0: memory alone)
};

struct ContextPoint {
  int64_t context = 0;
  double session_bytes = 0;      // global KV at this context + window and compressor state
  int64_t sessions_per_gpu = 0;  // a decode rank's: one GPU's KV room over session_bytes
  // One request alone, from the serving simulation.
  double lone_ttft_ms = 0;
  bool lone_context_parallel = false;  // its prompt ran over every rank of the instance
  std::string lone_not_served;         // why the simulation did not serve it (empty if it did)
  // Decode at the largest batch per GPU that meets both limits and fits.
  enum class Bound { kMemory, kBatchLimit, kTpot, kTpotMissed };
  Bound bound = Bound::kMemory;  // what stops the batch growing; kTpotMissed: batch 1 misses it
  int64_t batch_per_gpu = 0;     // a decode rank's (a GPU's, data-parallel)
  double tpot_ms = 0;
  int64_t drafts = 0;  // draft tokens verified per sequence and step
  double output_tokens_per_s_per_gpu = 0;
  ErrorBand decode_band;
  // The prompt's prefill, ranks busy with prompts of their own.
  double prefill_gpu_s = 0;
  ErrorBand prefill_band;
  // $ per 1M output tokens (known only where every pool's GPU price is).
  bool cost_known = false;
  double usd_per_million_output_decode_only = 0;
  double usd_per_million_output_with_prompt = 0;
  // Of both: keeping the session's global KV in the SSD tier for the
  // deployment's retention time after it ends (0 without a tier or its price).
  double usd_per_million_output_ssd_tier = 0;
  // Keeping pays where at least this share of sessions comes back within the
  // retention: the tier's $ over the prefill $ a return finds cached (the
  // prompt's share of the price). 0 without a tier; above 1: it never pays.
  double tier_pays_at_return_share = 0;
};

struct ContextSweep {
  DeploymentSpec deployment;
  ContextSweepOptions options;
  std::string prefill_kernel_model;  // calibration labels of each pool's GPU
  std::string decode_kernel_model;
  std::string price_provenance;
  std::vector<ContextPoint> points;
};

// Throws InputError naming the flag for no contexts, a context not above the
// output length or beyond the model's max_context, a non-positive output
// length or TPOT limit.
ContextSweep sweep_contexts(const Catalog& catalog, const ModelAnalysis& model,
                            const DeploymentSpec& deployment, const ContextSweepOptions& options);

const char* bound_name(ContextPoint::Bound bound);

}  // namespace v41sim
