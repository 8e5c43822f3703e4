#include "sim/report/ssd_tier_view.h"

#include <gtest/gtest.h>

#include "tests/test_data.h"

namespace v41sim {
namespace {

TEST(SsdTierByModel, EachModelKeepsTheSameTokensAtItsOwnBytesPerToken) {
  const std::vector<ModelAnalysis> models{testing::analyze("deepseek_v4_1_flash"),
                                          testing::analyze("deepseek_v4_flash")};
  DeploymentSpec deployment;
  deployment.kv.retention_s = 7200;
  deployment.kv.ssd_usd_per_tb_month = SourcedValue::assumed(10, "test");
  ServedRun run;
  run.cost.known = true;
  run.cost.ssd_tier.sessions_per_s = 0.5;
  run.cost.ssd_tier.last_context_tokens = 100000;
  run.cost.ssd_tier.retention_s = 7200;
  run.cost.ssd_tier.hold_s = 7200;  // no session came back sooner
  run.cost.gpu_usd_per_hour = 20;
  run.cost.usd_per_hour = 20;  // the tier's own $ is left at 0 here
  const std::vector<SsdTierOfModel> rows = ssd_tier_by_model(models, run, deployment);
  ASSERT_EQ(rows.size(), 2u);
  // 0.5 sessions/s x 100,000 tokens x 890 B x 7200 s = 320.4 GB, at $10 per TB-month of 730 h.
  EXPECT_DOUBLE_EQ(rows[0].bytes, 0.5 * 100000 * 890 * 7200);
  EXPECT_DOUBLE_EQ(rows[0].usd_per_hour, rows[0].bytes / 1e12 * 10 / 730);
  EXPECT_DOUBLE_EQ(rows[0].of_gpu_cost, rows[0].usd_per_hour / 20);
  EXPECT_DOUBLE_EQ(rows[1].bytes / rows[0].bytes, 3514.25 / 890);
  // Sessions that come back sooner cut their earlier context's hold: the tier holds less.
  run.cost.ssd_tier.hold_s = 5400;
  EXPECT_DOUBLE_EQ(ssd_tier_by_model(models, run, deployment)[0].bytes, rows[0].bytes * 0.75);
  run.cost.ssd_tier.hold_s = 7200;
  // Without a tier price: bytes still, no dollars.
  deployment.kv.ssd_usd_per_tb_month = SourcedValue(std::nullopt, {ProvenanceKind::kUnknown, "no quote"});
  const std::vector<SsdTierOfModel> unpriced = ssd_tier_by_model(models, run, deployment);
  EXPECT_DOUBLE_EQ(unpriced[1].bytes, rows[1].bytes);
  EXPECT_EQ(unpriced[1].usd_per_hour, 0);
  EXPECT_EQ(unpriced[1].of_gpu_cost, 0);
}

}  // namespace
}  // namespace v41sim
