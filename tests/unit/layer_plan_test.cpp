#include "sim/model/layer_plan.h"

#include <gtest/gtest.h>

#include <map>

#include "tests/test_data.h"

namespace v41sim {
namespace {

using testing::analyze;

std::map<std::string, int> count_modes(const LayerPlan& plan) {
  std::map<std::string, int> counts;
  for (const LayerPlanEntry& e : plan) ++counts[e.mode];
  return counts;
}

TEST(LayerPlan, V41FlashModesFollowTheSourceLists) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  ASSERT_EQ(m.plan.size(), 40u);
  for (int64_t layer : {0, 1}) EXPECT_EQ(m.plan[layer].role, LayerRole::kWindowOnly) << layer;
  for (int64_t layer : {2, 8, 14, 20}) EXPECT_EQ(m.plan[layer].mode, "Full") << layer;
  for (int64_t layer : {24, 28, 32, 36}) EXPECT_EQ(m.plan[layer].mode, "Reindex") << layer;
  EXPECT_EQ(count_modes(m.plan),
            (std::map<std::string, int>{{"SWA-only", 2}, {"Full", 4}, {"Reindex", 4}, {"Reuse", 30}}));
}

TEST(LayerPlan, V41FlashSourcesOfEachLayer) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  EXPECT_EQ(m.plan[7].kv_source, 2);
  EXPECT_EQ(m.plan[7].topk_source, 2);
  EXPECT_EQ(m.plan[13].kv_source, 8);
  // Every decoder layer reads layer 20's KV.
  for (int64_t layer = 20; layer < 40; ++layer) EXPECT_EQ(m.plan[layer].kv_source, 20) << layer;
  // Reindex layers score layer 20's index keys with their own query, in the pool.
  EXPECT_EQ(m.plan[28].index_key_source, 20);
  EXPECT_TRUE(m.plan[28].selects_topk());
  EXPECT_TRUE(m.plan[28].scores_in_candidate_pool);
  EXPECT_TRUE(m.plan[20].builds_candidate_pool);
  // A Reuse layer takes the latest selection of its group.
  EXPECT_EQ(m.plan[31].topk_source, 28);
  EXPECT_EQ(m.plan[23].topk_source, 20);
  EXPECT_FALSE(m.plan[31].selects_topk());
}

TEST(LayerPlan, V4FlashAlternatesCsaAndHca) {
  const ModelAnalysis m = analyze("deepseek_v4_flash");
  EXPECT_EQ(count_modes(m.plan), (std::map<std::string, int>{{"SWA", 2}, {"CSA", 21}, {"HCA", 20}}));
  EXPECT_EQ(m.plan[2].mode, "CSA");
  EXPECT_EQ(m.plan[3].mode, "HCA");
  EXPECT_TRUE(m.plan[3].owns_kv());
  EXPECT_FALSE(m.plan[3].owns_index_keys());
}

TEST(LayerPlan, V4ProHasNoWindowOnlyLayer) {
  const ModelAnalysis m = analyze("deepseek_v4_pro");
  EXPECT_EQ(count_modes(m.plan), (std::map<std::string, int>{{"CSA", 30}, {"HCA", 31}}));
}

TEST(LayerPlan, OlderFamiliesOwnEverything) {
  EXPECT_EQ(count_modes(analyze("deepseek_v3").plan), (std::map<std::string, int>{{"MLA", 61}}));
  EXPECT_EQ(count_modes(analyze("deepseek_v3_2").plan), (std::map<std::string, int>{{"DSA", 61}}));
  EXPECT_EQ(count_modes(analyze("llama_3_1_405b").plan), (std::map<std::string, int>{{"GQA", 126}}));
}

TEST(LayerPlan, MovingAKvSourceMovesTheGroups) {
  ModelSpec spec = load_model_file(testing::model_path("deepseek_v4_1_flash"));
  spec.attention.kv_source_layer_ids = std::vector<int64_t>{2, 10, 14, 20};
  spec.attention.index_source_layer_ids = std::vector<int64_t>{2, 10, 14, 20, 24, 28, 32, 36};
  const LayerPlan plan = derive_layer_plan(spec);
  EXPECT_EQ(plan[8].mode, "Reuse");
  EXPECT_EQ(plan[8].kv_source, 2);
  EXPECT_EQ(plan[10].mode, "Full");
}

TEST(LayerPlan, RejectsAKvSourceWithAnotherRatio) {
  ModelSpec spec = load_model_file(testing::model_path("deepseek_v4_1_flash"));
  spec.attention.kv_source_layer_ids = std::vector<int64_t>{2, 8, 14};  // decoder would read layer 14
  try {
    derive_layer_plan(spec);
    FAIL() << "expected LayerPlanError";
  } catch (const LayerPlanError& e) {
    EXPECT_EQ(e.field(), "kv_source_layer_ids");
    EXPECT_NE(std::string(e.what()).find("ratios must match"), std::string::npos);
  }
}

}  // namespace
}  // namespace v41sim
