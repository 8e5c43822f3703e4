// plan: the variants of a deployment, each served on the same traffic and
// ranked by cost among those that meet the SLA.
#include "sim/costing/deployment_plan.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "sim/common/input_error.h"
#include "sim/report/plan_view.h"
#include "tests/test_data.h"

namespace v41sim {
namespace {

DeploymentSpec deployment(const std::string& stem) {
  return load_deployment_file(std::string(V41SIM_SOURCE_DIR) + "/workloads/deployments/" + stem + ".yaml");
}

std::string flag_of_error(const DeploymentSpec& base, const PlanGrid& grid) {
  try {
    plan_variants(base, grid);
  } catch (const InputError& e) {
    return e.where().field;
  }
  return "";
}

TEST(DeploymentPlan, VariantsAreTheGridsCrossProduct) {
  const DeploymentSpec base = deployment("h200_pd_64");
  const PlanGrid grid{
      .gpus = {"h200", "b200"}, .eps = {8, 16}, .prefill_instances = {1}, .decode_instances = {2, 3}};
  const std::vector<DeploymentSpec> variants = plan_variants(base, grid);
  ASSERT_EQ(variants.size(), 8u);
  // GPU outermost, then EP, prefill and decode instances.
  EXPECT_EQ(variants[0].decode.gpu, "h200");
  EXPECT_EQ(variants[0].decode.instances, 2);
  EXPECT_EQ(variants[1].decode.instances, 3);
  EXPECT_EQ(variants[2].decode.ep, 16);
  EXPECT_EQ(variants[4].decode.gpu, "b200");
  for (const DeploymentSpec& d : variants) {
    EXPECT_EQ(d.prefill.gpu, d.decode.gpu);
    EXPECT_EQ(d.prefill.instances, 1);
    for (const PoolSpec* pool : {&d.prefill, &d.decode}) {
      EXPECT_EQ(pool->gpus_per_instance, pool->ep);  // one EP group per instance
      // The base's redundant experts per rank, kept.
      EXPECT_EQ(pool->redundant_experts * base.decode.ep, base.decode.redundant_experts * pool->ep);
    }
    EXPECT_EQ(d.total_gpus(), (d.prefill.instances + d.decode.instances) * d.decode.ep);
    EXPECT_EQ(d.sla.ttft_ms, base.sla.ttft_ms);
  }
  EXPECT_EQ(variants[7].name, "prefill 1 x 16 b200, decode 3 x 16 b200, EP 16");
}

// An EP size both the model's routed experts and the base's divide keeps
// the base's replicas per rank; one only replicas make possible keeps them as
// many in all, as DeepSeek deploys 32 over EP 144 (V3's 256 experts).
TEST(DeploymentPlan, AnEpSizeOnlyReplicasMakePossibleKeepsTheirCount) {
  const DeploymentSpec base = deployment("h200_pd_64");  // EP 8, 32 redundant experts a group
  ASSERT_EQ(base.decode.ep, 8);
  ASSERT_EQ(base.decode.redundant_experts, 32);
  const std::vector<DeploymentSpec> variants =
      plan_variants(base, PlanGrid{.eps = {16, 72, 144}, .routed_experts = 256});
  ASSERT_EQ(variants.size(), 3u);
  EXPECT_EQ(variants[0].decode.redundant_experts, 64);  // 4 a rank, as the base
  EXPECT_EQ(variants[1].decode.redundant_experts, 32);  // 288 slots over 72
  EXPECT_EQ(variants[2].decode.redundant_experts, 32);  // and over 144
  EXPECT_EQ(variants[2].prefill.redundant_experts, 32);
  EXPECT_EQ(variants[2].decode.ep_at.field, "--ep");  // the flag asked for it
  // The model not known, the replicas are kept per rank, as before.
  EXPECT_EQ(plan_variants(base, PlanGrid{.eps = {144}}).front().decode.redundant_experts, 32 / 8 * 144);
}

// EPLB's replica count is a dimension of its own, after the routing: both
// pools take it, in all per EP group, whatever the EP size; it is named.
TEST(DeploymentPlan, RedundantExpertsVaryBothPools) {
  const DeploymentSpec base = deployment("h200_pd_64");  // EP 8, 32 redundant experts a group
  const std::vector<DeploymentSpec> variants =
      plan_variants(base, {.eps = {8, 72}, .redundant_experts = {0, 48}, .routed_experts = 384});
  ASSERT_EQ(variants.size(), 4u);
  EXPECT_EQ(variants[0].name, "prefill 2 x 8 h200, decode 6 x 8 h200, EP 8, 0 redundant experts");
  EXPECT_EQ(variants[3].name, "prefill 2 x 72 h200, decode 6 x 72 h200, EP 72, 48 redundant experts");
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const int64_t replicas = i % 2 == 0 ? 0 : 48;
    for (const PoolSpec* pool : {&variants[i].prefill, &variants[i].decode}) {
      EXPECT_EQ(pool->redundant_experts, replicas) << variants[i].name;
      EXPECT_EQ(pool->redundant_experts_at.field, "--redundant-experts");
    }
  }
  EXPECT_EQ(plan_variants(deployment("h200_agg_8"), {.redundant_experts = {1}})[0].name,
            "1 x 8 h200, aggregated, EP 8, 1 redundant expert");
  EXPECT_EQ(flag_of_error(base, {.redundant_experts = {-1}}), "--redundant-experts");
}

// `--ep domain`: each GPU also as one EP group over its NVLink domain, with
// the fewest replicas, no fewer than the base's, that deal the experts over
// it; a GPU whose domain is an EP size already tried adds nothing.
TEST(DeploymentPlan, AnEpGroupOverEachGpusNvlinkDomain) {
  const DeploymentSpec base = deployment("h200_agg_8");  // EP 8, 32 redundant experts
  const PlanGrid grid{.gpus = {"h200", "gb200_nvl72"},
                      .eps = {8},
                      .routed_experts = 384,
                      .domain_eps = {{"h200", 8}, {"gb200_nvl72", 72}}};
  const std::vector<DeploymentSpec> variants = plan_variants(base, grid);
  ASSERT_EQ(variants.size(), 3u);
  EXPECT_EQ(variants[0].name, "1 x 8 h200, aggregated, EP 8, 32 redundant experts");
  EXPECT_EQ(variants[1].name, "1 x 8 gb200_nvl72, aggregated, EP 8, 32 redundant experts");
  EXPECT_EQ(variants[2].name, "1 x 72 gb200_nvl72, aggregated, EP 72, 48 redundant experts");
  for (const PoolSpec* pool : {&variants[2].prefill, &variants[2].decode}) {
    EXPECT_EQ(pool->ep, 72);
    EXPECT_EQ(pool->redundant_experts, 48);
    EXPECT_EQ((384 + pool->redundant_experts) % pool->ep, 0);
  }
  // Domain alone: the grid's sizes are not the base's.
  PlanGrid alone = grid;
  alone.eps.clear();
  const std::vector<DeploymentSpec> domain_only = plan_variants(base, alone);
  ASSERT_EQ(domain_only.size(), 2u);
  EXPECT_EQ(domain_only[0].decode.ep, 8);
  EXPECT_EQ(domain_only[1].decode.ep, 72);
  // Replicas the grid sets override the domain's.
  PlanGrid set = grid;
  set.redundant_experts = {120};
  for (const DeploymentSpec& d : plan_variants(base, set))
    EXPECT_EQ(d.decode.redundant_experts, 120) << d.name;
}

// The fewest replicas, from a floor, that deal the experts evenly over EP ranks.
TEST(DeploymentPlan, ReplicasToDealFillTheLastRank) {
  EXPECT_EQ(replicas_to_deal(384, 72, 0), 48);
  EXPECT_EQ(replicas_to_deal(384, 72, 32), 48);
  EXPECT_EQ(replicas_to_deal(384, 72, 49), 120);
  EXPECT_EQ(replicas_to_deal(384, 8, 32), 32);
  EXPECT_EQ(replicas_to_deal(256, 144, 32), 32);  // DeepSeek's V3 decode: 288 slots, 2 a rank
  EXPECT_EQ(replicas_to_deal(384, 7, 0), 1);
}

// Variants that differ in their replicas time steps apart, even where the
// routing is uniform (no imbalance to tell them by): a rank holds more
// experts' weights with more replicas.
TEST(DeploymentPlan, SharedStepTimesKeepReplicaCountsApart) {
  const Catalog catalog(V41SIM_SOURCE_DIR);
  const ModelAnalysis model = testing::analyze("deepseek_v4_1_flash");
  DeploymentSpec d = deployment("h200_agg_8");
  for (PoolSpec* pool : {&d.prefill, &d.decode}) pool->routing_skew = 0;
  DeploymentSpec more = d;
  for (PoolSpec* pool : {&more.prefill, &more.decode}) pool->redundant_experts += 64;
  SharedStepTimes shared(catalog, model);
  const DeploymentSteps& a = shared.of(d);
  const DeploymentSteps& b = shared.of(more);
  EXPECT_NE(&a, &b);
  EXPECT_NE(a.steps->decode_step(1, 4096).us, b.steps->decode_step(1, 4096).us);
  EXPECT_EQ(&shared.of(d), &a);
}

// Variants that differ in how their engine runs a kernel (the indexer's two
// choices, the experts' math, fused projections, mHC's form) time steps apart.
TEST(DeploymentPlan, SharedStepTimesKeepEngineChoicesApart) {
  const Catalog catalog(V41SIM_SOURCE_DIR);
  const ModelAnalysis model = testing::analyze("deepseek_v4_1_flash");
  const DeploymentSpec d = deployment("h200_agg_8");
  SharedStepTimes shared(catalog, model);
  const DeploymentSteps& base = shared.of(d);
  const std::vector<void (*)(PoolSpec&)> choices{
      [](PoolSpec& p) { p.engine.draft_queries_share_index_keys = false; },
      [](PoolSpec& p) { p.engine.reindex_scores_pool_only = false; },
      [](PoolSpec& p) { p.engine.experts_bf16_math = true; },
      [](PoolSpec& p) { p.fuse_input_projections = false; },
      [](PoolSpec& p) { p.engine.mhc_form = MhcForm::kThreeKernel; }};
  for (std::size_t i = 0; i < choices.size(); ++i) {
    DeploymentSpec other = d;
    choices[i](other.decode);
    EXPECT_NE(&shared.of(other), &base) << "choice " << i;
  }
}

TEST(DeploymentPlan, AnEmptyGridIsTheBase) {
  const DeploymentSpec base = deployment("h200_prefill_h20_decode");
  const std::vector<DeploymentSpec> variants = plan_variants(base, {});
  ASSERT_EQ(variants.size(), 1u);
  EXPECT_EQ(variants[0].prefill.gpu, base.prefill.gpu);  // each pool keeps its own GPU
  EXPECT_EQ(variants[0].decode.gpu, base.decode.gpu);
  EXPECT_NE(variants[0].prefill.gpu, variants[0].decode.gpu);
  EXPECT_EQ(variants[0].total_gpus(), base.total_gpus());
}

TEST(DeploymentPlan, KvTierVariantsChangeOnlyTheTiers) {
  const DeploymentSpec base = deployment("h200_agg_8");
  const std::vector<DeploymentSpec> variants =
      plan_variants(base, {.kv_retentions_h = {0, 24}, .swa_pool_fractions = {0, 0.05}});
  ASSERT_EQ(variants.size(), 4u);
  // Retention outer, pool inner; each named after what it changed.
  EXPECT_EQ(variants[0].kv.retention_s, 0);
  EXPECT_EQ(variants[0].kv.host_pool_fraction, 0);
  EXPECT_EQ(variants[3].kv.retention_s, 24 * 3600);
  EXPECT_EQ(variants[3].kv.host_pool_fraction, 0.05);
  EXPECT_EQ(variants[0].name, "1 x 8 h200, aggregated, EP 8, no persistent KV tier, no window-state pool");
  EXPECT_EQ(variants[3].name,
            "1 x 8 h200, aggregated, EP 8, global KV kept 24 h, window state in 5% of host DRAM");
  for (const DeploymentSpec& d : variants) {
    EXPECT_EQ(d.decode.gpu, base.decode.gpu);
    EXPECT_EQ(d.kv.host_ttl_s, base.kv.host_ttl_s);
    EXPECT_EQ(d.kv.ssd_read_bytes_per_s.value(), base.kv.ssd_read_bytes_per_s.value());
  }
  // Without those dimensions the tiers, and the names, are the base's.
  const DeploymentSpec same = plan_variants(base, {}).at(0);
  EXPECT_EQ(same.kv.retention_s, base.kv.retention_s);
  EXPECT_EQ(same.kv.host_pool_fraction, base.kv.host_pool_fraction);
  EXPECT_EQ(same.name.find("KV"), std::string::npos);
  EXPECT_EQ(flag_of_error(base, {.kv_retentions_h = {-1}}), "--kv-retention-h");
  EXPECT_EQ(flag_of_error(base, {.swa_pool_fractions = {1}}), "--swa-pool-fraction");
}

// h200_agg_8 serving a bundled workload for 120 s with its SSD tier kept
// each of two retentions (hours), on the same arrivals.
struct RetentionPlan {
  RetentionPlan(const std::string& workload_stem, double shorter_h, double longer_h)
      : workload(
            load_workload_file(std::string(V41SIM_SOURCE_DIR) + "/workloads/" + workload_stem + ".yaml")) {
    options.duration_s = 120;
    rows = run_plan(Catalog(V41SIM_SOURCE_DIR), model, bases, {.kv_retentions_h = {shorter_h, longer_h}},
                    workload, options, 0.99);
  }
  // The row that kept the tier longer, or shorter.
  const PlanRow& row(bool longer) const {
    const bool first_longer = rows.at(0).deployment.kv.retention_s > rows.at(1).deployment.kv.retention_s;
    return rows.at(first_longer == longer ? 0 : 1);
  }
  ModelAnalysis model = testing::analyze("deepseek_v4_1_flash");
  std::vector<DeploymentSpec> bases{deployment("h200_agg_8")};
  WorkloadSpec workload;
  ServeOptions options;
  std::vector<PlanRow> rows;
};

TEST(DeploymentPlan, KeepingSessionsKvServesAgentTrafficCheaper) {
  // Agent sessions return to a long prefix: without the SSD tier every turn
  // prefills it again, which costs TTFT, TPOT (aggregated) and money.
  const RetentionPlan plan("agent_coding", 0, 72);
  ASSERT_EQ(plan.rows.size(), 2u);
  const PlanRow& kept = plan.row(true);
  const PlanRow& none = plan.row(false);
  EXPECT_GT(kept.run.result.input_tokens_cached, 0);
  EXPECT_EQ(none.run.result.input_tokens_cached, 0);
  // Most of a returning turn's prompt is its session's cached prefix.
  const ServingResult& k = kept.run.result;
  EXPECT_GT(k.input_tokens_cached, k.input_tokens_prefilled) << k.input_tokens_prefilled;
  EXPECT_GT(none.run.cost.usd_per_million_output, kept.run.cost.usd_per_million_output);
}

// Sessions that come back hours later find their context only where the
// tier keeps it that long: a longer retention catches more of them, holds
// more bytes, and the table says each variant's tier.
TEST(DeploymentPlan, ALongerRetentionCatchesMoreResumedSessions) {
  const RetentionPlan plan("agent_resumed", 1, 72);
  ASSERT_EQ(plan.rows.size(), 2u);
  const ServingResult& hours72 = plan.row(true).run.result;
  const ServingResult& hour1 = plan.row(false).run.result;
  EXPECT_EQ(hours72.sessions_resumed, hour1.sessions_resumed);  // the same arrivals
  ASSERT_GT(hours72.sessions_resumed, 5);
  EXPECT_GT(hours72.resumed_found, 2 * hour1.resumed_found);
  // A larger share of the prompt tokens comes from the tier (the 1-h run prefills resumed prefixes again).
  const auto from_tier = [](const ServingResult& r) {
    return static_cast<double>(r.input_tokens_cached) /
           static_cast<double>(r.input_tokens_cached + r.input_tokens_to_compute);
  };
  EXPECT_GT(from_tier(hours72), from_tier(hour1));
  const double bytes72 = plan.row(true).run.cost.ssd_tier.bytes;
  EXPECT_GT(bytes72, 20 * plan.row(false).run.cost.ssd_tier.bytes);
  // Held less than 72 h on average: the resumed sessions found replaced theirs sooner.
  EXPECT_LT(hours72.mean_hold_s, 72 * 3600.0);
  EXPECT_GT(hours72.mean_hold_s, 0.5 * 72 * 3600.0);
  const PlanReport report{plan.model.spec.name, plan.bases, plan.workload, plan.options, 0.99, plan.rows};
  const std::string table = plan_table(report).to_text();
  EXPECT_NE(table.find("SSD tier at steady state"), std::string::npos) << table;
  EXPECT_NE(table.find(fmt::format("{:.1f} TB", bytes72 / 1e12)), std::string::npos) << table;
}

TEST(DeploymentPlan, SsdTierSizesVaryTheTierAlone) {
  const DeploymentSpec base = deployment("h200_agg_8");
  ASSERT_FALSE(base.kv.ssd_capacity_tb.has_value());
  const std::vector<DeploymentSpec> variants = plan_variants(base, {.ssd_capacities_tb = {0, 4}});
  ASSERT_EQ(variants.size(), 2u);
  EXPECT_FALSE(variants[0].kv.ssd_capacity_tb.has_value());
  ASSERT_TRUE(variants[1].kv.ssd_capacity_tb.has_value());
  EXPECT_EQ(variants[1].kv.ssd_capacity_tb->value(), 4);
  EXPECT_NE(variants[0].name.find("SSD tier unbounded"), std::string::npos) << variants[0].name;
  EXPECT_NE(variants[1].name.find("SSD tier of 4 TB"), std::string::npos) << variants[1].name;
  EXPECT_EQ(variants[1].kv.retention_s, base.kv.retention_s);
  EXPECT_EQ(flag_of_error(base, {.ssd_capacities_tb = {-1}}), "--ssd-capacity-tb");
}

TEST(DeploymentPlan, AggregatedVariantsKeepOnePool) {
  const DeploymentSpec base = deployment("h200_agg_8");
  const std::vector<DeploymentSpec> variants = plan_variants(base, {.eps = {16}, .decode_instances = {2}});
  ASSERT_EQ(variants.size(), 1u);
  const DeploymentSpec& d = variants[0];
  EXPECT_FALSE(d.disaggregated);
  EXPECT_EQ(d.prefill.instances, 2);
  EXPECT_EQ(d.prefill.gpus_per_instance, 16);
  EXPECT_EQ(d.prefill.ep, d.decode.ep);
  EXPECT_EQ(d.total_gpus(), 32);
}

// --keep-gpus: each pool keeps the base's GPUs at every EP size, its
// instances its GPUs over the EP size, in both layouts.
TEST(DeploymentPlan, KeepingTheGpusSetsTheInstanceCounts) {
  const DeploymentSpec split = deployment("h200_pd_64");  // prefill 2 x 8, decode 6 x 8
  const std::vector<DeploymentSpec> variants = plan_variants(split, {.eps = {4, 8, 16}, .keep_gpus = true});
  ASSERT_EQ(variants.size(), 3u);
  for (const DeploymentSpec& d : variants) {
    EXPECT_EQ(d.prefill.instances * d.prefill.gpus_per_instance, 16) << d.name;
    EXPECT_EQ(d.decode.instances * d.decode.gpus_per_instance, 48) << d.name;
  }
  EXPECT_EQ(variants[2].name, "prefill 1 x 16 h200, decode 3 x 16 h200, EP 16");
  const std::vector<DeploymentSpec> one_pool =
      plan_variants(deployment("h200_agg_8"), {.eps = {2, 8}, .keep_gpus = true});
  ASSERT_EQ(one_pool.size(), 2u);
  EXPECT_EQ(one_pool[0].decode.instances, 4);
  EXPECT_EQ(one_pool[0].prefill.instances, 4);
  EXPECT_EQ(one_pool[1].total_gpus(), 8);
  // An EP size that does not divide a pool's GPUs, or instance counts beside it: refused.
  EXPECT_EQ(flag_of_error(split, {.eps = {32}, .keep_gpus = true}), "--keep-gpus");
  EXPECT_EQ(flag_of_error(split, {.decode_instances = {2}, .keep_gpus = true}), "--keep-gpus");
}

TEST(DeploymentPlan, BadValuesNameTheirFlag) {
  const DeploymentSpec base = deployment("h200_pd_64");
  EXPECT_EQ(flag_of_error(base, {.eps = {0}}), "--ep");
  EXPECT_EQ(flag_of_error(base, {.prefill_instances = {-1}}), "--prefill-instances");
  EXPECT_EQ(flag_of_error(base, {.decode_instances = {0}}), "--decode-instances");
  EXPECT_EQ(flag_of_error(deployment("h200_agg_8"), {.prefill_instances = {2}}), "--prefill-instances");
  // Context-parallel prefill spreads a prompt over an instance's GPUs: one GPU cannot.
  EXPECT_EQ(flag_of_error(deployment("h200_pd_64_cp"), {.eps = {1}}), "--ep");
  EXPECT_EQ(flag_of_error(deployment("h200_pd_64"), {.eps = {1}}), "");
  // GPUs for both pools, or per pool; per pool only where there are two pools.
  EXPECT_EQ(flag_of_error(base, {.gpus = {"h200"}, .decode_gpus = {"h20"}}), "--decode-hw");
  EXPECT_EQ(flag_of_error(deployment("h200_agg_8"), {.prefill_gpus = {"h200"}}), "--prefill-hw");
}

// Prefill on one GPU, decode on another: each pool its own, in the grid's order.
TEST(DeploymentPlan, EachPoolCanTakeItsOwnGpus) {
  const DeploymentSpec base = deployment("h200_pd_64");
  const std::vector<DeploymentSpec> variants =
      plan_variants(base, {.decode_gpus = {"h200", "h20"}, .decode_instances = {4}});
  ASSERT_EQ(variants.size(), 2u);
  EXPECT_EQ(variants[0].prefill.gpu, base.prefill.gpu);
  EXPECT_EQ(variants[1].prefill.gpu, base.prefill.gpu);
  EXPECT_EQ(variants[1].decode.gpu, "h20");
  EXPECT_EQ(variants[1].name, "prefill 2 x 8 h200, decode 4 x 8 h20, EP 8");
}

// Aggregated and disaggregated side by side: each base varied in turn, named
// after it; what only two pools have varies the disaggregated base alone.
TEST(DeploymentPlan, SeveralBasesAreVariedInTurn) {
  const std::vector<DeploymentSpec> bases{deployment("h200_agg_8"), deployment("h200_pd_64")};
  const std::vector<DeploymentSpec> variants =
      plan_variants(bases, {.eps = {8}, .prefill_instances = {1, 2}, .decode_instances = {1}});
  ASSERT_EQ(variants.size(), 3u);
  EXPECT_FALSE(variants[0].disaggregated);
  EXPECT_EQ(variants[0].name, "h200_agg_8: 1 x 8 h200, aggregated, EP 8");
  EXPECT_EQ(variants[0].total_gpus(), 8);
  EXPECT_TRUE(variants[1].disaggregated);
  EXPECT_EQ(variants[1].prefill.instances, 1);
  EXPECT_EQ(variants[2].prefill.instances, 2);
  EXPECT_EQ(variants[2].name, "h200_pd_64: prefill 2 x 8 h200, decode 1 x 8 h200, EP 8");
  // One base: the names and the variants as before.
  const std::vector<DeploymentSpec> one = plan_variants(std::vector<DeploymentSpec>{bases[1]}, {});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].name.find("h200_pd_64:"), std::string::npos);
}

