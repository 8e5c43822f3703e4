// frontier: decode batch by batch, read off the serving simulation's step
// times, and the Pareto points over several deployments.
#include "sim/costing/decode_frontier.h"

#include <gtest/gtest.h>

#include "sim/common/input_error.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/costing/deployment_plan.h"
#include "sim/report/frontier_view.h"
#include "sim/serving/pool_setup.h"
#include "tests/test_data.h"

namespace v41sim {
namespace {

DeploymentSpec deployment(const std::string& stem) {
  return load_deployment_file(std::string(V41SIM_SOURCE_DIR) + "/workloads/deployments/" + stem + ".yaml");
}

TEST(DecodeFrontier, BatchesDoubleUpToWhatMemoryHolds) {
  const Catalog catalog(V41SIM_SOURCE_DIR);
  const ModelAnalysis model = testing::analyze("deepseek_v4_1_flash");
  const DeploymentSpec d = deployment("h200_agg_8");
  const DecodeFrontier f = decode_frontier(catalog, model, d, 1048576);
  ASSERT_GE(f.points.size(), 2u);
  EXPECT_EQ(f.points.front().rate.batch_per_gpu, 1);
  EXPECT_EQ(f.points.back().rate.batch_per_gpu, f.sessions_per_gpu);
  // Each point is the serving simulation's decode step at that batch.
  const GpuCostModel prefill(catalog.data_dir(), catalog.resolve_gpu(d.prefill.gpu), false);
  const GpuCostModel decode(catalog.data_dir(), catalog.resolve_gpu(d.decode.gpu), true);
  StepTimeCache steps = deployment_step_times(model, prefill.cost(), decode.cost(), d);
  for (std::size_t i = 0; i < f.points.size(); ++i) {
    const DecodeRate& r = f.points[i].rate;
    if (i + 1 < f.points.size()) {
      EXPECT_EQ(r.batch_per_gpu, int64_t{1} << i);
    }
    const StepTimeCache::DecodeStep step = steps.decode_step(r.batch_per_gpu, 1048576);
    EXPECT_NEAR(r.tokens_per_s_per_gpu,
                static_cast<double>(r.batch_per_gpu) * step.tokens_per_sequence / step.us * 1e6, 1e-6);
    EXPECT_NEAR(r.tpot_ms * r.tokens_per_s_per_user, 1e3, 1e-9);
  }
  // Larger batches: users slower, GPUs busier.
  EXPECT_LT(f.points.back().rate.tokens_per_s_per_user, f.points.front().rate.tokens_per_s_per_user);
  EXPECT_GT(f.points.back().rate.tokens_per_s_per_gpu, f.points.front().rate.tokens_per_s_per_gpu);
}

// The sweep runs to KV-full whatever the deployment's engine is set to run:
// the table says so where its batches pass that limit, and only there.
TEST(DecodeFrontier, BatchesAboveTheDeploymentsLimitAreSaidToBe) {
  const Catalog catalog(V41SIM_SOURCE_DIR);
  const ModelAnalysis model = testing::analyze("deepseek_v4_1_flash");
  DeploymentSpec d = deployment("h200_agg_8");
  const std::string said = "batches above the deployment's own limit (64 per GPU, its max_batch_per_gpu)";
  ASSERT_EQ(d.decode.max_batch_per_gpu, 64);
  const DecodeFrontier f = decode_frontier(catalog, model, d, 1048576);
  ASSERT_GT(f.sessions_per_gpu, 64);
  EXPECT_NE(frontier_table("m", {f}).to_markdown().find(said), std::string::npos);
  d.decode.max_batch_per_gpu = f.sessions_per_gpu;  // no point above it
  EXPECT_EQ(
      frontier_table("m", {decode_frontier(catalog, model, d, 1048576)}).to_markdown().find("own limit"),
      std::string::npos);
}

// Each GPU at the deployment's EP; a GPU whose NVLink domain is larger (an
// NVL72 rack) also as one EP group over the domain, with as few replicas as
// deal V4.1's 384 experts over 72 ranks and no fewer than the deployment's.
TEST(DecodeFrontier, LayoutsSpanAWholeNvlinkDomainWhereOneIsLarger) {
  const Catalog catalog(V41SIM_SOURCE_DIR);
  const ModelAnalysis model = testing::analyze("deepseek_v4_1_flash");
  const DeploymentSpec base = deployment("h200_agg_8");  // EP 8, 32 replicas
  const std::vector<DeploymentSpec> layouts =
      frontier_layouts(catalog, model.spec, base, {"h200", "gb200_nvl72"});
  ASSERT_EQ(layouts.size(), 3u);
  EXPECT_EQ(layouts[0].decode.gpu, "h200");
  EXPECT_EQ(layouts[1].decode.gpu, "gb200_nvl72");
  EXPECT_EQ(layouts[1].decode.ep, 8);
  EXPECT_EQ(layouts[2].decode.gpu, "gb200_nvl72");
  EXPECT_EQ(layouts[2].decode.ep, 72);
  EXPECT_EQ(layouts[2].decode.redundant_experts, 48);  // 432 slots, 6 a rank
  EXPECT_EQ(layouts[2].prefill.ep, 72);
  EXPECT_EQ(decode_frontier(catalog, model, layouts[2], 131072).deployment.decode.ep, 72);
  // None named: the deployment's own GPU, whose domain is its EP group.
  EXPECT_EQ(frontier_layouts(catalog, model.spec, base, {}).size(), 1u);
}

TEST(DecodeFrontier, ParetoPointsAreNotBeatenOnSpeedAndCost) {
  const Catalog catalog(V41SIM_SOURCE_DIR);
  const ModelAnalysis model = testing::analyze("deepseek_v4_1_flash");
  std::vector<DecodeFrontier> frontiers;
  for (const DeploymentSpec& d :
       plan_variants(deployment("h200_agg_8"), {.gpus = {"h200", "h100_sxm", "b200"}}))
    frontiers.push_back(decode_frontier(catalog, model, d, 131072));
  mark_pareto(frontiers);
  int pareto = 0;
  for (const DecodeFrontier& f : frontiers) {
    for (const FrontierPoint& p : f.points) {
      ASSERT_TRUE(p.cost_known);
      bool beaten = false;
      for (const DecodeFrontier& g : frontiers) {
        for (const FrontierPoint& q : g.points) {
          beaten = beaten || (q.rate.tokens_per_s_per_user >= p.rate.tokens_per_s_per_user &&
                              q.usd_per_million_output <= p.usd_per_million_output &&
                              (q.rate.tokens_per_s_per_user > p.rate.tokens_per_s_per_user ||
                               q.usd_per_million_output < p.usd_per_million_output));
        }
      }
      EXPECT_EQ(p.pareto, !beaten) << f.deployment.name << " batch " << p.rate.batch_per_gpu;
      pareto += p.pareto ? 1 : 0;
    }
  }
  EXPECT_GT(pareto, 0);
  const std::string json = frontier_json("m", frontiers).dump();
  EXPECT_NE(json.find("\"pareto\":true"), std::string::npos);
}

TEST(DecodeFrontier, AContextOutsideTheModelOrMemoryIsRefused) {
  const Catalog catalog(V41SIM_SOURCE_DIR);
  const ModelAnalysis model = testing::analyze("deepseek_v4_1_flash");
  for (const int64_t context : {int64_t{0}, int64_t{4} << 20}) {
    try {
      decode_frontier(catalog, model, deployment("h200_agg_8"), context);
      ADD_FAILURE() << context;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().field, "--context");
    }
  }
}

}  // namespace
}  // namespace v41sim
