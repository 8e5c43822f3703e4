// What the kernels an engine may lack (two in the indexer, W4A8 experts, mHC's one pass) cost
// a V4.1 decode step: the table times the step under each choice, each with
// the drafts it would choose, and the assumed kernels are never slower a token;
// and the step with the index keys in the file's other format (FP8).
#include "sim/report/engine_choices_view.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sim/cost/draft_choice.h"
#include "tests/step_test_support.h"

namespace v41sim {
namespace {

TEST(EngineChoices, TheAssumedKernelsAreTheFastestAToken) {
  const ModelAnalysis v41 = testing::analyze("deepseek_v4_1_flash");
  const testing::GpuUnderTest h200("h200");
  StepShape decode = testing::shape(Phase::kDecode, 32, 0);
  nlohmann::json json;
  const Table table =
      engine_choices_table(v41, h200.cost, decode, {8192, 1048576}, 131072, h200.model.gpu().name, json);
  ASSERT_EQ(json.at("rows").size(), 16u);  // 7 choices and the FP8 index keys x 2 contexts
  std::map<std::string, double> at_1m;
  for (const nlohmann::json& r : json.at("rows")) {
    EXPECT_GT(r.at("step_us").get<double>(), 0.0);
    if (r.at("choice") != "index_keys_index_key_fp8") {  // a kernel lacking is never faster
      EXPECT_GE(r.at("change_pct").get<double>(), -1e-9) << r.dump();
    }
    if (r.at("context") == 1048576) at_1m[r.at("choice")] = r.at("us_per_output_token").get<double>();
  }
  ASSERT_EQ(at_1m.size(), 8u);
  // At 1M tokens each missing kernel costs a visible share, both indexer
  // kernels more, all three the most.
  EXPECT_GT(at_1m["index_keys_per_query"], 1.05 * at_1m["assumed"]);
  EXPECT_GT(at_1m["reindex_every_position"], 1.05 * at_1m["assumed"]);
  EXPECT_GT(at_1m["experts_bf16"], 1.05 * at_1m["assumed"]);
  EXPECT_GT(at_1m["both"], at_1m["index_keys_per_query"]);
  EXPECT_GT(at_1m["both"], at_1m["reindex_every_position"]);
  EXPECT_GT(at_1m["all_three"], at_1m["both"]);
  EXPECT_GT(at_1m["all_three"], at_1m["experts_bf16"]);
  // V4's three mHC kernels move the streams about twice as often as V4.1's pass.
  EXPECT_GT(at_1m["mhc_three_kernel"], 1.01 * at_1m["assumed"]);
  // The FP8 index keys Hopper engines store (the model file's other key format): the step of the
  // model with those keys (about twice the FP4 ones' bytes read, none widened on H200's CUDA cores;
  // at 1M tokens the two nearly cancel, the FP8 keys 1% ahead on 7 December 2026's priors).
  StepShape at_1m_shape = decode;
  at_1m_shape.context = 1048576;
  const ModelAnalysis fp8_keys = analyze_with_index_keys(v41.spec, "index_key_fp8");
  const SpeculativeStep served = as_served(fp8_keys, at_1m_shape, h200.cost);
  EXPECT_NEAR(at_1m["index_keys_index_key_fp8"],
              time_step(build_step_graph(fp8_keys, served.shape), h200.cost).total_us /
                  served.choice.tokens_per_sequence,
              1e-9 * at_1m["assumed"]);
  EXPECT_NE(at_1m["index_keys_index_key_fp8"], at_1m["assumed"]);
  // A 128K prompt's prefill: W4A16 widens its weights in every tile of
  // Marlin's, so it costs prefill more than decode's token; the indexer's
  // draft-key choice does nothing there (no drafts).
  std::map<std::string, double> prefill;
  for (const nlohmann::json& r : json.at("prefill_rows"))
    prefill[r.at("choice")] = r.at("step_us").get<double>();
  ASSERT_EQ(prefill.size(), 8u);
  EXPECT_GT(prefill["mhc_three_kernel"], prefill["assumed"]);
  EXPECT_DOUBLE_EQ(prefill["index_keys_per_query"], prefill["assumed"]);
  EXPECT_GT(prefill["experts_bf16"] / prefill["assumed"], at_1m["experts_bf16"] / at_1m["assumed"]);
  EXPECT_GE(prefill["all_three"], prefill["experts_bf16"]);
  const std::string md = table.to_markdown();
  EXPECT_NE(md.find("prefill, one 131072-token prompt"), std::string::npos);
  EXPECT_NE(md.find("--reindex-scores-every-position"), std::string::npos);
  EXPECT_NE(md.find("--experts-bf16"), std::string::npos);
  EXPECT_NE(md.find("1048576 tokens"), std::string::npos);
  EXPECT_NE(md.find("| index keys stored as index_key_fp8 (132 B a key, where the model's are 68 B"),
            std::string::npos);
}

}  // namespace
}  // namespace v41sim