// How an aggregated pool serves prompts is a dimension of its own: it varies
// the aggregated bases only, and a disaggregated base alone refuses it.
TEST(DeploymentPlan, AggregatedStepsVaryTheAggregatedBasesOnly) {
  using Steps = DeploymentSpec::AggregatedSteps;
  const std::vector<DeploymentSpec> bases{deployment("h200_agg_8"), deployment("h200_pd_64")};
  const std::vector<DeploymentSpec> variants = plan_variants(
      bases, {.decode_instances = {1}, .aggregated_steps = {Steps::kPrefillFirst, Steps::kMixed}});
  ASSERT_EQ(variants.size(), 3u);
  EXPECT_EQ(variants[0].aggregated_steps, Steps::kPrefillFirst);
  EXPECT_EQ(variants[0].name, "h200_agg_8: 1 x 8 h200, aggregated, EP 8, prompts in steps of their own");
  EXPECT_EQ(variants[1].aggregated_steps, Steps::kMixed);
  EXPECT_EQ(variants[1].name, "h200_agg_8: 1 x 8 h200, aggregated, EP 8, prompts mixed into decode steps");
  EXPECT_TRUE(variants[2].disaggregated);
  EXPECT_EQ(variants[2].name, "h200_pd_64: prefill 2 x 8 h200, decode 1 x 8 h200, EP 8");
  try {
    plan_variants(bases[1], {.aggregated_steps = {Steps::kMixed}});
    FAIL() << "a disaggregated deployment took aggregated steps";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "--aggregated-steps");
  }
}

