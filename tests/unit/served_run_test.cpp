// A served run repeated over seeds: each seed's figures are the run that seed
// gives alone, and SLA verdicts pool the seeds' requests.
#include "sim/costing/served_run.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "sim/common/input_error.h"
#include "sim/report/run_view.h"
#include "sim/serving/pool_setup.h"
#include "sim/serving/serving_simulation.h"
#include "tests/test_data.h"

namespace v41sim {
namespace {

std::string data(const std::string& file) { return std::string(V41SIM_SOURCE_DIR) + "/" + file; }

struct TinyAggregated {
  Catalog catalog{V41SIM_SOURCE_DIR};
  ModelAnalysis model = analyze_model(load_model_file(data("tests/data/tiny_gqa.yaml")));
  DeploymentSpec deployment = load_deployment_file(data("tests/data/aggregated.yaml"));
  WorkloadSpec workload = load_workload_file(data("workloads/chat.yaml"));
  TinyAggregated() { workload.sessions_per_s = 2; }
  ServedRun serve(uint64_t seed, int64_t seeds) const {
    ServeOptions o;
    o.duration_s = 60;
    o.seed = seed;
    o.seeds = seeds;
    o.drain = true;
    return serve_deployment(catalog, model, deployment, workload, o);
  }
};

TEST(ServedRun, EachSeedIsTheRunThatSeedGivesAlone) {
  const TinyAggregated t;
  const ServedRun three = t.serve(5, 3);
  ASSERT_EQ(three.seeds.size(), 3u);
  double within = 0;
  double arrived = 0;
  for (uint64_t i = 0; i < 3; ++i) {
    const ServedRun alone = t.serve(5 + i, 1);
    ASSERT_EQ(alone.seeds.size(), 1u);
    const SeedOutcome& s = three.seeds[i];
    EXPECT_EQ(s.seed, 5 + i);
    EXPECT_EQ(s.arrived, alone.result.arrived);
    EXPECT_EQ(s.within_sla, share_within_sla(alone.result));
    EXPECT_EQ(s.tpot_p99_ms, alone.result.tpot_ms.p99);
    EXPECT_EQ(s.ttft_p99_ms, alone.result.ttft_ms.p99);
    EXPECT_DOUBLE_EQ(s.tpot_p99_over_limit, alone.result.tpot_ms.p99 / t.deployment.sla.tpot_ms);
    EXPECT_DOUBLE_EQ(s.ttft_p99_over_limit, alone.result.ttft_ms.p99 / t.deployment.sla.ttft_ms);
    EXPECT_EQ(s.usd_per_million_output, alone.cost.usd_per_million_output);
    if (i == 0) {
      EXPECT_EQ(three.result.events, alone.result.events);  // the first seed's run, in full
    }
    within += s.within_sla * static_cast<double>(s.arrived);
    arrived += static_cast<double>(s.arrived);
  }
  EXPECT_DOUBLE_EQ(three.within_sla(), within / arrived);
  // The seeds draw other traffic: the figures move, and the spread holds them.
  const SeedSpread tpot = three.spread(&SeedOutcome::tpot_p99_ms);
  EXPECT_LT(tpot.min, tpot.max);
  EXPECT_LE(tpot.min, tpot.mean);
  EXPECT_LE(tpot.mean, tpot.max);
}

// In a mix, how near a seed's p99 comes to its limit is the worst class's,
// each class against its own limits (the bundled mix holds chats to a TTFT of its own).
// The seeds run side by side on one cache of step times, racing to cost each
// shape first; the shapes costed that a run reports are those of all its
// seeds (the same whoever won), not what its first seed had seen when it
// ended (which `run --seeds 2` printed, differing from run to run). Three
// seeds a core: the first ends well before the last.
TEST(ServedRun, TheShapesCostedAreThoseOfAllTheSeeds) {
  const TinyAggregated t;
  const auto seeds =
      static_cast<int64_t>(std::min(12u, 3 * std::max(1u, std::thread::hardware_concurrency())));
  const ServedRun all = t.serve(5, seeds);
  const DeploymentCostModels gpus(t.catalog, t.deployment);
  const auto steps = std::make_shared<StepTimeCache>(
      deployment_step_times(t.model, gpus.prefill.cost(), gpus.decode.cost(), t.deployment));
  std::size_t first_alone = 0;
  for (int64_t i = 0; i < seeds; ++i) {
    ServingSimulation one(t.model, gpus.prefill.cost(), gpus.decode.cost(), t.deployment, t.workload,
                          static_cast<uint64_t>(5 + i), steps);
    one.set_warm_up(all.result.warm_up_s);
    const std::size_t costed = one.run(60, true).step_shapes_costed;
    if (i == 0) first_alone = costed;
  }
  EXPECT_EQ(all.result.step_shapes_costed, steps->size());
  EXPECT_LT(first_alone, steps->size());  // the later seeds costed shapes of their own
}

TEST(ServedRun, AMixsP99OverItsLimitIsTheWorstClasss) {
  TinyAggregated t;
  t.workload = load_workload_file(data("workloads/chat_and_agents.yaml"));
  ASSERT_TRUE(has_class_slas(t.workload));
  const ServedRun run = t.serve(1, 1);
  ASSERT_EQ(run.result.by_class.size(), 2u);
  double ttft = 0, tpot = 0;
  for (const ClassOutcome& c : run.result.by_class) {
    ASSERT_GT(c.ttft_ms.count, 0) << c.name;
    ttft = std::max(ttft, c.ttft_ms.p99 / c.sla.ttft_ms);
    tpot = std::max(tpot, c.tpot_ms.p99 / c.sla.tpot_ms);
  }
  EXPECT_EQ(run.result.by_class[0].sla.ttft_ms, 2000);  // chat's own
  EXPECT_EQ(run.result.by_class[0].sla.tpot_ms, t.deployment.sla.tpot_ms);
  EXPECT_EQ(run.result.by_class[1].sla.ttft_ms, t.deployment.sla.ttft_ms);
  EXPECT_DOUBLE_EQ(run.seeds[0].ttft_p99_over_limit, ttft);
  EXPECT_DOUBLE_EQ(run.seeds[0].tpot_p99_over_limit, tpot);
}

// A seed's outcome with these headline figures (the others zero).
SeedOutcome seed_of(uint64_t seed, int64_t arrived, double within_sla, std::vector<ClassShare> classes = {}) {
  SeedOutcome s;
  s.seed = seed;
  s.arrived = arrived;
  s.within_sla = within_sla;
  s.classes = std::move(classes);
  return s;
}

TEST(ServedRun, TheVerdictPoolsTheSeedsRequests) {
  ServedRun run;
  run.seeds = {seed_of(1, 100, 1.0), seed_of(2, 300, 0.96)};
  EXPECT_DOUBLE_EQ(run.within_sla(), (100 + 288) / 400.0);  // not the mean of the shares, 0.98
  EXPECT_TRUE(run.meets_sla(0.97));
  EXPECT_FALSE(run.meets_sla(0.975));
  EXPECT_EQ(run.seeds_meeting_sla(0.97), 1);  // the pooled verdict rests on the first seed alone
  EXPECT_EQ(run.seeds_meeting_sla(0.96), 2);
  EXPECT_DOUBLE_EQ(run.spread(&SeedOutcome::within_sla).mean, 0.98);
  ServedRun idle;
  idle.seeds = {seed_of(1, 0, 0)};
  EXPECT_FALSE(idle.meets_sla(0.5));  // nothing arrived: nothing shown to meet it
}

// Where the "meets SLA" cell sits among a served run's cells.
std::size_t meets_sla_column(bool longest_itl = false) {
  const std::vector<std::string> columns = with_served_run_columns({}, longest_itl);
  return static_cast<std::size_t>(std::find(columns.begin(), columns.end(), "meets SLA") - columns.begin());
}

// With an ITL limit the seed's p99 of each request's longest gap is set
// against it, and the tables show that p99 in a column of its own; a
// variant that could not run says why in the verdict's column either way.
TEST(ServedRun, AnItlLimitAddsItsP99OverTheLimitAndItsColumn) {
  TinyAggregated t;
  const ServedRun free = t.serve(1, 1);
  ASSERT_GT(free.result.longest_itl_ms.count, 0);
  EXPECT_EQ(free.seeds[0].longest_itl_p99_over_limit, 0) << "no limit, nothing over it";
  EXPECT_EQ(free.seeds[0].longest_itl_p99_ms, free.result.longest_itl_ms.p99);
  EXPECT_GE(free.result.longest_itl_ms.p99, free.result.tpot_ms.p99 * (1 - 1e-12))
      << "a request's longest gap is no shorter than its mean one";
  t.deployment.sla.itl_ms = free.result.longest_itl_ms.p50;
  const ServedRun limited = t.serve(1, 1);
  EXPECT_DOUBLE_EQ(limited.seeds[0].longest_itl_p99_over_limit,
                   free.result.longest_itl_ms.p99 / free.result.longest_itl_ms.p50);
  EXPECT_LT(limited.within_sla(), free.within_sla()) << "half the requests stall past the median";

  for (const bool longest_itl : {false, true}) {
    const std::vector<std::string> columns = with_served_run_columns({}, longest_itl);
    EXPECT_EQ(std::count(columns.begin(), columns.end(), "longest ITL p99 (ms)"), longest_itl ? 1 : 0);
    EXPECT_EQ(served_run_cells(limited, 0.99, longest_itl).size(), columns.size());
    const std::vector<std::string> not_run = not_run_cells("it does not fit", longest_itl);
    ASSERT_EQ(not_run.size(), columns.size());
    EXPECT_EQ(not_run[meets_sla_column(longest_itl)], "cannot run: it does not fit");
  }
  const std::vector<std::string> columns = with_served_run_columns({}, true);
  const auto longest = std::find(columns.begin(), columns.end(), "longest ITL p99 (ms)") - columns.begin();
  EXPECT_EQ(served_run_cells(limited, 0.99, true)[static_cast<std::size_t>(longest)],
            fmt::format("{:.1f}", free.result.longest_itl_ms.p99));
}

// A miss says what its requests missed, pooled over the seeds, the most
// common first; a share under 0.05% is not printed as none.
TEST(ServedRun, AMissSaysWhatItsRequestsMissed) {
  ServedRun run;
  run.seeds = {seed_of(1, 1000, 0.88), seed_of(2, 3000, 0.9)};
  run.seeds[0].misses = {.unfinished = 10, .ttft = 80, .tpot = 30, .itl = 0};
  run.seeds[1].misses = {.unfinished = 0, .ttft = 200, .tpot = 90, .itl = 1};
  EXPECT_EQ(run.arrived(), 4000);
  EXPECT_EQ(run.misses().ttft, 280);
  EXPECT_EQ(
      served_run_cells(run, 0.99, false)[meets_sla_column()],
      "no: 7.0% over TTFT, 3.0% over TPOT, 0.2% unfinished, <0.1% over longest ITL (0 of 2 seeds alone)");
  // A run that meets it says nothing of the few that missed.
  EXPECT_EQ(served_run_cells(run, 0.8, false)[meets_sla_column()], "yes (2 of 2 seeds alone)");
  // Nothing arrived: nothing missed, nothing met.
  ServedRun idle;
  idle.seeds = {seed_of(1, 0, 0)};
  EXPECT_EQ(served_run_cells(idle, 0.99, false)[meets_sla_column()], "no");
}

// In a mix, the verdict asks the share of each class, pooled over the seeds:
// a small class served badly is not hidden in a large class's share.
TEST(ServedRun, AMixMeetsTheSlaOnlyWhereEachClassDoes) {
  ServedRun run;
  run.result.by_class.resize(2);
  run.result.by_class[0].name = "chat";
  run.result.by_class[1].name = "agent";
  // 989 of 1000 pooled (98.9%), but the agents' 40 of 50 (80%).
  run.seeds = {seed_of(1, 500, 0.99, {{480, 479}, {20, 16}}), seed_of(2, 500, 0.99, {{470, 470}, {30, 24}})};
  run.seeds[0].within_sla = 495 / 500.0;
  run.seeds[1].within_sla = 494 / 500.0;
  EXPECT_GE(run.within_sla(), 0.98);
  ASSERT_EQ(run.class_within_sla().size(), 2u);
  EXPECT_DOUBLE_EQ(run.class_within_sla()[1], 40 / 50.0);
  EXPECT_FALSE(run.meets_sla(0.98));
  EXPECT_EQ(run.seeds_meeting_sla(0.98), 0);
  EXPECT_TRUE(run.meets_sla(0.8));
  EXPECT_EQ(served_run_cells(run, 0.98, false)[meets_sla_column()], "no: agent 80.0% (0 of 2 seeds alone)");
  // A class none of whose requests arrived asks nothing.
  run.seeds = {seed_of(1, 100, 1.0, {{100, 100}, {0, 0}})};
  EXPECT_TRUE(run.meets_sla(0.99));
}

TEST(ServedRun, FewerThanOneSeedIsAnInputError) {
  const TinyAggregated t;
  try {
    t.serve(1, 0);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "--seeds");
  }
}

// A share just short of the SLA's threshold never prints as the threshold
// beside "no": it takes the decimals that tell them apart.
TEST(ServedRun, AShareNearTheThresholdPrintsOnItsOwnSide) {
  const auto cells = [](std::vector<double> shares) {
    ServedRun run;
    for (std::size_t i = 0; i < shares.size(); ++i) run.seeds.push_back(seed_of(i + 1, 1000, shares[i]));
    return served_run_cells(run, 0.99, false);
  };
  EXPECT_EQ(cells({0.9896}).size(), with_served_run_columns({}, false).size()) << "a cell for every column";
  EXPECT_EQ(cells({0.9896})[0], "98.96%");
  EXPECT_EQ(cells({0.9896})[meets_sla_column()], "no");
  EXPECT_EQ(cells({0.99})[0], "99.0%");
  EXPECT_EQ(cells({0.99})[meets_sla_column()], "yes");
  ServedRun creeping;
  creeping.seeds = {seed_of(1, 1000, 0.995), seed_of(2, 1000, 0.995)};
  creeping.seeds[1].steady = false;
  EXPECT_EQ(served_run_cells(creeping, 0.99, false)[meets_sla_column()],
            "yes (2 of 2 seeds alone; 1 not settled)");
  creeping.seeds.pop_back();
  EXPECT_EQ(served_run_cells(creeping, 0.99, false)[meets_sla_column()], "yes");
  creeping.seeds.front().steady = false;
  EXPECT_EQ(served_run_cells(creeping, 0.99, false)[meets_sla_column()], "yes, not settled");
  EXPECT_EQ(cells({0.985})[0], "98.5%");
  EXPECT_EQ(cells({0.98999})[0], "98.999%");
  EXPECT_EQ(cells({0.9896, 0.9924})[0], "99.1% (98.96-99.2)");
}

// Drawn sessions start from an empty deployment and are warmed up unless told
// otherwise; a trace is replayed from its first row; a warm-up given is
// taken as given, and a negative one refused naming the flag.
TEST(ServedRun, TheWarmUpIsTheDefaultForDrawnSessionsAndNoneForATrace) {
  const TinyAggregated t;
  ServeOptions o;
  EXPECT_DOUBLE_EQ(warm_up_of(o, t.workload), kDefaultWarmUpS);
  const WorkloadSpec trace = load_workload_file(data("workloads/agent_trace.yaml"));
  EXPECT_DOUBLE_EQ(warm_up_of(o, trace), 0.0);
  o.warm_up_s = 45;
  EXPECT_DOUBLE_EQ(warm_up_of(o, trace), 45.0);
  o.duration_s = 30;
  const ServedRun run = serve_deployment(t.catalog, t.model, t.deployment, t.workload, o);
  EXPECT_DOUBLE_EQ(run.result.warm_up_s, 45.0);
  o.warm_up_s = -1;
  try {
    serve_deployment(t.catalog, t.model, t.deployment, t.workload, o);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "--warm-up");
  }
}

