#include <gtest/gtest.h>

#include "tests/test_data.h"

namespace v41sim {
namespace {

using testing::analyze;

// Published totals (shared/reference/deepseek-architecture.md §3, §4); the
// code derives them from element formats, scale groups and the layer plan.
TEST(KvLayout, GlobalBytesPerTokenMatchPublishedDerivations) {
  EXPECT_DOUBLE_EQ(analyze("deepseek_v4_1_flash").kv.global_bytes_per_token, 890.0);
  EXPECT_DOUBLE_EQ(analyze("deepseek_v4_flash").kv.global_bytes_per_token, 3514.25);
  EXPECT_NEAR(analyze("deepseek_v4_pro").kv.global_bytes_per_token, 5031.4, 0.05);
  EXPECT_DOUBLE_EQ(analyze("deepseek_v3_2").kv.global_bytes_per_token, 48068.0);
  EXPECT_DOUBLE_EQ(analyze("deepseek_v3").kv.global_bytes_per_token, 70272.0);
  EXPECT_DOUBLE_EQ(analyze("llama_3_1_405b").kv.global_bytes_per_token, 516096.0);
}

TEST(KvLayout, EntrySizesComeFromTheFormats) {
  const ModelAnalysis v41 = analyze("deepseek_v4_1_flash");
  EXPECT_EQ(v41.spec.cache("main_kv_mxfp4").bytes, 288);
  EXPECT_EQ(v41.spec.cache("index_key_mxfp4").bytes, 68);
  EXPECT_EQ(v41.spec.cache("window_kv_fp8").bytes, 528);
  EXPECT_EQ(v41.spec.cache("engram_row_fp8").bytes, 264);
  // V4's 448 FP8 + 7 e8m0 + 64 BF16 = 583, padded to 8 = 584.
  EXPECT_EQ(analyze("deepseek_v4_flash").spec.cache("main_kv_fp8").bytes, 584);
  EXPECT_EQ(analyze("deepseek_v3_2").spec.cache("mla_fp8_sparse").bytes, 656);
}

// A model file may define its index keys in more than the one format it
// stores them in (V4's FP8 key, which engines without an FP4 indexer store):
// those are the others, and only index-key formats count among them.
TEST(KvLayout, OtherIndexKeyFormatsAreTheIndexKeyFormatsNotStored) {
  ModelAnalysis v41 = analyze("deepseek_v4_1_flash");
  EXPECT_EQ(other_index_key_formats(v41.spec), std::vector<std::string>{"index_key_fp8"});
  EXPECT_EQ(v41.spec.cache("index_key_fp8").bytes, 132);
  EXPECT_FALSE(v41.spec.cache("index_key_fp8").source.empty());
  v41.spec.attention.indexer->key_cache = "index_key_fp8";
  EXPECT_EQ(other_index_key_formats(v41.spec), std::vector<std::string>{"index_key_mxfp4"});
  EXPECT_TRUE(other_index_key_formats(analyze("deepseek_v3_2").spec).empty());  // its one key format
  EXPECT_TRUE(other_index_key_formats(analyze("deepseek_v3").spec).empty());    // no indexer
}

TEST(KvLayout, WindowStateIsBoundedPerRequest) {
  const ModelAnalysis v41 = analyze("deepseek_v4_1_flash");
  EXPECT_EQ(v41.kv.window_state_bytes, 40 * 128 * 528);
  EXPECT_EQ(analyze("deepseek_v4_flash").kv.window_state_bytes, 43 * 128 * 584);
  EXPECT_EQ(analyze("deepseek_v3").kv.window_state_bytes, 0);
  // Below the window the state shrinks with the context; above it, it does not grow.
  EXPECT_LT(v41.kv.session_bytes(64) - 64 * 890.0, v41.kv.session_bytes(4096) - 4096 * 890.0);
  EXPECT_DOUBLE_EQ(v41.kv.session_bytes(8192) - 8192 * 890.0, v41.kv.session_bytes(4096) - 4096 * 890.0);
}

TEST(KvLayout, V4CompressorStateMatchesAiconfiguratorEstimate) {
  // 21 C4 layers x (32 KB KV + 8 KB indexer) + 20 C128 layers x 512 KB.
  EXPECT_EQ(analyze("deepseek_v4_flash").kv.compressor_state_bytes, 21 * (32768 + 8192) + 20 * 524288);
}

TEST(KvLayout, ReuseAndReindexLayersStoreNoGlobalKv) {
  const ModelAnalysis v41 = analyze("deepseek_v4_1_flash");
  for (const LayerKv& layer : v41.kv.layers) {
    if (layer.mode == "Reuse" || layer.mode == "Reindex") {
      EXPECT_EQ(layer.global_bytes_per_token, 0.0);
    }
  }
  EXPECT_DOUBLE_EQ(v41.kv.layers[20].global_bytes_per_token, 356.0);
  EXPECT_DOUBLE_EQ(v41.kv.layers[8].global_bytes_per_token, 178.0);
}

}  // namespace
}  // namespace v41sim