// The prefill delay varies the aggregated variants whose prompts run first;
// a mixed variant never holds its prompts and runs once, without a delay.
TEST(DeploymentPlan, PrefillDelaysVaryThePromptsFirstVariantsOnly) {
  using Steps = DeploymentSpec::AggregatedSteps;
  const std::vector<DeploymentSpec> variants = plan_variants(
      deployment("h200_agg_8"),
      {.aggregated_steps = {Steps::kPrefillFirst, Steps::kMixed}, .prefill_delay_steps = {0, 30}});
  ASSERT_EQ(variants.size(), 3u);
  EXPECT_EQ(variants[0].prefill_delay_steps, 0);
  EXPECT_EQ(variants[0].name,
            "1 x 8 h200, aggregated, EP 8, prompts in steps of their own, no prefill delay");
  EXPECT_EQ(variants[1].prefill_delay_steps, 30);
  EXPECT_EQ(variants[1].name,
            "1 x 8 h200, aggregated, EP 8, prompts in steps of their own, prefill delay up to 30 steps");
  EXPECT_TRUE(variants[2].mixes_prompt_chunks());
  EXPECT_EQ(variants[2].prefill_delay_steps, 0);
  EXPECT_EQ(variants[2].name, "1 x 8 h200, aggregated, EP 8, prompts mixed into decode steps");
  // Among several bases the disaggregated ones run without it.
  const std::vector<DeploymentSpec> both =
      plan_variants({deployment("h200_agg_8"), deployment("h200_pd_64")},
                    {.decode_instances = {1}, .prefill_delay_steps = {0, 30}});
  ASSERT_EQ(both.size(), 3u);
  EXPECT_TRUE(both[2].disaggregated);
  EXPECT_EQ(both[2].prefill_delay_steps, 0);
  for (const auto& [base, grid] : {std::pair{"h200_pd_64", std::vector<int64_t>{30}},
                                   std::pair{"h200_agg_8", std::vector<int64_t>{-1}}}) {
    try {
      plan_variants(deployment(base), {.prefill_delay_steps = grid});
      FAIL() << base << " took a prefill delay of " << grid[0];
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().field, "--prefill-delay-steps");
    }
  }
}

