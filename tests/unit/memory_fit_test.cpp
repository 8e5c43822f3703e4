#include "sim/capacity/memory_fit.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/hw/gpu_profile_loader.h"
#include "tests/test_data.h"

namespace v41sim {
namespace {

using testing::analyze;
using testing::gpu_path;

FitRequest request(const ModelAnalysis& m, int64_t gpus, int64_t ep, int64_t context) {
  return {gpus, ep, context, m.spec.weights, DensePlacement::kReplicated, default_reserve_fraction()};
}

TEST(MemoryFit, ArithmeticAddsUp) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  const GpuProfile h200 = load_gpu_profile_file(gpu_path("h200"));
  const FitResult f = fit_memory(m, h200, request(m, 8, 8, 1 << 20));
  EXPECT_DOUBLE_EQ(f.hbm_bytes_per_gpu, 141e9);
  EXPECT_DOUBLE_EQ(f.routed_expert_bytes_per_gpu, m.weights.routed_experts / 8);
  EXPECT_GT(m.weights.mhc, 0);  // mHC's projections, replicated with the dense weights
  EXPECT_DOUBLE_EQ(f.dense_bytes_per_gpu, m.weights.dense + m.weights.mhc);
  // The draft's experts spread over EP 8; the rest of its stages on every GPU.
  EXPECT_DOUBLE_EQ(f.draft_bytes_per_gpu, m.weights.draft_experts / 8 + m.weights.draft_other);
  EXPECT_DOUBLE_EQ(f.weight_bytes_per_gpu, f.routed_expert_bytes_per_gpu + f.dense_bytes_per_gpu +
                                               f.embedding_bytes_per_gpu + f.draft_bytes_per_gpu);
  EXPECT_DOUBLE_EQ(f.reserve_bytes_per_gpu, 0.10 * 141e9);
  EXPECT_NEAR(f.kv_bytes_per_gpu + f.weight_bytes_per_gpu + f.reserve_bytes_per_gpu, 141e9, 1.0);
  EXPECT_EQ(f.sessions_per_gpu, static_cast<int64_t>(std::floor(f.kv_bytes_per_gpu / f.session_bytes)));
  EXPECT_EQ(f.sessions, 8 * f.sessions_per_gpu);
  EXPECT_EQ(f.kv_tokens_per_gpu, static_cast<int64_t>(std::floor(f.kv_bytes_per_gpu / 890.0)));
}

TEST(MemoryFit, ShardingDenseWeightsSplitsThemOverAllGpus) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  const GpuProfile h100 = load_gpu_profile_file(gpu_path("h100_sxm"));
  FitRequest r = request(m, 16, 8, 131072);
  r.dense_placement = DensePlacement::kSharded;
  const FitResult f = fit_memory(m, h100, r);
  EXPECT_DOUBLE_EQ(f.dense_bytes_per_gpu, (m.weights.dense + m.weights.mhc) / 16);
  EXPECT_DOUBLE_EQ(f.routed_expert_bytes_per_gpu, m.weights.routed_experts / 8);
}

TEST(MemoryFit, ShardedAttentionSplitsASessionOverAllGpus) {
  const ModelAnalysis m = analyze("llama_3_1_405b");
  const GpuProfile h200 = load_gpu_profile_file(gpu_path("h200"));
  FitRequest r = request(m, 8, 1, 131072);
  r.dense_placement = DensePlacement::kSharded;
  const FitResult f = fit_memory(m, h200, r);
  EXPECT_GT(f.session_bytes, f.kv_bytes_per_gpu);  // one session is larger than a GPU's KV share
  EXPECT_EQ(f.sessions, static_cast<int64_t>(std::floor(8 * f.kv_bytes_per_gpu / f.session_bytes)));
  EXPECT_GT(f.sessions, 0);
}