// A benchmark served to its last prompt empties the deployment by design:
// its settling is not asked (a verdict rests on its SLA alone, as a trace's),
// and the run says so where a run's window would say whether it settled.
TEST(ServedRun, ABenchmarksPromptsServedToTheLastAskNoSettling) {
  TinyAggregated t;
  t.workload = load_workload_file(testing::one_turn_workload(
      "v41sim_served_benchmark", "{process: closed_loop, concurrency: 4, prompts: 40}", 2048, 16));
  ServeOptions o;
  o.duration_s = 600;
  o.warm_up_s = 0;
  const ServedRun run = serve_deployment(t.catalog, t.model, t.deployment, t.workload, o);
  ASSERT_TRUE(run.result.window_ends_with_prompts);
  EXPECT_EQ(run.seeds_unsettled(), 0);
  EXPECT_EQ(run.holds_sla(0.0), run.meets_sla(0.0));
  const std::string model = "tiny";
  std::string text;
  for (const Table& table : run_tables({model, t.deployment, t.workload, 1, run})) text += table.to_text();
  EXPECT_NE(text.find("not asked: a benchmark's prompts served to the last"), std::string::npos) << text;
  EXPECT_NE(text.find("until 40 have started (the benchmark's prompts), none after"), std::string::npos);
  EXPECT_NE(text.find("the window ends with the last of them to end"), std::string::npos);
  EXPECT_EQ(arrivals_phrase(o, t.workload),
            "the benchmark's 40 prompts to the last (at most 600 simulated s of arrivals)");
  // The same loop without its prompt count is judged as any run.
  t.workload.prompts = 0;
  o.duration_s = 30;
  const ServedRun endless = serve_deployment(t.catalog, t.model, t.deployment, t.workload, o);
  EXPECT_FALSE(endless.result.window_ends_with_prompts);
  EXPECT_EQ(endless.seeds.front().steady, endless.result.steady_state.steady());
}

}  // namespace
}  // namespace v41sim