// Routing is a dimension of every base: each variant says which it runs.
TEST(DeploymentPlan, RoutingVariesEveryBase) {
  using Routing = DeploymentSpec::Routing;
  const std::vector<DeploymentSpec> variants =
      plan_variants(std::vector<DeploymentSpec>{deployment("h200_agg_8"), deployment("h200_pd_64")},
                    {.decode_instances = {1}, .routings = {Routing::kLeastLoad, Routing::kRoundRobin}});
  ASSERT_EQ(variants.size(), 4u);
  EXPECT_EQ(variants[0].routing, Routing::kLeastLoad);
  EXPECT_EQ(variants[0].name, "h200_agg_8: 1 x 8 h200, aggregated, EP 8, least-load routing");
  EXPECT_EQ(variants[1].routing, Routing::kRoundRobin);
  EXPECT_EQ(variants[1].name, "h200_agg_8: 1 x 8 h200, aggregated, EP 8, round-robin routing");
  EXPECT_EQ(variants[3].name, "h200_pd_64: prefill 2 x 8 h200, decode 1 x 8 h200, EP 8, round-robin routing");
  // Without the dimension, names stay as they were.
  EXPECT_EQ(plan_variants(deployment("h200_agg_8"), {})[0].name, "1 x 8 h200, aggregated, EP 8");
}

