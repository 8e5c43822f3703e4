#include <gtest/gtest.h>

#include <cmath>

#include "tests/test_data.h"

namespace v41sim {
namespace {

using testing::analyze;

double relative_error(double derived, double published) { return std::fabs(derived - published) / published; }

// Totals within 2% of the published figures, for every model that publishes one.
TEST(ParamCount, TotalsWithinTwoPercentOfPublished) {
  for (const char* stem :
       {"deepseek_v4_1_flash", "deepseek_v4_flash", "deepseek_v4_pro", "deepseek_v3", "llama_3_1_405b"}) {
    const ModelAnalysis m = analyze(stem);
    const double published = m.spec.published.at("total_params");
    EXPECT_LT(relative_error(static_cast<double>(m.params.backbone_total()), published), 0.02) << stem;
  }
}

// Active counts are published rounded to whole billions (V4.1: "8B / 16B").
TEST(ParamCount, ActiveCountsRoundToPublished) {
  const ModelAnalysis v41 = analyze("deepseek_v4_1_flash");
  EXPECT_EQ(std::round(v41.active.prefill_per_token / 1e9), 8.0);
  EXPECT_EQ(std::round(v41.active.decode_per_token / 1e9), 16.0);
  EXPECT_EQ(std::round(analyze("deepseek_v4_flash").active.decode_per_token / 1e9), 13.0);
  EXPECT_EQ(std::round(analyze("deepseek_v4_pro").active.decode_per_token / 1e9), 49.0);
  EXPECT_EQ(std::round(analyze("deepseek_v3").active.decode_per_token / 1e9), 37.0);
}

TEST(ParamCount, CedHalvesPrefillWork) {
  const ModelAnalysis v41 = analyze("deepseek_v4_1_flash");
  const double ratio = v41.active.decode_per_token / v41.active.prefill_per_token;
  EXPECT_GT(ratio, 1.9);
  EXPECT_LT(ratio, 2.2);
  EXPECT_EQ(v41.active.prefill_tail_tokens, 140);
  // Without CED, prefill and decode differ only by the output head.
  const ModelAnalysis v4 = analyze("deepseek_v4_flash");
  EXPECT_DOUBLE_EQ(v4.active.decode_per_token - v4.active.prefill_per_token,
                   static_cast<double>(v4.params.lm_head));
}

TEST(ParamCount, ExpertShapesAndBytes) {
  const ModelAnalysis v41 = analyze("deepseek_v4_1_flash");
  EXPECT_EQ(v41.params.layers[0].routed_expert_each, 3 * 5120 * 2304);
  // 15,360 FP4 experts of ~18.8 MB = ~289 GB (reference §2).
  EXPECT_NEAR(v41.weights.routed_experts / 1e9, 289.0, 1.0);
  EXPECT_NEAR(v41.weights.routed_experts / (40 * 384) / 1e6, 18.8, 0.05);
  // Engram: ~197B parameters held in host memory, 264 B per row.
  EXPECT_NEAR(static_cast<double>(v41.params.engram) / 1e9, 197.0, 1.0);
  EXPECT_DOUBLE_EQ(v41.weights.host, (384006168.0 + 384016682.0) * 264.0);
}

TEST(ParamCount, OnlyReindexAndFullLayersCarryIndexerQueries) {
  const ModelAnalysis v41 = analyze("deepseek_v4_1_flash");
  EXPECT_GT(v41.params.layers[24].index_query, 0);
  EXPECT_EQ(v41.params.layers[24].index_key, 0);
  EXPECT_EQ(v41.params.layers[24].compressor, 0);
  EXPECT_GT(v41.params.layers[20].index_key, 0);
  EXPECT_EQ(v41.params.layers[25].index_query, 0);
}

// The dense weights' label names what the model has: Llama's MLPs are
// dense, V3's first three layers too, V4.1 has none and routes every layer;
// mHC's projections are named where they are placed with them.
TEST(ParamCount, DenseWeightsLabelNamesTheModelsParts) {
  EXPECT_EQ(dense_weights_label(analyze("llama_3_1_405b").spec, true), "attention, dense MLPs");
  EXPECT_EQ(dense_weights_label(analyze("deepseek_v3").spec, true),
            "attention, dense MLPs, shared experts, routers");
  EXPECT_EQ(dense_weights_label(analyze("deepseek_v4_1_flash").spec, false),
            "attention, shared experts, routers");
  EXPECT_EQ(dense_weights_label(analyze("deepseek_v4_1_flash").spec, true),
            "attention, mHC mixing, shared experts, routers");
}

// mHC's two sites a layer each project the flattened streams (4 x 5120 in
// V4.1) to (2 + 4) x 4 mixing logits, stored in FP32 as the checkpoint does;
// V3 has no mHC. Every token reads them, so they count as active.
TEST(ParamCount, MhcProjectionsAreCountedInTheirOwnFormat) {
  const ModelAnalysis v41 = analyze("deepseek_v4_1_flash");
  const int64_t per_layer = 2 * 24 * 4 * v41.spec.hidden_size;
  EXPECT_EQ(v41.params.layers[0].mhc, per_layer);
  EXPECT_EQ(v41.params.mhc_total(), per_layer * v41.spec.num_layers);
  EXPECT_DOUBLE_EQ(v41.weights.mhc, 4.0 * static_cast<double>(v41.params.mhc_total()));
  EXPECT_EQ(analyze("deepseek_v3").params.mhc_total(), 0);
  EXPECT_EQ(analyze("deepseek_v3").weights.mhc, 0.0);
}

// V4.1's DSpark draft: three stages, each a window-only attention block and
// 128 routed experts of the backbone's width (no shared expert), as the step
// graph builds them; counted beside the backbone, not in it. Its experts take
// the routed experts' format, the rest the dense weights'.
TEST(ParamCount, TheDraftStagesAreCountedBesideTheBackbone) {
  const ModelAnalysis v41 = analyze("deepseek_v4_1_flash");
  const ParamCounts& p = v41.params;
  ASSERT_EQ(p.draft_stages, 3);
  const int64_t h = v41.spec.hidden_size;
  const int64_t each = 3 * h * v41.spec.moe->expert_intermediate;
  EXPECT_EQ(p.draft_stage.routed_experts, 128 * each);
  EXPECT_EQ(p.draft_stage.router, 128 * h);
  EXPECT_EQ(p.draft_stage.shared_experts, 0);
  EXPECT_EQ(p.draft_stage.compressor, 0);  // window-only: no compressed KV
  EXPECT_EQ(p.draft_total(), 3 * p.draft_stage.total());
  EXPECT_DOUBLE_EQ(v41.weights.draft_experts, 3.0 * static_cast<double>(p.draft_stage.routed_experts) *
                                                  v41.spec.weights.routed_experts.bytes_per_value());
  EXPECT_GT(v41.weights.draft_other, 0);
  const double without_draft =
      v41.weights.routed_experts + v41.weights.dense + v41.weights.mhc + v41.weights.embedding;
  EXPECT_DOUBLE_EQ(v41.weights.gpu_total(),
                   without_draft + v41.weights.draft_experts + v41.weights.draft_other);
  // No draft block, nothing counted.
  const ModelAnalysis v3 = analyze("deepseek_v3");
  EXPECT_EQ(v3.params.draft_total(), 0);
  EXPECT_EQ(v3.weights.draft_experts + v3.weights.draft_other, 0.0);
}

}  // namespace
}  // namespace v41sim
