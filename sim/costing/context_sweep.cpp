#include "sim/costing/context_sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/common/input_error.h"
#include "sim/costing/decode_rate.h"
#include "sim/costing/deployment_cost_models.h"
#include "sim/costing/serving_cost.h"
#include "sim/serving/pool_setup.h"
#include "sim/serving/serving_simulation.h"

namespace v41sim {
namespace {

void check_options(const ContextSweepOptions& o, const ModelAnalysis& model) {
  if (o.contexts.empty()) throw InputError({"", 0, "--contexts"}, "expected at least one context length");
  if (o.output_tokens <= 0) {
    throw InputError({"", 0, "--output-tokens"},
                     fmt::format("expected a positive number of tokens, got {}", o.output_tokens));
  }
  for (const int64_t context : o.contexts) {
    require_servable_context(model.spec, context, "--contexts");
    if (context <= o.output_tokens) {
      // Either flag may be the one to change (the contexts swept by default start at 8K).
      throw InputError({"", 0, "--contexts/--output-tokens"},
                       fmt::format("a session of {} tokens cannot end {} output tokens after its prompt: "
                                   "expected contexts longer than the output, got {}",
                                   context, o.output_tokens, context));
    }
  }
  if (!(o.tpot_ms > 0 && std::isfinite(o.tpot_ms))) {
    throw InputError({"", 0, "--tpot-ms"}, fmt::format("expected a positive latency, got {}", o.tpot_ms));
  }
  if (o.max_batch_per_gpu < 0) {
    throw InputError(
        {"", 0, "--max-batch-per-gpu"},
        fmt::format("expected a positive batch (or 0: memory alone), got {}", o.max_batch_per_gpu));
  }
}

// One session alone: its prompt arrives at time 0 on an idle deployment.
void serve_alone(const ModelAnalysis& model, const GpuCostModel& prefill, const GpuCostModel& decode,
                 const DeploymentSpec& deployment, int64_t prompt, int64_t output, ContextPoint& p) {
  WorkloadSpec one;
  one.name = "one session alone";
  one.arrival = WorkloadSpec::Arrival::kTrace;
  one.trace = {{0.0, 0, prompt, output, {}, 0}};
  ServingSimulation simulation(model, prefill.cost(), decode.cost(), deployment, one, 1);
  const ServingResult r = simulation.run(1.0, true);
  if (r.finished == 0) {
    p.lone_not_served = r.rejected_by_reason.empty() ? "not finished" : r.rejected_by_reason.begin()->first;
    return;
  }
  p.lone_ttft_ms = r.ttft_ms.p50;
  p.lone_context_parallel = r.context_parallel_steps > 0;
  // A context-parallel prompt holds every rank of its instance while it runs.
  if (!p.lone_context_parallel) return;
  p.prefill_gpu_s = r.mean_prefill_ms / 1e3 * static_cast<double>(deployment.prefill.gpus_per_instance);
  p.prefill_band = r.prefill_band;
}

// A prompt over the chunk budget runs its chunks on one rank, the other ranks
// busy with prompts of their own: each chunk's step as every rank runs one
// (alone it would be shorter, its experts taking its tokens alone). A rank
// spans `gpus_per_rank` GPUs, each busy for the whole step.
void price_chunked_prompt(StepTimeCache& steps, int64_t budget, int64_t prompt, int64_t gpus_per_rank,
                          ContextPoint& p) {
  double us = 0;
  ErrorBandMix band;
  for (int64_t done = 0; done < prompt;) {
    const int64_t chunk = std::min(budget, prompt - done);
    done += chunk;
    const StepTimeCache::StepCost step = steps.prefill_step(1, chunk, done, done < prompt ? 1 : 0);
    us += step.us;
    band.add(step.band, step.us);
  }
  p.prefill_gpu_s = us / 1e6 * static_cast<double>(gpus_per_rank);
  p.prefill_band = band.mixed();
}

// A prompt within a rank's chunk budget shares its step with as many such
// prompts as the budget holds: each pays its share of the step.
void price_packed_prompt(StepTimeCache& steps, int64_t budget, int64_t prompt, int64_t gpus_per_rank,
                         ContextPoint& p) {
  const int64_t packed = budget / prompt;
  const StepTimeCache::StepCost step = steps.prefill_step(packed, prompt, prompt);
  p.prefill_gpu_s = step.us / 1e6 / static_cast<double>(packed) * static_cast<double>(gpus_per_rank);
  p.prefill_band = step.band;
}

// The largest batch per decode rank within the TPOT limit, up to `limit`
// (what `limit_bound` names), by bisection (a decode step only grows with its
// batch); a rank spans `gpus_per_rank` GPUs.
void size_decode_batch(StepTimeCache& steps, int64_t limit, ContextPoint::Bound limit_bound,
                       double tpot_limit_ms, int64_t context, int64_t gpus_per_rank, ContextPoint& p) {
  const auto within = [&](int64_t batch) {
    return decode_rate(steps, batch, context, gpus_per_rank).tpot_ms <= tpot_limit_ms;
  };
  int64_t good = 0;
  int64_t bad = limit + 1;
  if (within(limit)) {
    good = limit;
  } else {
    while (bad - good > 1) {
      const int64_t mid = good + (bad - good) / 2;
      (within(mid) ? good : bad) = mid;
    }
  }
  p.bound = good == limit ? limit_bound
            : good == 0   ? ContextPoint::Bound::kTpotMissed
                          : ContextPoint::Bound::kTpot;
  p.batch_per_gpu = std::max<int64_t>(1, good);
  const DecodeRate rate = decode_rate(steps, p.batch_per_gpu, context, gpus_per_rank);
  p.tpot_ms = rate.tpot_ms;
  p.drafts = rate.drafts;
  p.decode_band = rate.band;
  p.output_tokens_per_s_per_gpu = rate.tokens_per_s_per_gpu;
}

// $ per 1M output tokens at the point's decode rate, without and with its
// prompt's prefill spread over its output; both with the session's global KV
// kept in the SSD tier for the retention time.
void price_output(const SourcedValue& prefill_price, const SourcedValue& decode_price,
                  const ModelAnalysis& model, const KvTierSpec& tier, int64_t output_tokens,
                  ContextPoint& p) {
  p.cost_known = prefill_price.known() && decode_price.known();
  if (!p.cost_known) return;
  const double tier_usd =
      ssd_tier_usd_per_hour(model.kv.global_bytes_per_token * static_cast<double>(p.context), tier) *
      tier.retention_s / 3600.0;
  p.usd_per_million_output_ssd_tier = tier_usd / static_cast<double>(output_tokens) * 1e6;
  const double decode_usd_per_token = decode_price.value() / 3600.0 / p.output_tokens_per_s_per_gpu;
  const double prompt_usd = prefill_price.value() / 3600.0 * p.prefill_gpu_s;
  p.usd_per_million_output_decode_only = decode_usd_per_token * 1e6 + p.usd_per_million_output_ssd_tier;
  p.usd_per_million_output_with_prompt =
      (prompt_usd / static_cast<double>(output_tokens) + decode_usd_per_token) * 1e6 +
      p.usd_per_million_output_ssd_tier;
  if (prompt_usd > 0) p.tier_pays_at_return_share = tier_usd / prompt_usd;
}

}  // namespace

const char* bound_name(ContextPoint::Bound bound) {
  switch (bound) {
    case ContextPoint::Bound::kMemory:
      return "KV memory";
    case ContextPoint::Bound::kBatchLimit:
      return "batch limit";
    case ContextPoint::Bound::kTpot:
      return "TPOT";
    case ContextPoint::Bound::kTpotMissed:
      return "TPOT missed at batch 1";
  }
  return "";
}

std::vector<int64_t> swept_contexts(const ModelSpec& model) {
  std::vector<int64_t> out;
  for (const int64_t context : kSweptContexts) {
    if (context <= model.max_context) out.push_back(context);
  }
  if (out.empty() || (out.back() < kSweptContexts.back() && out.back() != model.max_context))
    out.push_back(model.max_context);
  return out;
}

ContextSweep sweep_contexts(const Catalog& catalog, const ModelAnalysis& model,
                            const DeploymentSpec& deployment, const ContextSweepOptions& options) {
  check_options(options, model);
  const DeploymentCostModels gpus(catalog, deployment);
  const GpuCostModel& prefill = gpus.prefill;
  const GpuCostModel& decode = gpus.decode;
  StepTimeCache steps = deployment_step_times(model, prefill.cost(), decode.cost(), deployment);
  const SourcedValue& prefill_price = prefill.gpu().price_usd_per_gpu_hour;
  const SourcedValue& decode_price = decode.gpu().price_usd_per_gpu_hour;

  // A sweep runs from the shortest session to the longest, each once.
  ContextSweepOptions sorted = options;
  std::sort(sorted.contexts.begin(), sorted.contexts.end());
  sorted.contexts.erase(std::unique(sorted.contexts.begin(), sorted.contexts.end()), sorted.contexts.end());
  ContextSweep sweep{deployment,
                     sorted,
                     prefill.cost().params().label(),
                     decode.cost().params().label(),
                     decode_price.provenance().label(),
                     {}};
  if (deployment.disaggregated && deployment.prefill.gpu != deployment.decode.gpu) {
    sweep.price_provenance =
        "prefill " + prefill_price.provenance().label() + "; decode " + sweep.price_provenance;
  }
  for (const int64_t context : sorted.contexts) {
    ContextPoint& p = sweep.points.emplace_back();
    p.context = context;
    p.session_bytes = model.kv.session_bytes(context);
    p.sessions_per_gpu = sessions_per_decode_rank(model, deployment, decode.gpu(), context);
    const int64_t prompt = context - options.output_tokens;
    serve_alone(model, prefill, decode, deployment, prompt, options.output_tokens, p);
    if (p.sessions_per_gpu < 1) continue;  // not one session fits: nothing to decode
    const bool batch_limited =
        options.max_batch_per_gpu > 0 && options.max_batch_per_gpu < p.sessions_per_gpu;
    size_decode_batch(steps, batch_limited ? options.max_batch_per_gpu : p.sessions_per_gpu,
                      batch_limited ? ContextPoint::Bound::kBatchLimit : ContextPoint::Bound::kMemory,
                      options.tpot_ms, context, deployment.decode.attention_tp, p);
    const int64_t budget = deployment.prefill.max_tokens_per_step;
    const int64_t prefill_rank_gpus = deployment.prefill.attention_tp;
    if (!p.lone_context_parallel && prompt <= budget)
      price_packed_prompt(steps, budget, prompt, prefill_rank_gpus, p);
    if (!p.lone_context_parallel && prompt > budget)
      price_chunked_prompt(steps, budget, prompt, prefill_rank_gpus, p);
    price_output(prefill_price, decode_price, model, deployment.kv, options.output_tokens, p);
  }
  return sweep;
}

}  // namespace v41sim