// The schedulers' limits are dimensions of their own, after the layout and
// before the KV tiers, each variant changed in that limit alone.
TEST(DeploymentPlan, SchedulerLimitsVaryTheirLimitAlone) {
  const DeploymentSpec base = deployment("h200_agg_8");
  const std::vector<DeploymentSpec> variants = plan_variants(
      base, {.decode_instances = {1, 2}, .max_tokens_per_step = {4096, 8192}, .max_batch_per_gpu = {32}});
  ASSERT_EQ(variants.size(), 4u);
  EXPECT_EQ(variants[0].name, "1 x 8 h200, aggregated, EP 8, 4096 prompt tokens a step, decode batch <= 32");
  EXPECT_EQ(variants[1].name, "1 x 8 h200, aggregated, EP 8, 8192 prompt tokens a step, decode batch <= 32");
  EXPECT_EQ(variants[2].decode.instances, 2);
  EXPECT_EQ(variants[2].prefill.max_tokens_per_step, 4096);
  for (const DeploymentSpec& v : variants) {
    EXPECT_EQ(v.decode.max_batch_per_gpu, 32);
    EXPECT_EQ(v.prefill.ep, base.prefill.ep);
    EXPECT_EQ(v.decode.max_tokens_per_step, base.decode.max_tokens_per_step);
    EXPECT_EQ(v.prefill.max_batch_per_gpu, base.prefill.max_batch_per_gpu);
    EXPECT_EQ(v.kv.retention_s, base.kv.retention_s);
  }
  // With KV tiers varied too, the tiers vary fastest.
  const std::vector<DeploymentSpec> tiers =
      plan_variants(base, {.kv_retentions_h = {0, 8}, .max_batch_per_gpu = {16, 64}});
  ASSERT_EQ(tiers.size(), 4u);
  EXPECT_EQ(tiers[1].name, "1 x 8 h200, aggregated, EP 8, decode batch <= 16, global KV kept 8 h");
  EXPECT_EQ(tiers[2].decode.max_batch_per_gpu, 64);
  EXPECT_EQ(tiers[2].kv.retention_s, 0);
  EXPECT_EQ(flag_of_error(base, {.max_tokens_per_step = {0}}), "--max-tokens-per-step");
  EXPECT_EQ(flag_of_error(base, {.max_batch_per_gpu = {-3}}), "--max-batch-per-gpu");
}