// Tensor-parallel attention splits a session's KV by KV head, at most one
// way a head: MQA's single latent (V4.1) is held whole by every GPU, so the
// group holds what one GPU does (DeepSeek's reason for data-parallel
// attention); Llama's 8 heads split 8 ways over 8 or 16 GPUs.
TEST(MemoryFit, ShardedAttentionSplitsKvNoFurtherThanItsHeads) {
  const GpuProfile h200 = load_gpu_profile_file(gpu_path("h200"));
  const ModelAnalysis v41 = analyze("deepseek_v4_1_flash");
  FitRequest r = request(v41, 8, 8, 131072);
  r.dense_placement = DensePlacement::kSharded;
  const FitResult whole = fit_memory(v41, h200, r);
  EXPECT_EQ(whole.kv_split_ways, 1);
  EXPECT_EQ(whole.sessions, static_cast<int64_t>(std::floor(whole.kv_bytes_per_gpu / whole.session_bytes)));
  EXPECT_EQ(whole.kv_tokens_per_gpu, static_cast<int64_t>(std::floor(whole.kv_bytes_per_gpu / 890.0)));
  const ModelAnalysis llama = analyze("llama_3_1_405b");
  for (const int64_t gpus : {8, 16}) {
    FitRequest tp = request(llama, gpus, 1, 131072);
    tp.dense_placement = DensePlacement::kSharded;
    const FitResult f = fit_memory(llama, h200, tp);
    EXPECT_EQ(f.kv_split_ways, 8) << gpus;
    EXPECT_EQ(f.sessions, static_cast<int64_t>(std::floor(8 * f.kv_bytes_per_gpu / f.session_bytes))) << gpus;
  }
}

TEST(MemoryFit, MoreContextMeansFewerSessions) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  const GpuProfile h20 = load_gpu_profile_file(gpu_path("h20"));
  const FitResult short_ctx = fit_memory(m, h20, request(m, 8, 8, 131072));
  const FitResult long_ctx = fit_memory(m, h20, request(m, 8, 8, 1 << 20));
  EXPECT_GT(short_ctx.sessions, long_ctx.sessions);
  EXPECT_EQ(short_ctx.kv_tokens_per_gpu, long_ctx.kv_tokens_per_gpu);
}

// The same request with each other index-key format the model file defines:
// the fit of the model with those keys (wider, so fewer sessions); none for a
// model that defines no other.
TEST(MemoryFit, SessionsWithOtherIndexKeysAreTheFitsWithThoseKeys) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  const GpuProfile h200 = load_gpu_profile_file(gpu_path("h200"));
  const FitRequest r = request(m, 8, 8, 1 << 20);
  const auto keyed = sessions_with_other_index_keys(m, h200, r);
  ASSERT_EQ(keyed.size(), 1u);
  EXPECT_EQ(keyed[0].format, "index_key_fp8");
  EXPECT_EQ(keyed[0].sessions,
            fit_memory(analyze_with_index_keys(m.spec, "index_key_fp8"), h200, r).sessions);
  EXPECT_LT(keyed[0].sessions, fit_memory(m, h200, r).sessions);
  const ModelAnalysis v3 = analyze("deepseek_v3");
  EXPECT_TRUE(sessions_with_other_index_keys(v3, h200, request(v3, 8, 8, 4096)).empty());
}

TEST(MemoryFit, EpThatDoesNotDivideExpertsIsAnError) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  const GpuProfile h200 = load_gpu_profile_file(gpu_path("h200"));
  try {
    fit_memory(m, h200, request(m, 7, 7, 1 << 20));  // 384 % 7 != 0
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "--ep");
    EXPECT_NE(std::string(e.what()).find("384 routed experts"), std::string::npos);
  }
  EXPECT_THROW(fit_memory(m, h200, request(m, 12, 8, 1 << 20)), InputError);  // 12 % 8
  EXPECT_THROW(fit_memory(m, h200, request(m, 8, 8, 0)), InputError);
}

TEST(MemoryFit, ModelThatDoesNotFitIsAnError) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  const GpuProfile h100 = load_gpu_profile_file(gpu_path("h100_sxm"));
  try {
    fit_memory(m, h100, request(m, 2, 2, 1 << 20));  // ~145 GB of experts per GPU
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit"), std::string::npos);
  }
}

TEST(MemoryFit, UnknownGpuFigureCannotBeUsedSilently) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  GpuProfile h20 = load_gpu_profile_file(gpu_path("h20"));
  EXPECT_FALSE(h20.price_usd_per_gpu_hour.known());
  EXPECT_THROW(h20.price_usd_per_gpu_hour.value(), InputError);
}

}  // namespace
}  // namespace v41sim
