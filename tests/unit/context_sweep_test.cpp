// context: one deployment's sessions from 8K to 1M tokens, checked against
// the pieces it reads (the memory fit, the serving simulation's step times).
#include "sim/costing/context_sweep.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sim/common/input_error.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/report/context_view.h"
#include "sim/serving/pool_setup.h"
#include "tests/test_data.h"

namespace v41sim {
namespace {

DeploymentSpec deployment(const std::string& stem) {
  return load_deployment_file(std::string(V41SIM_SOURCE_DIR) + "/workloads/deployments/" + stem + ".yaml");
}

struct Sweep {
  Catalog catalog{V41SIM_SOURCE_DIR};
  ModelAnalysis model = testing::analyze("deepseek_v4_1_flash");
};

TEST(ContextSweep, SessionsAreTheDecodeGpusKvRoomOverOneSession) {
  Sweep s;
  const DeploymentSpec d = deployment("h200_agg_8");
  const ContextSweep sweep = sweep_contexts(s.catalog, s.model, d, {{8192, 131072, 1048576}, 2000, 60, 0});
  const GpuCostModel gpu(s.catalog.data_dir(), s.catalog.resolve_gpu(d.decode.gpu), true);
  const double room = kv_bytes_per_gpu(s.model, d, d.decode, gpu.gpu());
  ASSERT_EQ(sweep.points.size(), 3u);
  for (const ContextPoint& p : sweep.points) {
    EXPECT_DOUBLE_EQ(p.session_bytes, s.model.kv.session_bytes(p.context));
    EXPECT_LE(static_cast<double>(p.sessions_per_gpu) * p.session_bytes, room);
    EXPECT_GT(static_cast<double>(p.sessions_per_gpu + 1) * p.session_bytes, room);
  }
  // Longer sessions: fewer of them, a later first token, a dearer prompt.
  for (std::size_t i = 1; i < sweep.points.size(); ++i) {
    EXPECT_LT(sweep.points[i].sessions_per_gpu, sweep.points[i - 1].sessions_per_gpu);
    EXPECT_GT(sweep.points[i].lone_ttft_ms, sweep.points[i - 1].lone_ttft_ms);
    EXPECT_GT(sweep.points[i].prefill_gpu_s, sweep.points[i - 1].prefill_gpu_s);
  }
}

// A prompt over the chunk budget: alone, its experts take its tokens only,
// so its first token comes sooner than its GPU-seconds in a busy deployment,
// where every rank runs prompts of its own; those are its chunks' steps.
TEST(ContextSweep, AChunkedPromptIsPricedAsEveryRankRunsOne) {
  Sweep s;
  const DeploymentSpec d = deployment("h200_agg_8");
  const int64_t budget = d.prefill.max_tokens_per_step;
  const int64_t prompt = 3 * budget;
  const ContextSweep sweep = sweep_contexts(s.catalog, s.model, d, {{prompt + 100}, 100, 60, 0});
  const GpuCostModel prefill(s.catalog.data_dir(), s.catalog.resolve_gpu(d.prefill.gpu), false);
  const GpuCostModel decode(s.catalog.data_dir(), s.catalog.resolve_gpu(d.decode.gpu), true);
  StepTimeCache steps = deployment_step_times(s.model, prefill.cost(), decode.cost(), d);
  const ContextPoint& p = sweep.points.at(0);
  ASSERT_FALSE(p.lone_context_parallel);
  double us = 0;
  for (int64_t chunk = 1; chunk <= 3; ++chunk)
    us += steps.prefill_step(1, budget, chunk * budget, chunk < 3).us;
  EXPECT_NEAR(p.prefill_gpu_s, us / 1e6, 1e-9);
  EXPECT_LT(p.lone_ttft_ms / 1e3, p.prefill_gpu_s);
}

TEST(ContextSweep, ALonePromptUnderTheChunkBudgetTakesOnePrefillStep) {
  Sweep s;
  const DeploymentSpec d = deployment("h200_agg_8");
  const int64_t output = 100;
  const int64_t prompt = d.prefill.max_tokens_per_step / 2;
  const ContextSweep sweep = sweep_contexts(s.catalog, s.model, d, {{prompt + output}, output, 60, 0});
  const GpuCostModel prefill(s.catalog.data_dir(), s.catalog.resolve_gpu(d.prefill.gpu), false);
  const GpuCostModel decode(s.catalog.data_dir(), s.catalog.resolve_gpu(d.decode.gpu), true);
  StepTimeCache steps = deployment_step_times(s.model, prefill.cost(), decode.cost(), d);
  const ContextPoint& p = sweep.points.at(0);
  // Aggregated, nothing cached, nothing queued: the first token is the step,
  // whose experts see the prompt's tokens alone, spread over the EP group.
  const int64_t ranks = d.decode.gpus_per_instance;
  EXPECT_NEAR(p.lone_ttft_ms, steps.prefill_step(1, prompt, prompt, 0, (prompt + ranks - 1) / ranks).us / 1e3,
              1e-3);
  EXPECT_FALSE(p.lone_context_parallel);
  // Two such prompts fill a rank's budget; each pays half the step.
  EXPECT_NEAR(p.prefill_gpu_s, steps.prefill_step(2, prompt, prompt).us / 2e6, 1e-9);
}

TEST(ContextSweep, TheDecodeBatchIsTheLargestWithinTpot) {
  Sweep s;
  const DeploymentSpec d = deployment("h200_agg_8");
  const double tpot_limit = 12;
  const ContextSweep sweep = sweep_contexts(s.catalog, s.model, d, {{131072}, 2000, tpot_limit, 0});
  const ContextPoint& p = sweep.points.at(0);
  ASSERT_EQ(p.bound, ContextPoint::Bound::kTpot) << p.batch_per_gpu;
  const GpuCostModel prefill(s.catalog.data_dir(), s.catalog.resolve_gpu(d.prefill.gpu), false);
  const GpuCostModel decode(s.catalog.data_dir(), s.catalog.resolve_gpu(d.decode.gpu), true);
  StepTimeCache steps = deployment_step_times(s.model, prefill.cost(), decode.cost(), d);
  const auto tpot = [&](int64_t batch) {
    const StepTimeCache::DecodeStep step = steps.decode_step(batch, 131072);
    return step.us / 1e3 / step.tokens_per_sequence;
  };
  EXPECT_LE(tpot(p.batch_per_gpu), tpot_limit);
  EXPECT_GT(tpot(p.batch_per_gpu + 1), tpot_limit);
  EXPECT_DOUBLE_EQ(p.tpot_ms, tpot(p.batch_per_gpu));
  EXPECT_LT(p.batch_per_gpu, p.sessions_per_gpu);
  // The decode rate and its price follow from that step.
  const StepTimeCache::DecodeStep step = steps.decode_step(p.batch_per_gpu, 131072);
  EXPECT_NEAR(p.output_tokens_per_s_per_gpu,
              static_cast<double>(p.batch_per_gpu) * step.tokens_per_sequence / step.us * 1e6, 1e-6);
  const double usd_per_s = decode.gpu().price_usd_per_gpu_hour.value() / 3600;
  ASSERT_TRUE(p.cost_known);
  // Keeping the session's global KV (131072 tokens) for the 72-h retention at $5 per TB-month of 730 h.
  const double tier_usd = 131072 * s.model.kv.global_bytes_per_token / 1e12 * 5 / 730 * 72;
  EXPECT_NEAR(p.usd_per_million_output_ssd_tier, tier_usd / 2000 * 1e6, 1e-9);
  EXPECT_NEAR(p.usd_per_million_output_decode_only,
              usd_per_s / p.output_tokens_per_s_per_gpu * 1e6 + p.usd_per_million_output_ssd_tier, 1e-9);
  EXPECT_NEAR(p.usd_per_million_output_with_prompt - p.usd_per_million_output_decode_only,
              usd_per_s * p.prefill_gpu_s / 2000 * 1e6, 1e-9);
  // Keeping the session pays where more than the tier's $ over the prompt's prefill $ come back.
  EXPECT_NEAR(p.tier_pays_at_return_share, tier_usd / (usd_per_s * p.prefill_gpu_s), 1e-12);
  EXPECT_GT(p.tier_pays_at_return_share, 0);
  EXPECT_LT(p.tier_pays_at_return_share, 1);  // V4.1's 890 B/token: a small share suffices
}

TEST(ContextSweep, MemoryAndTheBatchLimitCapTheBatch) {
  Sweep s;
  const DeploymentSpec d = deployment("h200_agg_8");
  // A TPOT limit nothing reaches: memory decides, or the batch limit below it.
  const ContextSweep by_memory = sweep_contexts(s.catalog, s.model, d, {{1048576}, 2000, 1e6, 0});
  const ContextPoint& m = by_memory.points.at(0);
  EXPECT_EQ(m.bound, ContextPoint::Bound::kMemory);
  EXPECT_EQ(m.batch_per_gpu, m.sessions_per_gpu);
  const ContextSweep by_limit = sweep_contexts(s.catalog, s.model, d, {{1048576}, 2000, 1e6, 16});
  EXPECT_EQ(by_limit.points.at(0).bound, ContextPoint::Bound::kBatchLimit);
  EXPECT_EQ(by_limit.points.at(0).batch_per_gpu, 16);
  // The table says which limit held; lifting the deployment's own is said so,
  // so the batch does not read as what its engine is set to run.
  const auto batch_note = [&](const ContextSweep& sweep) {
    const std::string text = context_table("m", sweep).to_markdown();
    const std::size_t at = text.find("decode batch:");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  ASSERT_GT(d.decode.max_batch_per_gpu, 0);
  EXPECT_NE(batch_note(by_memory).find(
                fmt::format("the deployment's batch limit of {} per GPU lifted", d.decode.max_batch_per_gpu)),
            std::string::npos)
      << batch_note(by_memory);
  EXPECT_NE(batch_note(by_limit).find("capped by KV memory and a batch limit of 16;"), std::string::npos)
      << batch_note(by_limit);
  // A limit no batch meets is said so, and batch 1 is shown.
  const ContextSweep missed = sweep_contexts(s.catalog, s.model, d, {{1048576}, 2000, 0.01, 0});
  EXPECT_EQ(missed.points.at(0).bound, ContextPoint::Bound::kTpotMissed);
  EXPECT_EQ(missed.points.at(0).batch_per_gpu, 1);
}

TEST(ContextSweep, ContextParallelPrefillShortensTheFirstTokenNotThePromptsGpuTime) {
  Sweep s;
  const ContextSweepOptions options{{1048576}, 2000, 60, 0};
  const ContextPoint plain =
      sweep_contexts(s.catalog, s.model, deployment("h200_pd_64"), options).points.at(0);
  const ContextPoint cp =
      sweep_contexts(s.catalog, s.model, deployment("h200_pd_64_cp"), options).points.at(0);
  EXPECT_FALSE(plain.lone_context_parallel);
  EXPECT_TRUE(cp.lone_context_parallel);
  EXPECT_LT(cp.lone_ttft_ms, plain.lone_ttft_ms / 4);
  EXPECT_GT(cp.prefill_gpu_s, 0.8 * plain.prefill_gpu_s);
}

TEST(ContextSweep, JsonIsTheSameTwice) {
  Sweep s;
  const DeploymentSpec d = deployment("h200_agg_8");
  const ContextSweepOptions options{{8192, 1048576}, 2000, 60, 64};
  const auto once = context_json("m", sweep_contexts(s.catalog, s.model, d, options)).dump();
  EXPECT_EQ(once, context_json("m", sweep_contexts(s.catalog, s.model, d, options)).dump());
  EXPECT_NE(once.find("usd_per_million_output_prompt_included"), std::string::npos);
}

std::string flag_of_error(const ContextSweepOptions& options) {
  Sweep s;
  try {
    sweep_contexts(s.catalog, s.model, deployment("h200_agg_8"), options);
  } catch (const InputError& e) {
    return e.where().field;
  }
  return "";
}

TEST(ContextSweep, SweepsShortestFirstOnce) {
  Sweep s;
  const ContextSweep sweep =
      sweep_contexts(s.catalog, s.model, deployment("h200_agg_8"), {{131072, 8192, 131072}, 2000, 60, 0});
  ASSERT_EQ(sweep.points.size(), 2u);
  EXPECT_EQ(sweep.points[0].context, 8192);
  EXPECT_EQ(sweep.points[1].context, 131072);
  EXPECT_EQ(sweep.options.contexts, (std::vector<int64_t>{8192, 131072}));
}

TEST(ContextSweep, BadOptionsNameTheirFlag) {
  EXPECT_EQ(flag_of_error({{}, 2000, 60, 0}), "--contexts");
  // A context no longer than its output: either flag may be the one to change.
  EXPECT_EQ(flag_of_error({{8192, 2000}, 2000, 60, 0}), "--contexts/--output-tokens");
  EXPECT_EQ(flag_of_error({{8192, 4 * 1048576}, 2000, 60, 0}), "--contexts");  // past max_context
  EXPECT_EQ(flag_of_error({{8192}, 0, 60, 0}), "--output-tokens");
  EXPECT_EQ(flag_of_error({{8192}, 2000, -1, 0}), "--tpot-ms");
  EXPECT_EQ(flag_of_error({{8192}, 2000, 60, -2}), "--max-batch-per-gpu");
}

}  // namespace
}  // namespace v41sim