TEST(DeploymentPlan, SeveralBasesMustShareTheirSla) {
  const DeploymentSpec agg = deployment("h200_agg_8");
  DeploymentSpec strict = deployment("h200_pd_64");
  strict.sla.tpot_ms /= 2;
  try {
    plan_variants(std::vector<DeploymentSpec>{agg, strict}, {});
    FAIL() << "bases with different SLAs were ranked together";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "sla");
    EXPECT_EQ(e.where().file, strict.file);
    EXPECT_NE(std::string(e.what()).find("--tpot-ms"), std::string::npos) << e.what();
  }
  // An ITL limit one base sets and the other does not is a different SLA too.
  DeploymentSpec stall_free = deployment("h200_pd_64");
  stall_free.sla.itl_ms = 100;
  try {
    plan_variants(std::vector<DeploymentSpec>{agg, stall_free}, {});
    FAIL() << "bases with different ITL limits were ranked together";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, stall_free.file);
    EXPECT_NE(std::string(e.what()).find("longest ITL 100 ms"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--itl-ms"), std::string::npos) << e.what();
  }
  // What only a disaggregated base has is refused where none is.
  try {
    plan_variants(std::vector<DeploymentSpec>{agg, agg}, {.prefill_instances = {2}});
    FAIL() << "prefill instances were accepted without a disaggregated base";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "--prefill-instances");
  }
  try {
    plan_variants(std::vector<DeploymentSpec>{}, {});
    FAIL() << "no base was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "--deployment");
  }
}

// One aggregated instance of H20s (no public price) or H200s, at EP 8 or at
// an EP size that does not divide the experts: the H200 meets the SLA and
// ranks first; the EP 7 variants cannot run and say why; every request of a
// variant that ran ended (drained).
TEST(DeploymentPlan, RanksTheVariantsThatMeetTheSlaByCost) {
  const ModelAnalysis model = testing::analyze("deepseek_v4_1_flash");
  const Catalog catalog(V41SIM_SOURCE_DIR);
  WorkloadSpec workload = load_workload_file(std::string(V41SIM_SOURCE_DIR) + "/workloads/agent_coding.yaml");
  // Under what one 8 x H200 instance serves at steady state (the report's capacity section: up to 0.367).
  workload.sessions_per_s = 0.3;
  ServeOptions options;
  options.duration_s = 120;
  const std::vector<PlanRow> rows =
      run_plan(catalog, model, {deployment("h200_agg_8")},
               {.gpus = {"h20", "h200"}, .eps = {7, 8}, .decode_instances = {1}}, workload, options, 0.99);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].deployment.decode.gpu, "h200");
  EXPECT_TRUE(rows[0].meets_sla);
  EXPECT_TRUE(rows[0].run.cost.known);
  int not_run = 0;
  bool seen_failing = false;
  for (const PlanRow& row : rows) {
    if (!row.not_run.empty()) {
      ++not_run;
      EXPECT_EQ(row.deployment.decode.ep, 7);
      EXPECT_NE(row.not_run.find("does not divide"), std::string::npos) << row.not_run;
      continue;
    }
    const ServingResult& r = row.run.result;
    EXPECT_EQ(r.arrived, r.finished + r.rejected);
    EXPECT_EQ(row.meets_sla, row.run.within_sla() >= 0.99);
    EXPECT_FALSE(row.meets_sla && seen_failing) << "a variant within the SLA ranked after one outside it";
    seen_failing = seen_failing || !row.meets_sla;
  }
  EXPECT_EQ(not_run, 2);
  // The H20 instance falls behind this traffic: it runs, misses the SLA and ranks after the H200.
  EXPECT_EQ(rows[1].deployment.decode.gpu, "h20");
  EXPECT_TRUE(rows[1].not_run.empty());
  EXPECT_FALSE(rows[1].meets_sla);
}

// Within the SLA, a variant whose window settled ranks before a cheaper one
// whose queue was still moving (met for that window, perhaps not for hours);
// among each, the cheaper first; misses last, by their share within it.
TEST(DeploymentPlan, SettledVariantsWithinTheSlaRankBeforeUnsettledOnes) {
  const auto row = [](const std::string& name, double usd, bool meets, bool steady, double within) {
    PlanRow r;
    r.deployment.name = name;
    r.meets_sla = meets;
    r.run.cost.known = true;
    SeedOutcome s;
    s.usd_per_million_output = usd;
    s.steady = steady;
    s.within_sla = within;
    s.arrived = 100;
    r.run.seeds.push_back(s);
    return r;
  };
  std::vector<PlanRow> rows{row("miss", 0.10, false, true, 0.5), row("cheap, moving", 0.20, true, false, 1.0),
                            row("dear, settled", 0.40, true, true, 1.0),
                            row("cheap, settled", 0.30, true, true, 1.0),
                            row("closer miss", 0.10, false, false, 0.9)};
  rank_plan_rows(rows);
  std::vector<std::string> order;
  for (const PlanRow& r : rows) order.push_back(r.deployment.name);
  EXPECT_EQ(order, (std::vector<std::string>{"cheap, settled", "dear, settled", "cheap, moving",
                                             "closer miss", "miss"}));
}

// The cheapest variants within the SLA are served again in rank order, two
// at a time, until one holds it over the longer run; one that does not drops
// below it, and rows past the pair where one held are not asked.
TEST(DeploymentPlan, ConfirmationServesTheCheapestAgainUntilOneHolds) {
  const auto outcome = [](double usd, double within, bool steady) {
    SeedOutcome s;
    s.usd_per_million_output = usd;
    s.within_sla = within;
    s.steady = s.tail_steady = steady;
    s.arrived = 100;
    return s;
  };
  const auto row = [&](const std::string& name, double usd) {
    PlanRow r;
    r.deployment.name = name;
    r.meets_sla = true;
    r.run.cost.known = true;
    r.run.seeds.push_back(outcome(usd, 1.0, true));
    return r;
  };
  std::vector<PlanRow> rows{row("overloaded", 0.30), row("creeping", 0.32), row("sound", 0.40),
                            row("dearer", 0.50), row("dearest", 0.60)};
  std::vector<std::string> asked;
  std::mutex asking;  // a pair is served at once
  confirm_in_rank_order(rows, 0.99, [&](const PlanRow& r) {
    const std::lock_guard<std::mutex> hold(asking);
    asked.push_back(r.deployment.name);
    ServedRun longer;
    if (r.deployment.name == "overloaded") longer.seeds.push_back(outcome(0.28, 0.90, true));  // misses
    if (r.deployment.name == "creeping") longer.seeds.push_back(outcome(0.30, 0.995, false));  // not settled
    if (r.deployment.name == "sound") longer.seeds.push_back(outcome(0.40, 1.0, true));
    if (r.deployment.name == "dearer") longer.seeds.push_back(outcome(0.50, 1.0, true));
    return longer;
  });
  std::sort(asked.begin(), asked.end());  // (overloaded, creeping), then (sound, dearer)
  EXPECT_EQ(asked, (std::vector<std::string>{"creeping", "dearer", "overloaded", "sound"}));
  std::vector<std::string> order;
  for (const PlanRow& r : rows) order.push_back(r.deployment.name);
  EXPECT_EQ(order, (std::vector<std::string>{"sound", "dearer", "dearest", "overloaded", "creeping"}));
  EXPECT_TRUE(rows[0].confirmation_holds);
  EXPECT_TRUE(rows[1].confirmation_holds);
  EXPECT_FALSE(rows[2].confirmation.has_value());
  EXPECT_TRUE(rows[2].holds());
  EXPECT_FALSE(rows[3].holds());
  EXPECT_TRUE(rows[3].meets_sla);  // met over the window: still ranked before the misses
}

TEST(DeploymentPlan, AShareOutsideZeroToOneIsRefused) {
  const ModelAnalysis model = testing::analyze("deepseek_v4_1_flash");
  const Catalog catalog(V41SIM_SOURCE_DIR);
  const WorkloadSpec workload = load_workload_file(std::string(V41SIM_SOURCE_DIR) + "/workloads/chat.yaml");
  for (const double share : {0.0, 1.5}) {
    try {
      run_plan(catalog, model, {deployment("h200_agg_8")}, {}, workload, ServeOptions{}, share);
      ADD_FAILURE() << share << " was accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().field, "--min-within-sla");
    }
  }
}

}  // namespace
}  // namespace v41sim
