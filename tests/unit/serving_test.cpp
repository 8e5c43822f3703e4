// Serving simulation: accounting, determinism, queueing theory, overload.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "sim/common/input_error.h"
#include "sim/common/parallel_for.h"
#include "sim/common/yaml_what_if.h"
#include "sim/costing/serving_cost.h"
#include "sim/serving/pool_setup.h"
#include "sim/serving/serving_simulation.h"
#include "tests/step_test_support.h"

namespace v41sim {
namespace {

using testing::analyze;

std::string data(const std::string& file) { return std::string(V41SIM_SOURCE_DIR) + "/" + file; }

struct Fixture {
  Fixture(const std::string& model_file, const std::string& deployment_file, const std::string& workload_file)
      : model(analyze_model(load_model_file(model_file))),
        deployment(load_deployment_file(deployment_file)),
        workload(load_workload_file(workload_file)),
        prefill(V41SIM_SOURCE_DIR, testing::gpu_path(deployment.prefill.gpu), false),
        decode(V41SIM_SOURCE_DIR, testing::gpu_path(deployment.decode.gpu), true) {}

  ServingResult run(double seconds, uint64_t seed = 1, bool drain = false) {
    ServingSimulation sim(model, prefill.cost(), decode.cost(), deployment, workload, seed);
    return sim.run(seconds, drain);
  }

  ModelAnalysis model;
  DeploymentSpec deployment;
  WorkloadSpec workload;
  GpuCostModel prefill;
  GpuCostModel decode;
};

// An aggregated instance's engine runs one step at a time: traced over
// `seconds`, its prefill and decode steps never overlap.
void expect_one_step_at_a_time(Fixture& f, double seconds) {
  ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
  sim.enable_trace(seconds);
  std::vector<std::pair<double, double>> steps;
  for (const TraceSpan& s : sim.run(seconds).trace) {
    if (s.kind == TraceSpan::Kind::kPrefillStep || s.kind == TraceSpan::Kind::kDecodeStep) {
      steps.emplace_back(s.start_us, s.start_us + s.duration_us);
    }
  }
  std::sort(steps.begin(), steps.end());
  ASSERT_GT(steps.size(), 10u);
  for (std::size_t i = 1; i < steps.size(); ++i) EXPECT_GE(steps[i].first, steps[i - 1].second - 1e-6) << i;
}

Fixture v41_agents() {
  return Fixture(testing::model_path("deepseek_v4_1_flash"), data("workloads/deployments/h200_pd_64.yaml"),
                 data("workloads/agent_coding.yaml"));
}

Fixture tiny_fixed() {
  return Fixture(data("tests/data/tiny_gqa.yaml"), data("tests/data/one_gpu.yaml"),
                 data("tests/data/fixed_prompts.yaml"));
}

// Chat sessions on the tiny model, one GPU serving prefill and decode.
Fixture tiny_aggregated_chat() {
  return Fixture(data("tests/data/tiny_gqa.yaml"), data("tests/data/aggregated.yaml"),
                 data("workloads/chat.yaml"));
}

// The tiny model (or `model`) on `deployment` (one aggregated instance by
// default), serving the trace `rows` (time_s,session,input_tokens,output_tokens
// lines), written to a temp folder.
Fixture tiny_trace(const std::string& folder, const std::string& rows,
                   const std::string& deployment = "tests/data/aggregated.yaml",
                   const std::string& model = data("tests/data/tiny_gqa.yaml")) {
  const auto dir = std::filesystem::temp_directory_path() / folder;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "t.csv") << "time_s,session,input_tokens,output_tokens\n" << rows;
  std::ofstream(dir / "w.yaml") << "name: t\nsource: test\narrival: {process: trace, file: t.csv}\n";
  return Fixture(model, data(deployment), (dir / "w.yaml").string());
}

// A drained run with every step and request span of its first `seconds` traced.
ServingResult traced_run(const Fixture& f, double seconds, uint64_t seed = 1) {
  ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, seed);
  sim.enable_trace(seconds);
  return sim.run(seconds, true);
}

TEST(Serving, EveryRequestAndTokenIsAccountedFor) {
  Fixture f = v41_agents();
  const ServingResult open = f.run(300);
  EXPECT_EQ(open.arrived, open.finished + open.in_flight + open.rejected);
  EXPECT_GT(open.finished, 100);
  const ServingResult drained = f.run(300, 1, true);
  EXPECT_EQ(drained.in_flight, 0);
  EXPECT_EQ(drained.arrived, drained.finished + drained.rejected);
  EXPECT_EQ(drained.input_tokens_prefilled, drained.input_tokens_to_compute);
  EXPECT_EQ(drained.output_tokens_generated, drained.output_tokens_of_finished);
  // Later turns find their prefix in the KV tiers.
  EXPECT_GT(drained.kv_tiers.global_hits, 0);
  EXPECT_GT(drained.input_tokens_cached, 0);
}

// The step log (`run --steps`) holds every step of the measured window as
// the run counted and ran it: its kinds and pools add up to the run's step
// counts, each kind carries what it should, and an engine's steps follow one
// another (an aggregated instance's prompt and decode steps share its engine).
ServingResult expect_step_log_matches(const Fixture& f, double warm_up_s, double seconds) {
  ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
  sim.set_warm_up(warm_up_s);
  sim.enable_step_log();
  const ServingResult r = sim.run(seconds);
  EXPECT_EQ(static_cast<int64_t>(r.steps.size()), r.prefill_steps + r.decode_steps);
  EXPECT_GT(r.steps.size(), 10u);
  int64_t prefill = 0, mixed = 0, context_parallel = 0, prefill_split = 0, decode_split = 0;
  std::map<std::pair<bool, int>, double> engine_free_s;
  for (const StepRecord& s : r.steps) {
    EXPECT_GE(s.start_s, warm_up_s);
    EXPECT_GT(s.step_ms, 0);
    EXPECT_LE(s.communication_ms, s.step_ms + 1e-9);
    prefill += s.prefill_pool;
    (s.prefill_pool ? prefill_split : decode_split) += s.micro_batches > 1;
    switch (s.kind) {
      case StepRecord::Kind::kDecode:
        EXPECT_FALSE(s.prefill_pool);
        EXPECT_GT(s.sequences, 0);
        EXPECT_EQ(s.prompts, 0);
        EXPECT_GT(s.decode_context, 0);
        break;
      case StepRecord::Kind::kMixed:
        ++mixed;
        EXPECT_GT(s.prompts, 0);
        EXPECT_GT(s.prompt_tokens, 0);
        break;
      case StepRecord::Kind::kContextParallel:
        ++context_parallel;
        EXPECT_EQ(s.prompts, 1);
        break;
      case StepRecord::Kind::kPrefill:
        EXPECT_TRUE(s.prefill_pool);
        EXPECT_GT(s.prompts, 0);
        EXPECT_GE(s.prompt_context,
                  static_cast<double>(s.prompt_tokens) / static_cast<double>(s.prompts) - 1);
        break;
    }
    const std::pair<bool, int> engine{!f.deployment.disaggregated || s.prefill_pool, s.instance};
    if (engine_free_s.count(engine) > 0) {
      EXPECT_GE(s.start_s, engine_free_s[engine] - 1e-9) << s.start_s;
    }
    engine_free_s[engine] = s.start_s + s.step_ms / 1e3;
  }
  EXPECT_EQ(prefill, r.prefill_steps);
  EXPECT_EQ(mixed, r.mixed_steps);
  EXPECT_EQ(context_parallel, r.context_parallel_steps);
  EXPECT_EQ(prefill_split, r.prefill_steps_split);
  EXPECT_EQ(decode_split, r.decode_steps_split);
  return r;
}

TEST(Serving, TheStepLogHoldsEveryMeasuredStepAsItRan) {
  Fixture aggregated(testing::model_path("deepseek_v4_1_flash"),
                     data("workloads/deployments/h200_agg_8.yaml"), data("workloads/chat.yaml"));
  EXPECT_GT(expect_step_log_matches(aggregated, 30, 30).prefill_steps_with_decode, 0);
  aggregated.deployment.aggregated_steps = DeploymentSpec::AggregatedSteps::kMixed;
  EXPECT_GT(expect_step_log_matches(aggregated, 30, 30).mixed_steps, 0);
  Fixture split(testing::model_path("deepseek_v4_1_flash"), data("workloads/deployments/h200_pd_64_cp.yaml"),
                data("workloads/stress_1m.yaml"));
  const ServingResult r = expect_step_log_matches(split, 0, 300);
  EXPECT_GT(r.context_parallel_steps, 0);
  EXPECT_GT(r.decode_steps, 0);
}

// A warm-up is served, not counted: a drained run's figures are those of the
// requests that arrived after it, every one of its own (and only its own)
// requests' tokens, and the tiers' lookups of the window.
TEST(Serving, AWarmUpIsServedButNotCounted) {
  Fixture f = v41_agents();
  ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
  sim.set_warm_up(120);
  sim.enable_request_log();
  const ServingResult r = sim.run(60, true);
  EXPECT_DOUBLE_EQ(r.warm_up_s, 120);
  EXPECT_DOUBLE_EQ(r.duration_s, 60);
  int64_t measured = 0, warm_up = 0, generated = 0, cached = 0, finished = 0, looked_up = 0;
  std::vector<double> ttft;
  for (const RequestRecord& x : r.requests) {
    EXPECT_EQ(x.measured, x.arrival_s >= 120) << x.id;
    if (!x.measured) {
      ++warm_up;
      continue;
    }
    ++measured;
    looked_up += x.prefix_tokens > 0 && x.status.find("max_context") == std::string::npos ? 1 : 0;
    generated += x.generated;
    cached += x.cached_tokens;
    if (x.status != "finished") continue;
    ++finished;
    ttft.push_back(x.ttft_ms);
  }
  EXPECT_GT(warm_up, 100);
  EXPECT_GT(measured, 100);
  EXPECT_EQ(measured, r.arrived);
  EXPECT_EQ(finished, r.finished);
  EXPECT_EQ(r.in_flight, 0);
  EXPECT_EQ(generated, r.output_tokens_generated);
  EXPECT_EQ(r.output_tokens_generated, r.output_tokens_of_finished);
  EXPECT_EQ(r.input_tokens_prefilled, r.input_tokens_to_compute);
  EXPECT_EQ(cached, r.input_tokens_cached);
  EXPECT_DOUBLE_EQ(summarize(ttft).p99, r.ttft_ms.p99);
  // Each window turn with a prefix looked it up once, and only those.
  EXPECT_GT(looked_up, 0);
  EXPECT_EQ(r.kv_tiers.global_hits + r.kv_tiers.global_misses, looked_up);
}

// Agent sessions of many turns build an empty deployment up for minutes: a
// window that opens at once sees the load still rising, and says so; one
// opened after the default warm-up has settled, and serves more tokens per
// GPU (the same arrival rate, now at its full concurrency).
TEST(Serving, AWindowFromEmptyIsNotSettledAndTheWarmUpSettlesIt) {
  Fixture f = v41_agents();
  const ServingResult cold = f.run(300);
  ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
  sim.set_warm_up(600);
  const ServingResult warm = sim.run(300);
  EXPECT_TRUE(cold.steady_state.judged);
  EXPECT_FALSE(cold.steady_state.steady());
  EXPECT_GT(cold.steady_state.mean_shift, SteadyState::kSettledShift);  // rising
  EXPECT_TRUE(warm.steady_state.steady());
  EXPECT_GT(warm.output_tokens_per_s_per_gpu, 1.2 * cold.output_tokens_per_s_per_gpu);
}

// Aggregated instances share the prompts by load, decoding included: with
// four of them, each runs a fair share of the prefill steps, by either
// load-aware policy. By prefill tokens alone, a prompt that finds every
// prefill queue empty goes to the first instance, however many sequences it
// decodes.
TEST(Serving, AggregatedInstancesShareThePromptsByLoad) {
  for (const auto routing : {DeploymentSpec::Routing::kLeastLoad, DeploymentSpec::Routing::kLeastRequests}) {
    Fixture f = tiny_aggregated_chat();
    f.deployment.routing = routing;
    f.deployment.prefill.instances = 4;
    f.deployment.decode.instances = 4;
    f.workload.sessions_per_s = 2;
    std::map<int64_t, int64_t> steps_by_instance;
    int64_t steps = 0;
    for (const TraceSpan& s : traced_run(f, 300).trace) {
      if (s.kind != TraceSpan::Kind::kPrefillStep) continue;
      ++steps_by_instance[s.instance];
      ++steps;
    }
    ASSERT_GT(steps, 100);
    ASSERT_EQ(steps_by_instance.size(), 4u) << routing_note(f.deployment);
    for (const auto& [instance, count] : steps_by_instance) {
      EXPECT_GT(count, steps / 10) << "instance " << instance << ", " << routing_note(f.deployment);
      EXPECT_LT(count, steps / 2) << "instance " << instance << ", " << routing_note(f.deployment);
    }
  }
}

// One-token prompts arriving one at a time at four idle instances: nothing
// loads any of them, so least load sends every prompt to the first (ties go
// to the lowest index), and round robin sends them in turn.
TEST(Serving, RoundRobinRoutingTakesTheInstancesInTurn) {
  Fixture f(data("tests/data/tiny_gqa.yaml"), data("tests/data/aggregated.yaml"),
            data("tests/data/fixed_prompts.yaml"));
  f.deployment.prefill.instances = 4;
  f.deployment.decode.instances = 4;
  f.workload.sessions_per_s = 0.5;
  const auto steps_by_instance = [&f](DeploymentSpec::Routing routing) {
    f.deployment.routing = routing;
    std::map<int64_t, int64_t> steps;
    for (const TraceSpan& s : traced_run(f, 200).trace) {
      if (s.kind == TraceSpan::Kind::kPrefillStep) ++steps[s.instance];
    }
    return steps;
  };
  const auto least = steps_by_instance(DeploymentSpec::Routing::kLeastLoad);
  ASSERT_EQ(least.size(), 1u);
  EXPECT_EQ(least.begin()->first, 0);
  const auto turns = steps_by_instance(DeploymentSpec::Routing::kRoundRobin);
  ASSERT_EQ(turns.size(), 4u);
  int64_t fewest = INT64_MAX, most = 0;
  for (const auto& [instance, count] : turns) {
    fewest = std::min(fewest, count);
    most = std::max(most, count);
  }
  EXPECT_GT(fewest, 10);
  EXPECT_LE(most - fewest, 1);  // one step per prompt, prompts dealt in turn
}

// Data-parallel attention: prompts routed to an instance spread over its
// ranks (each rank's scheduler runs its own). Four prompts arrive at once on
// an idle instance of four ranks: the first starts a step alone, and the
// other three, on the three other ranks, run in the next step, one each, so
// it lasts as long as one prompt's; packed onto one rank up to its token
// budget they would take a step of all three.
TEST(Serving, PromptsArrivingTogetherSpreadOverTheInstancesRanks) {
  Fixture f = tiny_trace("v41sim_dp_ranks", "1.0,0,2048,1\n1.0,1,2048,1\n1.0,2,2048,1\n1.0,3,2048,1\n");
  for (PoolSpec* pool : {&f.deployment.prefill, &f.deployment.decode}) pool->gpus_per_instance = 4;
  f.deployment.prefill.max_tokens_per_step = 4 * 2048;
  std::vector<TraceSpan> steps;
  for (const TraceSpan& s : traced_run(f, 10).trace) {
    if (s.kind == TraceSpan::Kind::kPrefillStep) steps.push_back(s);
  }
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].size, 1);
  EXPECT_EQ(steps[1].size, 3);
  StepTimeCache times = deployment_step_times(f.model, f.prefill.cost(), f.decode.cost(), f.deployment);
  const double one_prompt_us = times.prefill_step(1, 2048, 2048).us;
  for (const TraceSpan& s : steps) EXPECT_NEAR(s.duration_us, one_prompt_us, 1e-3);  // time in whole ps
  EXPECT_GT(times.prefill_step(3, 2048, 2048).us, 2 * one_prompt_us);
}

// The run says how unevenly its ranks decode. One 60K-token prompt and three
// short ones arrive together at two ranks: least load (KV tokens) puts the
// long one alone on a rank and the three short ones on the other, which then
// decodes three sequences where an even deal gives two; least requests deals
// them two and two. On one GPU there is nothing to deal. Each rank prefills
// its prompts in one step, so all four decode from the same step on (with
// chunks, the short prompts' rank would decode beside the long prompt's
// chunks and finish first).
TEST(Serving, TheRunSaysHowUnevenlyItsRanksDecode) {
  Fixture f =
      tiny_trace("v41sim_rank_imbalance", "1.0,0,60000,500\n1.0,1,100,500\n1.0,2,100,500\n1.0,3,100,500\n");
  f.deployment.prefill.max_tokens_per_step = 65536;
  const auto imbalance = [&f](int64_t ranks, DeploymentSpec::Routing routing) {
    for (PoolSpec* pool : {&f.deployment.prefill, &f.deployment.decode}) pool->gpus_per_instance = ranks;
    f.deployment.routing = routing;
    const ServingResult r = f.run(1e4, 1, true);
    EXPECT_EQ(r.finished, 4);
    return r.decode_rank_imbalance;
  };
  EXPECT_DOUBLE_EQ(imbalance(1, DeploymentSpec::Routing::kLeastLoad), 1.0);
  EXPECT_DOUBLE_EQ(imbalance(2, DeploymentSpec::Routing::kLeastRequests), 1.0);
  EXPECT_GT(imbalance(2, DeploymentSpec::Routing::kLeastLoad), 1.3);
}

// Aggregated, prompts first: a rank with no prompt in a prompt step decodes
// beside it (data-parallel attention), one token per sequence per step, while
// a rank with a prompt has its decode wait. One short prompt starts decoding;
// a long one arrives while it decodes and is prefilled in chunks. On two
// ranks the long one goes to the idle rank and every one of its chunks'
// steps carries the first sequence's decode: that sequence emits a token per
// chunk. On one rank the chunks stall it.
TEST(Serving, RanksWithoutAPromptDecodeBesideIt) {
  Fixture f = tiny_trace("v41sim_decode_beside", "1.0,0,100,3000\n1.2,1,16384,2\n");
  const auto served = [&f](int64_t ranks) {
    for (PoolSpec* pool : {&f.deployment.prefill, &f.deployment.decode}) pool->gpus_per_instance = ranks;
    f.deployment.prefill.max_tokens_per_step = 2048;
    ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
    sim.enable_request_log();
    const ServingResult r = sim.run(1e4, true);
    EXPECT_EQ(r.finished, 2);
    return r;
  };
  const ServingResult two = served(2);
  ASSERT_EQ(two.requests.size(), 2u);
  const RequestRecord& first = two.requests[0];
  const RequestRecord& second = two.requests[1];
  const auto finished_s = [](const RequestRecord& r) { return r.arrival_s + r.e2e_ms / 1e3; };
  ASSERT_LT(second.arrival_s, finished_s(first)) << "the long prompt must arrive while the first decodes";
  EXPECT_EQ(two.prefill_steps, 1 + 16384 / 2048);
  EXPECT_EQ(two.prefill_steps_with_decode, 16384 / 2048);  // each of the long prompt's chunks
  EXPECT_EQ(two.prefill_steps_set_by_decode, 0);           // a chunk of 2048 outlasts a decode step of one
  const ServingResult one = served(1);
  EXPECT_EQ(one.prefill_steps, two.prefill_steps);
  EXPECT_EQ(one.prefill_steps_with_decode, 0);
  // Stalled for eight chunk steps, the first sequence finishes later on one rank.
  EXPECT_GT(finished_s(one.requests[0]), finished_s(first));
}

// A trace for 8 x H200 routing in turn: seven ranks decode `per_rank`
// sessions of 100-token prompts and 3,000 outputs each (the eighth's sessions,
// and one more each on the seven, ask for one token and are done at once); at
// 1 s a prompt of `prompt_tokens` comes to the eighth rank.
std::string seven_ranks_decoding_then_a_prompt(int64_t per_rank, int64_t prompt_tokens) {
  constexpr int64_t kRanks = 8;
  std::string rows;
  for (int64_t s = 0; s < kRanks * per_rank; ++s)
    rows += fmt::format("0,{},100,{}\n", s, s % kRanks == 7 ? 1 : 3000);
  for (int64_t s = 0; s < kRanks - 1; ++s) rows += fmt::format("0.5,{},100,1\n", 1000 + s);
  return rows + fmt::format("1.0,2000,{},2\n", prompt_tokens);
}

// The experts of a prompt step take the group's tokens, and the ranks
// decoding beside it send every position they verify, drafts included.
// Seven ranks decode 30 sessions each, and the prompt comes to the eighth
// rank in chunks of 2048 tokens: each chunk's step is timed with the group's
// 2048 + 7 x 30 x (1 + drafts) tokens, more than its experts would take with
// one token per sequence.
TEST(Serving, RanksDecodingBesideAPromptSendTheirDraftsToTheExperts) {
  constexpr int64_t kRanks = 8;
  constexpr int64_t kPerRank = 30;
  constexpr int64_t kChunk = 2048;
  constexpr int64_t kPrompt = 4 * kChunk;
  Fixture f = tiny_trace("v41sim_beside_drafts", seven_ranks_decoding_then_a_prompt(kPerRank, kPrompt),
                         "workloads/deployments/h200_agg_8.yaml", testing::model_path("deepseek_v4_1_flash"));
  ASSERT_EQ(f.deployment.prefill.gpus_per_instance, kRanks);
  f.deployment.routing = DeploymentSpec::Routing::kRoundRobin;
  f.deployment.prefill.max_tokens_per_step = kChunk;
  f.deployment.prefill_delay_steps = 0;
  StepTimeCache steps = deployment_step_times(f.model, f.prefill.cost(), f.decode.cost(), f.deployment);
  const int64_t drafts = steps.decode_step(kPerRank, 150).drafts;
  ASSERT_GT(drafts, 0) << "the deployment verifies drafts";
  ASSERT_EQ(steps.decode_step(kPerRank, 3100).drafts, drafts)
      << "the same drafts over the sessions' histories";
  const auto group_per_rank = [](int64_t tokens) { return (tokens + kRanks - 1) / kRanks; };
  const ServingResult r = traced_run(f, 3);
  std::vector<double> chunk_us;  // the long prompt's steps, in order
  for (const TraceSpan& span : r.trace) {
    if (span.kind == TraceSpan::Kind::kPrefillStep && span.start_us >= 1e6)
      chunk_us.push_back(span.duration_us);
  }
  ASSERT_EQ(chunk_us.size(), static_cast<std::size_t>(kPrompt / kChunk));
  const int64_t decoding = (kRanks - 1) * kPerRank;
  for (std::size_t i = 0; i < chunk_us.size(); ++i) {
    const int64_t continuing = i + 1 < chunk_us.size() ? 1 : 0;
    const int64_t context = static_cast<int64_t>(i + 1) * kChunk;
    const double verified =
        steps.prefill_step(1, kChunk, context, continuing, group_per_rank(kChunk + decoding * (1 + drafts)))
            .us;
    EXPECT_NEAR(chunk_us[i], verified, 1e-3) << "chunk " << i;
    const double one_each =
        steps.prefill_step(1, kChunk, context, continuing, group_per_rank(kChunk + decoding)).us;
    EXPECT_GT(chunk_us[i], one_each * 1.001) << "chunk " << i;
  }
}

// A plain decode step's experts take the group's tokens too: a rank of 8
// sequences among ranks of 1 runs its attention on its own batch but its
// experts on the group's mean, so its step is shorter than if every rank ran
// 8 (fewer experts reached, fewer weights read); a rank under the mean keeps
// its own step (at most its own tokens), and either verifies the drafts of
// its plain step.
TEST(Serving, ADecodeStepsExpertsTakeTheGroupsTokens) {
  Fixture f(testing::model_path("deepseek_v4_1_flash"), data("workloads/deployments/h200_agg_8.yaml"),
            data("workloads/agent_coding.yaml"));
  StepTimeCache steps = deployment_step_times(f.model, f.prefill.cost(), f.decode.cost(), f.deployment);
  const StepTimeCache::DecodeStep every = steps.decode_step(8, 65536);
  const StepTimeCache::DecodeStep light = steps.decode_step(1, 65536);
  const int64_t group_per_rank = (8 * (1 + every.drafts) + 7 * (1 + light.drafts)) / 8;
  const StepTimeCache::DecodeStep busiest = steps.decode_in_group(every, 8, 65536, group_per_rank);
  EXPECT_LT(busiest.us, 0.9 * every.us);
  EXPECT_EQ(busiest.drafts, every.drafts);
  EXPECT_DOUBLE_EQ(busiest.tokens_per_sequence, every.tokens_per_sequence);
  EXPECT_DOUBLE_EQ(steps.decode_in_group(light, 1, 65536, group_per_rank).us, light.us);
}

// A rank decoding beside another rank's prompt step runs as that step runs
// (SGLang's data-parallel attention, once any rank extends): its kernels
// launched, not replayed from a CUDA graph, its EP transfers in normal mode.
// Its step is timed so, on the prompt pool's (launched) cost model, while
// its plain step stays the graph-replayed one; both verify the same drafts.
TEST(Serving, ARankDecodingBesidePromptsRunsAsThePromptStep) {
  Fixture f(testing::model_path("deepseek_v4_1_flash"), data("workloads/deployments/h200_agg_8.yaml"),
            data("workloads/agent_coding.yaml"));
  StepShape decode = testing::shape(Phase::kDecode, 1, 1);
  decode.include_draft = false;  // no drafts to choose: the shapes below are the steps
  StepTimeCache steps(f.model, f.prefill.cost(), f.decode.cost(), testing::shape(Phase::kPrefill, 1, 1),
                      decode);
  const StepTimeCache::DecodeStep plain = steps.decode_step(32, 65536);
  const StepTimeCache::DecodeStep beside = steps.decode_in_group(plain, 32, 65536, 0, true);
  StepShape s = decode;
  s.batch = 32;
  s.context = 65536;  // on the cache's grid
  s.beside_prompts = true;
  const StepGraph beside_graph = build_step_graph(f.model, s);
  EXPECT_NEAR(beside.us, time_step(beside_graph, f.prefill.cost()).total_us, 1e-6);
  for (const LayerKernels& layer : beside_graph.layers) {
    for (const Kernel& k : layer.kernels()) EXPECT_FALSE(k.low_latency) << k.name;
  }
  s.beside_prompts = false;
  EXPECT_NEAR(plain.us, testing::timed(f.model, f.decode.cost(), s).total_us, 1e-6);
  EXPECT_NE(beside.us, plain.us);
  EXPECT_EQ(beside.drafts, plain.drafts);
  EXPECT_DOUBLE_EQ(beside.tokens_per_sequence, plain.tokens_per_sequence);
}

// In a run: eight ranks dealt in turn, the first decoding 6 sessions and the
// others 1 each (their other sessions ask for one token and are done at
// once). Each decode step is the first rank's, its experts on the group's
// mean: shorter than its step with every rank at 30, at any history of the
// window (a step grows with its history).
TEST(Serving, AnUnevenDecodeGroupIsTimedByItsMeanTokensInTheExperts) {
  constexpr int64_t kRanks = 8;
  constexpr int64_t kBusiest = 6;
  constexpr int64_t kOthers = 1;
  constexpr int64_t kPrompt = 100;
  std::string rows;
  for (int64_t s = 0; s < kRanks * kBusiest; ++s) {  // session s goes to rank s % 8
    const bool decodes = s % kRanks == 0 || s / kRanks < kOthers;
    rows += fmt::format("0,{},{},{}\n", s, kPrompt, decodes ? 3000 : 1);
  }
  Fixture f = tiny_trace("v41sim_uneven_decode", rows, "workloads/deployments/h200_agg_8.yaml",
                         testing::model_path("deepseek_v4_1_flash"));
  ASSERT_EQ(f.deployment.decode.gpus_per_instance, kRanks);
  f.deployment.routing = DeploymentSpec::Routing::kRoundRobin;
  StepTimeCache steps = deployment_step_times(f.model, f.prefill.cost(), f.decode.cost(), f.deployment);
  const int64_t busiest_drafts = steps.decode_step(kBusiest, kPrompt).drafts;
  const int64_t other_drafts = steps.decode_step(kOthers, kPrompt).drafts;
  const int64_t group_tokens = kBusiest * (1 + busiest_drafts) + (kRanks - 1) * kOthers * (1 + other_drafts);
  const int64_t group_per_rank = (group_tokens + kRanks - 1) / kRanks;
  const ServingResult r = traced_run(f, 2);
  int64_t checked = 0;
  for (const TraceSpan& span : r.trace) {
    if (span.kind != TraceSpan::Kind::kDecodeStep || span.start_us < 1e6 || span.start_us > 2e6) continue;
    ASSERT_EQ(span.size, kBusiest + (kRanks - 1) * kOthers) << "every session decoding";
    EXPECT_LT(span.duration_us, 0.9 * steps.decode_step(kBusiest, kPrompt).us);
    EXPECT_GE(
        span.duration_us,
        steps.decode_in_group(steps.decode_step(kBusiest, kPrompt), kBusiest, kPrompt, group_per_rank).us);
    ++checked;
  }
  EXPECT_GT(checked, 10);
  // The window's histories verify the same drafts (the group's tokens above hold through it).
  EXPECT_EQ(steps.decode_step(kBusiest, 2 * kPrompt + 200).drafts, busiest_drafts);
  EXPECT_EQ(steps.decode_step(kOthers, 2 * kPrompt + 200).drafts, other_drafts);
}

// A prefill delay (SGLang's prefill delayer) holds a prompt on one rank while
// the other has none and decoding goes on, up to the delay's decode steps in
// a row, then runs it; prompts on both ranks at once run at once. Two
// sessions arrive together: the first runs alone (nothing decodes yet), and
// the second, on the other rank, is held while the first decodes. Later one
// more prompt arrives, held as long; or two together, run at once.
TEST(Serving, APrefillDelayHoldsARanksPromptForTheOthers) {
  const auto served = [](const std::string& rows, int64_t delay) {
    Fixture f = tiny_trace("v41sim_prefill_delay", "1.0,0,100,3000\n1.0,1,100,3000\n" + rows);
    for (PoolSpec* pool : {&f.deployment.prefill, &f.deployment.decode}) pool->gpus_per_instance = 2;
    f.deployment.prefill_delay_steps = delay;
    ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
    sim.enable_request_log();
    const ServingResult r = sim.run(1e4, true);
    EXPECT_EQ(r.finished, r.arrived);
    return r;
  };
  EXPECT_EQ(served("", 5).prefill_delays, 5);
  const std::string one_prompt = "2.0,2,1000,2\n";
  const ServingResult held = served(one_prompt, 5);
  const ServingResult not_held = served(one_prompt, 0);
  EXPECT_EQ(held.prefill_delays, 5 + 5);
  EXPECT_EQ(not_held.prefill_delays, 0);
  ASSERT_EQ(held.requests.size(), 3u);
  // Held for five decode steps of two sequences, its first token comes later by about that much.
  EXPECT_GT(held.requests[2].ttft_ms, not_held.requests[2].ttft_ms + 4 * not_held.tpot_ms.p50);
  EXPECT_EQ(served("2.0,2,1000,2\n2.0,3,1000,2\n", 5).prefill_delays, 5);
}

// A returning turn is routed first, then the SSD tier's client on its rank's
// node reads its cached prefix: two turns routed to two nodes read at once,
// each at the client's full rate; two on one node take turns. (Before, one
// queue served every read at the instances' rates pooled.)
TEST(Serving, TheSsdTierKeepsEachSessionsLastContextForItsRetention) {
  Fixture f = tiny_fixed();
  const auto fixed = [](double value) {
    Distribution d;
    d.mean = d.min = d.max = value;
    return d;
  };
  f.workload.turns = fixed(3);
  f.workload.turn_input_tokens = fixed(100);
  f.workload.output_tokens = fixed(50);
  const double bytes_per_token = f.model.kv.global_bytes_per_token;
  // Three turns: 2048 + 2 x 100 new tokens and 3 x 50 outputs, whether or
  // not a 20-s run sees the later turns.
  const ServingResult r = f.run(20);
  ASSERT_GT(r.sessions_arrived, 10);
  EXPECT_DOUBLE_EQ(r.mean_last_context_tokens, 2398);
  EXPECT_DOUBLE_EQ(r.persisted_bytes_per_session, 2398 * bytes_per_token);
  // Steady state by Little's law: sessions/s x bytes x retention (1 h),
  // priced at $5 per TB-month of 730 h, on top of the GPUs.
  const ServingCost cost = serving_cost(r, f.deployment, f.prefill.gpu(), f.decode.gpu());
  const double bytes = static_cast<double>(r.sessions_arrived) / 20.0 * 2398 * bytes_per_token * 3600;
  EXPECT_DOUBLE_EQ(cost.ssd_tier.bytes, bytes);
  EXPECT_NEAR(cost.ssd_tier.usd_per_hour, bytes / 1e12 * 5 / 730, 1e-15);
  EXPECT_NEAR(cost.usd_per_hour,
              2 * f.decode.gpu().price_usd_per_gpu_hour.value() + cost.ssd_tier.usd_per_hour, 1e-12);
  // A third turn past the model's context is refused: the session ends after its second.
  f.model.spec.max_context = 2300;
  EXPECT_DOUBLE_EQ(f.run(20).persisted_bytes_per_session, 2248 * bytes_per_token);
  // A tier without a price is left out of the cost, and said so.
  f.deployment.kv.ssd_usd_per_tb_month = SourcedValue(std::nullopt, {ProvenanceKind::kUnknown, "no quote"});
  const ServingCost unpriced = serving_cost(r, f.deployment, f.prefill.gpu(), f.decode.gpu());
  EXPECT_EQ(unpriced.ssd_tier.usd_per_hour, 0);
  EXPECT_DOUBLE_EQ(unpriced.usd_per_hour, 2 * f.decode.gpu().price_usd_per_gpu_hour.value());
  EXPECT_NE(unpriced.ssd_tier.provenance.find("left out"), std::string::npos) << unpriced.ssd_tier.provenance;
}

// The GPUs' energy at their rated power: kW x the run's hours over its
// output tokens; a GPU whose rated power is unknown gives none, not an error.
TEST(Serving, EnergyPerOutputTokenIsTheGpusRatedPowerOverTheRun) {
  Fixture f = tiny_fixed();
  const ServingResult r = f.run(20);
  ASSERT_GT(r.output_tokens_generated, 0);
  const ServingCost cost = serving_cost(r, f.deployment, f.prefill.gpu(), f.decode.gpu());
  ASSERT_TRUE(cost.power.known);
  const double kw = static_cast<double>(r.gpus) * f.decode.gpu().power_watts.value() / 1e3;
  EXPECT_DOUBLE_EQ(cost.power.rated_kw, kw);
  EXPECT_NEAR(cost.power.kwh_per_million_output,
              kw * 20 / 3600 / static_cast<double>(r.output_tokens_generated) * 1e6, 1e-12);
  GpuProfile unrated = f.decode.gpu();
  unrated.power_watts = SourcedValue(std::nullopt, {ProvenanceKind::kUnknown, "not published"});
  const ServingCost none = serving_cost(r, f.deployment, unrated, unrated);
  EXPECT_FALSE(none.power.known);
  EXPECT_NE(none.power.provenance.find("not published"), std::string::npos);
}

// Every session of the fixed fixture comes back, and so did its earlier
// lives, up to kEarlierLives generations back: the first a turn of 2048 + 1
// tokens, each later one a turn of 1 + 1. That context is the prefix of its
// one turn now, which adds 1 token and answers 1.
int64_t resumed_fixed_earlier_context() { return 2049 + 2 * (ServingSimulation::kEarlierLives - 1); }

// The tier (1 h retention) has the earlier context when the gap is shorter,
// and holds it only until then; longer, the turn computes it all.
TEST(Serving, AResumedSessionFindsItsEarlierContextWhileTheTierKeepsIt) {
  Fixture f = tiny_fixed();
  const auto earlier = static_cast<double>(resumed_fixed_earlier_context());
  const double last = earlier + 2;
  const double retention_s = f.deployment.kv.retention_s;
  ASSERT_EQ(retention_s, 3600);
  f.workload.resumed.fraction = 1;
  f.workload.resumed.gap_s.mean = f.workload.resumed.gap_s.min = f.workload.resumed.gap_s.max = 600;
  const ServingResult kept = f.run(30, 1, true);
  ASSERT_GT(kept.sessions_arrived, 10);
  EXPECT_EQ(kept.sessions_resumed, kept.sessions_arrived);
  EXPECT_EQ(kept.resumed_found, kept.sessions_arrived);
  EXPECT_EQ(kept.kv_tiers.global_hits, kept.arrived);
  EXPECT_EQ(kept.input_tokens_cached, resumed_fixed_earlier_context() * kept.arrived);
  EXPECT_EQ(kept.input_tokens_to_compute, kept.arrived * (1 + f.model.spec.attention.sliding_window));
  EXPECT_DOUBLE_EQ(kept.mean_last_context_tokens, last);
  // The window state, parked minutes at most, is gone after 10: one window replayed.
  EXPECT_EQ(kept.kv_tiers.swa_hits, 0);
  // Held the retention after its last turn, less the earlier context cut to the gap.
  EXPECT_DOUBLE_EQ(kept.mean_hold_s, retention_s - earlier / last * (retention_s - 600));
  const ServingCost cost = serving_cost(kept, f.deployment, f.prefill.gpu(), f.decode.gpu());
  EXPECT_DOUBLE_EQ(cost.ssd_tier.bytes,
                   cost.ssd_tier.sessions_per_s * kept.persisted_bytes_per_session * kept.mean_hold_s);

  f.workload.resumed.gap_s.mean = f.workload.resumed.gap_s.min = f.workload.resumed.gap_s.max = 7200;
  const ServingResult gone = f.run(30, 1, true);
  EXPECT_EQ(gone.sessions_resumed, gone.sessions_arrived);
  EXPECT_EQ(gone.resumed_found, 0);
  EXPECT_EQ(gone.input_tokens_cached, 0);
  EXPECT_EQ(gone.input_tokens_to_compute, (resumed_fixed_earlier_context() + 1) * gone.arrived);
  EXPECT_DOUBLE_EQ(gone.mean_hold_s, retention_s);
}

// A tier of bounded size keeps a context until what it holds fills it: here
// 1 session/s, each leaving `last` tokens, each resumed after 600 s (its
// `earlier` tokens, replaced then). Kept t <= 600 s it holds last x t
// token-seconds per second; kept longer, last x t - earlier x (t - 600).
// Sized for 300 s, no resumed session finds its earlier context; for 1200 s,
// every one does, and the tier is full. It is paid for whole.
TEST(Serving, ABoundedTierKeepsAContextUntilWhatItHoldsFillsIt) {
  Fixture f = tiny_fixed();
  ASSERT_EQ(f.workload.sessions_per_s, 1.0);
  f.workload.resumed.fraction = 1;
  f.workload.resumed.gap_s.mean = f.workload.resumed.gap_s.min = f.workload.resumed.gap_s.max = 600;
  const double bytes_per_token = f.model.kv.global_bytes_per_token;
  const auto earlier = static_cast<double>(resumed_fixed_earlier_context());
  const double last = earlier + 2;
  const auto sized = [&](double token_s) {
    f.deployment.kv.ssd_capacity_tb = SourcedValue::assumed(token_s * bytes_per_token / 1e12, "test");
    return f.run(30, 1, true);
  };
  const ServingResult small = sized(last * 300);
  EXPECT_NEAR(small.tier_keeps_s, 300, 1e-6);
  ASSERT_GT(small.sessions_resumed, 10);
  EXPECT_EQ(small.resumed_found, 0);
  EXPECT_EQ(small.input_tokens_cached, 0);
  const double full = last * 1200 - earlier * 600;
  const ServingResult larger = sized(full);
  EXPECT_NEAR(larger.tier_keeps_s, 1200, 1e-6);
  EXPECT_EQ(larger.resumed_found, larger.sessions_resumed);
  EXPECT_NEAR(larger.mean_hold_s, 1200 - earlier / last * (1200 - 600), 1e-6);
  const ServingCost cost = serving_cost(larger, f.deployment, f.prefill.gpu(), f.decode.gpu());
  const double capacity = full * bytes_per_token;
  EXPECT_NEAR(cost.ssd_tier.capacity_bytes, capacity, 1e-3);
  // Full: what the run's own sessions would hold at that time, at most the capacity.
  const double run_rate = cost.ssd_tier.sessions_per_s / f.workload.sessions_per_s;
  EXPECT_NEAR(cost.ssd_tier.bytes, std::min(1.0, run_rate) * capacity, 1e-6 * capacity);
  EXPECT_NEAR(cost.ssd_tier.usd_per_hour, capacity / 1e12 * 5 / 730, 1e-15);
  // Larger than the retention needs: the retention keeps it (1 h).
  EXPECT_DOUBLE_EQ(sized(last * 7200).tier_keeps_s, f.deployment.kv.retention_s);
}

// A trace's tier is sized from the trace itself: 2 sessions over its 20 s
// (0.1 per second), leaving 170 and 110 tokens. Session 0 comes back after
// about 20 s: kept 5 s, its prefix is gone; kept 100 s, it is found.
TEST(Serving, ABoundedTierSizesItselfFromATrace) {
  Fixture f = tiny_trace("v41sim_trace_tier", "0.0,0,100,10\n10.0,1,100,10\n20.0,0,50,10\n");
  const double stored_bytes_per_s = 0.1 * 140 * f.model.kv.global_bytes_per_token;
  const auto sized_to_keep = [&](double seconds) {
    f.deployment.kv.ssd_capacity_tb = SourcedValue::assumed(seconds * stored_bytes_per_s / 1e12, "test");
    return f.run(30, 1, true);
  };
  const ServingResult short_lived = sized_to_keep(5);
  EXPECT_NEAR(short_lived.tier_keeps_s, 5, 1e-9);
  EXPECT_EQ(short_lived.kv_tiers.global_hits, 0);
  const ServingResult kept = sized_to_keep(100);
  EXPECT_NEAR(kept.tier_keeps_s, 100, 1e-9);
  EXPECT_EQ(kept.kv_tiers.global_hits, 1);
  EXPECT_EQ(kept.input_tokens_cached, 110);
}

// Whether a session is resumed, and its earlier life, come from a stream of
// its own: sessions arrive at the same times and ask the same answers with
// or without resumptions, and those not resumed ask the same prompts.
TEST(Serving, ResumptionsLeaveTheOtherDrawsAlone) {
  Fixture f = tiny_aggregated_chat();
  const auto first_turns = [&f] {
    ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
    sim.enable_request_log();
    std::vector<RequestRecord> firsts;
    for (const RequestRecord& r : sim.run(5).requests) {
      if (r.turn == 0) firsts.push_back(r);
    }
    return firsts;
  };
  const std::vector<RequestRecord> fresh = first_turns();
  f.workload.resumed.fraction = 0.5;
  f.workload.resumed.gap_s = {Distribution::Kind::kExponential, 3600, 0, 60, 86400};
  const std::vector<RequestRecord> mixed = first_turns();
  ASSERT_EQ(fresh.size(), mixed.size());
  ASSERT_GT(fresh.size(), 40u);
  int64_t resumed = 0;
  for (std::size_t i = 0; i < fresh.size(); ++i) {
    EXPECT_EQ(fresh[i].arrival_s, mixed[i].arrival_s) << i;
    EXPECT_EQ(fresh[i].output_tokens, mixed[i].output_tokens) << i;
    EXPECT_EQ(fresh[i].prefix_tokens, 0);
    if (mixed[i].prefix_tokens == 0) {
      EXPECT_EQ(fresh[i].new_tokens, mixed[i].new_tokens) << i;
    } else {
      ++resumed;
    }
  }
  EXPECT_GT(resumed, static_cast<int64_t>(fresh.size()) / 4);
  EXPECT_LT(resumed, static_cast<int64_t>(fresh.size()) * 3 / 4);
}

// A resumed session's earlier life enters the tier as stored the gap ago:
// its global KV while the retention covers the gap, its window state only
// while the host pool's TTL does, without pushing other sessions' out.
TEST(KvTiers, AnEarlierLifeIsStoredTheGapAgo) {
  SessionKvTiers tiers(3600, 300, 1);
  const SimTime now = SimTime::from_s(100);
  tiers.store(7, 500, now);
  tiers.store_earlier(1, 1000, now - SimTime::from_s(1800), now);
  EXPECT_EQ(tiers.counters().swa_evictions, 0);
  EXPECT_EQ(tiers.host_pool_sessions_used(), 1);
  const TierLookup found = tiers.lookup(1, 1000, now);
  EXPECT_EQ(found.cached_tokens, 1000);
  EXPECT_FALSE(found.swa_hit);
  EXPECT_TRUE(tiers.lookup(7, 500, now).swa_hit);
  tiers.store_earlier(2, 1000, now - SimTime::from_s(7200), now);
  EXPECT_EQ(tiers.lookup(2, 1000, now).cached_tokens, 0);
  tiers.store_earlier(3, 1000, now - SimTime::from_s(60), now);
  EXPECT_TRUE(tiers.lookup(3, 1000, now).swa_hit);
  EXPECT_EQ(tiers.counters().swa_evictions, 1);  // session 7's, the pool holding one
}

// A turn refused for a GPU's KV memory ends its session there: the tier
// keeps the context before it, not the turns that never ran. Three turns of
// 2048 + 1, 1000 + 1 and 1000 + 1 tokens on a GPU holding 3500.
TEST(Serving, ARefusedTurnEndsItsSessionAtTheContextBeforeIt) {
  Fixture f = tiny_fixed();
  f.workload.turns = {Distribution::Kind::kFixed, 3, 0, 3, 3};
  f.workload.turn_input_tokens = {Distribution::Kind::kFixed, 1000, 0, 1000, 1000};
  const double room = kv_bytes_per_gpu(f.model, f.deployment, f.deployment.decode, f.decode.gpu());
  f.model.kv.global_bytes_per_token = room / 3500;
  ASSERT_LT(f.model.kv.session_bytes(3050), room);
  ASSERT_GT(f.model.kv.session_bytes(4051), room);
  const ServingResult r = f.run(20, 1, true);
  ASSERT_GT(r.rejected, 5);
  EXPECT_EQ(r.rejected_by_reason.at("final context does not fit in one decode GPU's KV memory"), r.rejected);
  // The sessions whose third turn came were refused there and end at 3050;
  // those the run ended sooner count their turns as drawn (4051).
  const auto refused = static_cast<double>(r.rejected);
  const double others = static_cast<double>(r.sessions_arrived) - refused;
  ASSERT_GT(others, 0);
  EXPECT_DOUBLE_EQ(r.mean_last_context_tokens, (refused * 3050 + others * 4051) / (refused + others));
}

// A trace's refused row leaves its session's context as it was: the next
// row builds on the turns that ran, and finds them in the tier.
TEST(Serving, ATracesRefusedRowLeavesItsSessionsContext) {
  Fixture f = tiny_trace("v41sim_trace_refused", "0.0,0,100,10\n10.0,0,5000,10\n20.0,0,50,10\n");
  f.model.spec.max_context = 1000;
  ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
  sim.enable_request_log();
  const ServingResult r = sim.run(30, true);
  ASSERT_EQ(r.requests.size(), 3u);
  EXPECT_EQ(r.requests[1].status, "rejected: context exceeds the model's max_context");
  EXPECT_EQ(r.requests[2].prefix_tokens, 110);
  EXPECT_EQ(r.requests[2].cached_tokens, 110);
  EXPECT_DOUBLE_EQ(r.mean_last_context_tokens, 170);
}

// A trace's session sends a turn once it has the previous turn's answer,
// which is in the turn's prefix: a row that comes sooner (a trace replayed
// faster than recorded) waits for it, then finds that context in the tier.
TEST(Serving, ATracesTurnWaitsForItsSessionsPreviousAnswer) {
  Fixture f = tiny_trace("v41sim_trace_held", "0.0,0,100,2000\n0.1,0,50,10\n0.1,1,100,10\n0.2,0,30,10\n");
  ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
  sim.enable_request_log();
  const ServingResult r = sim.run(60);  // not drained: the run goes on past the trace's last row
  ASSERT_EQ(r.requests.size(), 4u);
  const auto finished_s = [](const RequestRecord& x) { return x.arrival_s + x.e2e_ms / 1e3; };
  const RequestRecord& first = r.requests[0];
  ASSERT_EQ(first.status, "finished");
  ASSERT_GT(finished_s(first), 0.2) << "the first answer must outlast the later rows' times";
  // The other session's row is sent at its time.
  EXPECT_EQ(r.requests[1].session, 1);
  EXPECT_DOUBLE_EQ(r.requests[1].held_ms, 0);
  // Session 0's later turns, in order, each once the one before has ended.
  const RequestRecord& second = r.requests[2];
  const RequestRecord& third = r.requests[3];
  EXPECT_EQ(second.turn, 1);
  EXPECT_EQ(third.turn, 2);
  EXPECT_GE(second.arrival_s, finished_s(first) - 1e-9);
  EXPECT_GE(third.arrival_s, finished_s(second) - 1e-9);
  EXPECT_NEAR(second.held_ms, (second.arrival_s - 0.1) * 1e3, 1e-6);
  EXPECT_NEAR(third.held_ms, (third.arrival_s - 0.2) * 1e3, 1e-6);
  // Each finds the context its previous turn left.
  EXPECT_EQ(second.prefix_tokens, 2100);
  EXPECT_EQ(second.cached_tokens, 2100);
  EXPECT_EQ(third.cached_tokens, 2160);
  EXPECT_EQ(r.kv_tiers.global_misses, 0);
  EXPECT_EQ(r.trace_turns_held, 2);
  EXPECT_NEAR(r.trace_turns_held_s, (second.held_ms + third.held_ms) / 1e3, 1e-9);
  EXPECT_EQ(r.trace_turns_still_held, 0);
  // Drained, the window of arrivals ends at the trace's last row, or later
  // where rows waited past it: it lasts until the last one is sent.
  ServingSimulation drained(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
  drained.enable_request_log();
  const ServingResult d = drained.run(60, true);
  ASSERT_EQ(d.requests.size(), 4u);
  EXPECT_EQ(d.arrived, 4);
  EXPECT_EQ(d.trace_turns_held, 2);
  EXPECT_EQ(d.trace_turns_still_held, 0);
  EXPECT_NEAR(d.duration_s, d.requests[3].arrival_s, 1e-9);
  EXPECT_GT(d.duration_s, 0.2);
}

// Speculative decoding: each step a sequence emits its own token and the
// drafts it accepted, each position with the draft's acceptance given the
// ones before it (the model's per-position assumption), drawn per request:
// over seeds, one answer's decode steps vary, their tokens averaging what the
// step cache expected when it chose the drafts.
TEST(Serving, ASequenceEmitsTheDraftsItsStepsAccept) {
  Fixture f = tiny_trace("v41sim_drafts", "1.0,0,1000,2001\n", "workloads/deployments/h200_agg_8.yaml",
                         testing::model_path("deepseek_v4_1_flash"));
  StepTimeCache steps = deployment_step_times(f.model, f.prefill.cost(), f.decode.cost(), f.deployment);
  const StepTimeCache::DecodeStep step = steps.decode_step(1, 3001);
  ASSERT_GT(step.drafts, 0) << "the bundled deployment decodes with drafts";
  std::set<int64_t> step_counts;
  double tokens_per_step = 0;
  constexpr int kSeeds = 24;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    const ServingResult r = f.run(60, seed, true);
    ASSERT_EQ(r.finished, 1);
    step_counts.insert(r.decode_steps);
    tokens_per_step += 2000.0 / static_cast<double>(r.decode_steps) / kSeeds;
  }
  EXPECT_GT(step_counts.size(), 3u) << "the steps an answer takes vary with its draws";
  EXPECT_NEAR(tokens_per_step / step.tokens_per_sequence, 1.0, 0.02)
      << step.drafts << " drafts, expected " << step.tokens_per_sequence << " tokens a step";
}

// Each decode step streams a request one chunk (no drafts here: one token):
// the gaps add up to its decode, and a prompt's step run between two of a
// decoding request's steps (aggregated, prefill first) is a gap that long.
TEST(Serving, ChunkGapsAddUpToEachRequestsDecodeAndShowAPromptsStall) {
  Fixture f = tiny_trace("v41sim_itl", "0.0,0,100,400\n0.05,1,2000,10\n");
  ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
  sim.enable_request_log();
  sim.enable_trace(60);
  const ServingResult r = sim.run(60, true);
  ASSERT_EQ(r.finished, 2);
  int64_t chunks = 0;
  double decode_ms = 0, longest_ms = 0;
  for (const RequestRecord& x : r.requests) {
    chunks += x.output_tokens - 1;
    decode_ms += x.tpot_ms * static_cast<double>(x.output_tokens - 1);
    longest_ms = std::max(longest_ms, x.max_itl_ms);
  }
  EXPECT_EQ(r.itl_ms.count, chunks);
  EXPECT_NEAR(r.itl_ms.mean * static_cast<double>(r.itl_ms.count), decode_ms, decode_ms * 1e-9);
  EXPECT_EQ(r.itl_ms.max, longest_ms);
  // The second prompt's step ran while the first request decoded.
  double prompt_step_ms = 0, decode_step_ms = 0;
  for (const TraceSpan& span : r.trace) {
    if (span.kind == TraceSpan::Kind::kPrefillStep && span.start_us > 0)
      prompt_step_ms = std::max(prompt_step_ms, span.duration_us / 1e3);
    if (span.kind == TraceSpan::Kind::kDecodeStep)
      decode_step_ms = std::max(decode_step_ms, span.duration_us / 1e3);
  }
  ASSERT_GT(prompt_step_ms, 2 * decode_step_ms) << "the fixture's prompt step stands out";
  EXPECT_GE(r.requests[0].max_itl_ms, prompt_step_ms);
  EXPECT_LE(r.requests[0].max_itl_ms, prompt_step_ms + 2 * decode_step_ms);
  EXPECT_LT(r.requests[1].max_itl_ms, prompt_step_ms) << "the second request decoded after it";
  EXPECT_LE(r.itl_ms.p50, decode_step_ms) << "most gaps are a decode step";
}

// An ITL limit holds each request to its longest gap, its worst stall: the
// request that waited out the other's prompt step misses it, the other
// (whose mean gap, TPOT, the stall hardly moves) does not; without one both
// are within.
TEST(Serving, AnItlLimitHoldsEachRequestToItsLongestGap) {
  const auto served = [](double itl_limit_ms) {
    Fixture f = tiny_trace("v41sim_itl_limit", "0.0,0,100,400\n0.05,1,2000,10\n");
    f.deployment.sla.ttft_ms = 1e6;
    f.deployment.sla.tpot_ms = 1e6;
    f.deployment.sla.itl_ms = itl_limit_ms;
    ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
    sim.enable_request_log();
    return sim.run(60, true);
  };
  const ServingResult free = served(0);
  ASSERT_EQ(free.finished, 2);
  EXPECT_TRUE(free.requests[0].within_sla && free.requests[1].within_sla);
  const double stalled_ms = free.requests[0].max_itl_ms;
  const double smooth_ms = free.requests[1].max_itl_ms;
  ASSERT_GT(stalled_ms, 2 * smooth_ms) << "the fixture's first request waits out a prompt step";
  EXPECT_EQ(free.longest_itl_ms.count, 2);
  EXPECT_EQ(free.longest_itl_ms.max, stalled_ms);

  const ServingResult limited = served((stalled_ms + smooth_ms) / 2);
  EXPECT_FALSE(limited.requests[0].within_sla);
  EXPECT_TRUE(limited.requests[1].within_sla);
  EXPECT_DOUBLE_EQ(limited.goodput_fraction, 0.5);
  EXPECT_EQ(limited.requests[0].max_itl_ms, stalled_ms) << "a limit judges the run, it does not change it";
  EXPECT_EQ(limited.sla_misses.itl, 1);
  EXPECT_EQ(limited.sla_misses.ttft + limited.sla_misses.tpot + limited.sla_misses.unfinished, 0);
  // A limit at the longest gap itself admits it.
  EXPECT_TRUE(served(stalled_ms).requests[0].within_sla);
}

TEST(Serving, TheRequestLogAccountsForEveryRequest) {
  Fixture f = v41_agents();
  ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
  sim.enable_request_log();
  const ServingResult r = sim.run(90);
  ASSERT_EQ(static_cast<int64_t>(r.requests.size()), r.arrived);
  int64_t finished = 0, in_flight = 0, cached = 0;
  std::vector<double> ttft, tpot;
  for (const RequestRecord& x : r.requests) {
    cached += x.cached_tokens;
    if (x.status == "in flight") ++in_flight;
    if (x.status != "finished") continue;
    ++finished;
    EXPECT_EQ(x.generated, x.output_tokens) << x.id;
    EXPECT_GE(x.prefill_instance, 0) << x.id;
    EXPECT_GE(x.e2e_ms, x.ttft_ms) << x.id;
    ttft.push_back(x.ttft_ms);
    if (x.output_tokens > 1) {
      tpot.push_back(x.tpot_ms);
      EXPECT_GE(x.decode_instance, 0) << x.id;  // disaggregated: placed on a decode rank
      // Its gaps average at least TPOT (a chunk holds one token or more); the longest is no shorter.
      EXPECT_GE(x.max_itl_ms, x.tpot_ms * (1 - 1e-12)) << x.id;
    }
  }
  double longest_gap_ms = 0;
  for (const RequestRecord& x : r.requests) {
    if (x.measured && !std::isnan(x.max_itl_ms)) longest_gap_ms = std::max(longest_gap_ms, x.max_itl_ms);
  }
  EXPECT_EQ(longest_gap_ms, r.itl_ms.max);
  // What an ITL limit judges: each finished request's longest gap, of those with more than one token.
  std::vector<double> longest;
  for (const RequestRecord& x : r.requests) {
    if (x.measured && x.status == "finished" && x.output_tokens > 1) longest.push_back(x.max_itl_ms);
  }
  EXPECT_DOUBLE_EQ(summarize(longest).p99, r.longest_itl_ms.p99);
  EXPECT_EQ(summarize(longest).count, r.longest_itl_ms.count);
  // The misses by limit are the log's: each finished request against each limit, the rest unfinished.
  SlaMisses logged;
  int64_t within = 0, arrived = 0;
  for (const RequestRecord& x : r.requests) {
    if (!x.measured) continue;
    ++arrived;
    within += x.within_sla ? 1 : 0;
    if (x.status != "finished") {
      ++logged.unfinished;
      continue;
    }
    logged.ttft += x.ttft_ms > f.deployment.sla.ttft_ms ? 1 : 0;
    logged.tpot += x.output_tokens > 1 && x.tpot_ms > f.deployment.sla.tpot_ms ? 1 : 0;
  }
  EXPECT_EQ(r.sla_misses.unfinished, logged.unfinished);
  EXPECT_EQ(r.sla_misses.ttft, logged.ttft);
  EXPECT_EQ(r.sla_misses.tpot, logged.tpot);
  EXPECT_EQ(r.sla_misses.itl, 0) << "no ITL limit";
  EXPECT_GE(r.sla_misses.unfinished + r.sla_misses.ttft + r.sla_misses.tpot, arrived - within);
  EXPECT_EQ(finished, r.finished);
  EXPECT_EQ(in_flight, r.in_flight);
  EXPECT_EQ(cached, r.input_tokens_cached);
  EXPECT_DOUBLE_EQ(summarize(ttft).mean, r.ttft_ms.mean);
  EXPECT_DOUBLE_EQ(summarize(tpot).p99, r.tpot_ms.p99);
  // The SSD tier's two clients (two 8-GPU prefill instances, one node each)
  // are busy for every routed request's cached prefix at the per-client rate.
  double read_s = 0;
  for (const RequestRecord& x : r.requests) {
    if (x.prefill_instance >= 0) {
      read_s += static_cast<double>(x.cached_tokens) * f.model.kv.global_bytes_per_token /
                f.deployment.kv.ssd_read_bytes_per_s.value();
    }
  }
  ASSERT_GT(read_s, 0);
  EXPECT_NEAR(r.ssd_clients_busy_fraction, read_s / (90 * 2), 1e-12);
  // A request the model refuses says why, and reached no stage.
  Fixture small = tiny_fixed();
  small.model.spec.max_context = 1000;  // below every 2048-token prompt
  ServingSimulation refused(small.model, small.prefill.cost(), small.decode.cost(), small.deployment,
                            small.workload, 1);
  refused.enable_request_log();
  const ServingResult none = refused.run(10);
  ASSERT_FALSE(none.requests.empty());
  for (const RequestRecord& x : none.requests) {
    EXPECT_EQ(x.status, "rejected: context exceeds the model's max_context");
    EXPECT_EQ(x.prefill_instance, -1);
    EXPECT_TRUE(std::isnan(x.ttft_ms));
  }
}

TEST(Serving, EachNodeReadsItsPrefixesFromTheSsdTier) {
  const std::string trace = "1.0,0,8192,2\n1.0,1,8192,2\n5.0,0,10,2\n5.0,1,10,2\n";
  // The mean SSD read over the four turns, in units of one returning turn's read alone.
  const auto mean_reads = [](Fixture& f) {
    const ServingResult r = f.run(10, 1, true);
    EXPECT_EQ(r.finished, 4);
    EXPECT_GT(r.input_tokens_cached, 8192 * 2);  // both second turns found their first turn's KV
    const double each_ms = static_cast<double>(r.input_tokens_cached) / 2 *
                           f.model.kv.global_bytes_per_token / f.deployment.kv.ssd_read_bytes_per_s.value() *
                           1e3;
    return r.mean_ssd_read_ms / each_ms;
  };
  Fixture instances = tiny_trace("v41sim_ssd_clients", trace);
  instances.deployment.prefill.instances = instances.deployment.decode.instances = 2;
  EXPECT_NEAR(mean_reads(instances), 2.0 / 4, 1e-9);  // two reads at once
  Fixture one_node = tiny_trace("v41sim_ssd_clients", trace);
  one_node.deployment.prefill.gpus_per_instance = one_node.deployment.decode.gpus_per_instance = 2;
  EXPECT_NEAR(mean_reads(one_node), (1.0 + 2.0) / 4, 1e-9);  // the second waits for the first
  // The same two ranks on nodes of one GPU each.
  const std::string h200 = testing::gpu_path("h200");
  int overridden = 0;
  for (const SourcedNumber& v : find_sourced_numbers(h200, kSourceKinds)) {
    if (v.field != "gpus_per_node") continue;
    ++overridden;
    const ScopedYamlOverride one_gpu_nodes(h200, with_value_replaced(yaml_text(h200), v, "1"));
    Fixture two_nodes = tiny_trace("v41sim_ssd_clients", trace);
    two_nodes.deployment.prefill.gpus_per_instance = two_nodes.deployment.decode.gpus_per_instance = 2;
    EXPECT_NEAR(mean_reads(two_nodes), 2.0 / 4, 1e-9);
  }
  EXPECT_EQ(overridden, 1);
}

// Disaggregated, the decode side places requests by the deployment's
// routing too. Long and short answers alternate on two decode GPUs: dealt in
// turn, both long ones land on the first GPU (the short ones end at once);
// counted by requests, the second long one goes to the GPU left idle. (Before,
// decode went by KV held whatever the routing said.)
// Dealt in turn, a request is given its decode rank at once and waits there
// (SGLang's data-parallel controller): eight decode GPUs of one sequence
// each, nine requests; the ninth is given the first rank and waits for the
// first request's long answer, though the seven others, with one token to
// decode, left their ranks long before. By load, it takes the first free rank.
// They arrive 50 ms apart, each prefilled before the next comes (two done in
// one step would be dealt in the step's rank order, not their arrival order).
TEST(Serving, RoundRobinDecodeWaitsAtTheRankItWasGiven) {
  std::string rows;
  for (int i = 0; i < 9; ++i) rows += fmt::format("{},{},1000,{}\n", 0.05 * i, i, i == 0 ? 3000 : 2);
  Fixture f = tiny_trace("v41sim_rr_decode", rows, "tests/data/cp_one_decode_slot.yaml",
                         testing::model_path("deepseek_v4_1_flash"));
  const auto ninth = [&f](DeploymentSpec::Routing routing) {
    f.deployment.routing = routing;
    ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
    sim.enable_request_log();
    const ServingResult r = sim.run(120, true);
    EXPECT_EQ(r.finished, 9);
    return std::pair{r.requests.at(8), r.requests.at(0)};
  };
  const auto [dealt, first] = ninth(DeploymentSpec::Routing::kRoundRobin);
  EXPECT_EQ(dealt.decode_rank, first.decode_rank);
  // It is admitted only when the first request's answer is done (the two sums in ms, to rounding).
  EXPECT_GE(dealt.arrival_s * 1e3 + dealt.ttft_ms + dealt.decode_wait_ms + 1e-6,
            first.arrival_s * 1e3 + first.e2e_ms);
  const auto [by_load, also_first] = ninth(DeploymentSpec::Routing::kLeastLoad);
  EXPECT_NE(by_load.decode_rank, also_first.decode_rank);
  EXPECT_LT(by_load.decode_wait_ms, 0.1 * dealt.decode_wait_ms);
}

TEST(Serving, DisaggregatedDecodeFollowsTheRouting) {
  Fixture f =
      tiny_trace("v41sim_decode_routing", "1.0,0,2048,1000\n1.02,1,2048,2\n1.04,2,2048,1000\n1.06,3,2048,2\n",
                 "tests/data/one_gpu.yaml");
  f.deployment.decode.gpus_per_instance = 2;  // data-parallel ranks (a dense model: EP 1)
  const auto imbalance = [&f](DeploymentSpec::Routing routing) {
    f.deployment.routing = routing;
    const ServingResult r = f.run(1e4, 1, true);
    EXPECT_EQ(r.finished, 4);
    return r.decode_rank_imbalance;
  };
  EXPECT_LT(imbalance(DeploymentSpec::Routing::kLeastRequests), 1.05);
  EXPECT_LT(imbalance(DeploymentSpec::Routing::kLeastLoad), 1.05);
  EXPECT_GT(imbalance(DeploymentSpec::Routing::kRoundRobin), 1.3);
}

// Bursty arrivals keep their mean whatever the burst: a burst_factor below 1
// (a lull) once capped the rest of each period at the lull's rate, so 2
// sessions/s arrived as 1.33.
TEST(Serving, BurstyArrivalsKeepTheirMeanRate) {
  for (const double factor : {3.0, 0.5}) {
    Fixture f = tiny_aggregated_chat();
    f.workload.sessions_per_s = 2;
    f.workload.burst_factor = factor;
    f.workload.burst_fraction = 0.5;
    f.workload.burst_period_s = 10;
    const double seconds = 1000;
    const double expected = f.workload.sessions_per_s * seconds;
    const ServingResult r = f.run(seconds);
    EXPECT_NEAR(static_cast<double>(r.sessions_arrived), expected, 4 * std::sqrt(expected)) << factor;
  }
}

TEST(Serving, SameSeedSameResultOtherSeedOtherResult) {
  Fixture f = v41_agents();
  const ServingResult a = f.run(200, 7);
  const ServingResult b = f.run(200, 7);
  const ServingResult c = f.run(200, 8);
  EXPECT_EQ(a.arrived, b.arrived);
  EXPECT_EQ(a.ttft_ms.mean, b.ttft_ms.mean);
  EXPECT_EQ(a.e2e_ms.p99, b.e2e_ms.p99);
  EXPECT_EQ(a.events, b.events);
  EXPECT_NE(a.events, c.events);
}

TEST(Serving, LittlesLawHoldsInSteadyState) {
  Fixture f = v41_agents();
  const ServingResult r = f.run(1800);
  const double littles = r.arrival_rate_per_s * r.mean_sojourn_s;
  EXPECT_NEAR(r.mean_in_system / littles, 1.0, 0.05);
}

// One prefill GPU, fixed 2048-token prompts, one output token each: the
// prefill queue is M/D/1, whose mean wait is rho * D / (2 (1 - rho)).
TEST(Serving, PrefillQueueMatchesMD1) {
  Fixture f = tiny_fixed();
  StepTimeCache steps(f.model, f.prefill.cost(), f.decode.cost(), testing::shape(Phase::kPrefill, 1, 1, 1),
                      testing::shape(Phase::kDecode, 1, 1, 1));
  const double service_s = steps.prefill_step(1, 2048, 2048).us * 1e-6;
  const double rho = 0.5;
  f.workload.sessions_per_s = rho / service_s;
  const double seconds = 200000.0 / f.workload.sessions_per_s;  // about 200,000 requests
  const ServingResult r = f.run(seconds);
  const double expected_ms = rho * service_s / (2.0 * (1.0 - rho)) * 1e3;
  std::cout << "M/D/1: D " << service_s * 1e3 << " ms, expected wait " << expected_ms << " ms, measured "
            << r.prefill_wait_ms.mean << " ms over " << r.finished << " requests\n";
  EXPECT_NEAR(r.prefill_wait_ms.mean / expected_ms, 1.0, 0.05)
      << "D = " << service_s * 1e3 << " ms, measured " << r.prefill_wait_ms.mean << " ms";
}

// An engine's time outside its forward steps (DeploymentSpec::step_overhead_us)
// ends every step that much later: a lone request's first token waits one
// step's worth, each later token one more, and the step times a deployment's
// cache gives carry it too.
TEST(Serving, AnEnginesStepOverheadEndsEveryStepLater) {
  Fixture f = tiny_trace("v41sim_step_overhead", "0.0,0,100,400\n");
  const ServingResult plain = f.run(60, 1, true);
  const StepTimeCache::StepCost plain_step =
      deployment_step_times(f.model, f.prefill.cost(), f.decode.cost(), f.deployment)
          .prefill_step(1, 100, 100);
  f.deployment.step_overhead_us = SourcedValue::assumed(2000, "test");
  const ServingResult slower = f.run(60, 1, true);
  ASSERT_EQ(plain.finished, 1);
  ASSERT_EQ(slower.finished, 1);
  EXPECT_EQ(slower.decode_steps, plain.decode_steps);
  EXPECT_NEAR(slower.ttft_ms.mean - plain.ttft_ms.mean, 2.0, 1e-6);
  EXPECT_NEAR(slower.tpot_ms.mean - plain.tpot_ms.mean, 2.0, 1e-6);
  const StepTimeCache::StepCost slower_step =
      deployment_step_times(f.model, f.prefill.cost(), f.decode.cost(), f.deployment)
          .prefill_step(1, 100, 100);
  EXPECT_NEAR(slower_step.us - plain_step.us, 2000.0, 1e-6);
  EXPECT_DOUBLE_EQ(slower_step.communication_us, plain_step.communication_us);
  // The kernel model's band covers the forward's share of the step, not the engine's overhead.
  ASSERT_GT(plain_step.band.covered_share, 0.0);
  EXPECT_NEAR(slower_step.band.covered_share,
              plain_step.band.covered_share * plain_step.us / (plain_step.us + 2000.0), 1e-12);
  EXPECT_DOUBLE_EQ(slower_step.band.pct, plain_step.band.pct);
}

TEST(Serving, OverloadGrowsQueuesInsteadOfFailing) {
  Fixture f = tiny_fixed();
  StepTimeCache steps(f.model, f.prefill.cost(), f.decode.cost(), testing::shape(Phase::kPrefill, 1, 1, 1),
                      testing::shape(Phase::kDecode, 1, 1, 1));
  f.workload.sessions_per_s = 1.5 / (steps.prefill_step(1, 2048, 2048).us * 1e-6);  // 150% load
  const ServingResult r = f.run(20);
  ASSERT_GE(r.occupancy.size(), 100u);
  const auto& mid = r.occupancy[r.occupancy.size() / 2];
  const auto& last = r.occupancy.back();
  EXPECT_GT(last.prefill_queue, mid.prefill_queue);
  EXPECT_GT(mid.prefill_queue, 100);
  EXPECT_EQ(r.arrived, r.finished + r.in_flight + r.rejected);
  EXPECT_GT(r.in_flight, r.finished / 4);
}

TEST(Serving, DisablingCedRaisesPrefillTime) {
  Fixture with = Fixture(testing::model_path("deepseek_v4_1_flash"),
                         data("workloads/deployments/h200_pd_64.yaml"), data("workloads/long_doc_qa.yaml"));
  Fixture without =
      Fixture(testing::model_path("deepseek_v4_1_flash"), data("workloads/deployments/h200_pd_64.yaml"),
              data("workloads/long_doc_qa.yaml"));
  ModelSpec spec = without.model.spec;
  spec.ced.reset();
  without.model = analyze_model(spec);
  // Light load, so requests seldom share prefill steps and the ratio is the model's.
  with.workload.sessions_per_s = without.workload.sessions_per_s = 0.01;
  const ServingResult a = with.run(3000);
  const ServingResult b = without.run(3000);
  // Without CED every prompt token runs 40 layers instead of 20 (+ layer 20's projections).
  std::cout << "prefill ms with CED " << a.mean_prefill_ms << ", without " << b.mean_prefill_ms << "\n";
  EXPECT_GT(b.mean_prefill_ms / a.mean_prefill_ms, 1.6);
  EXPECT_LT(b.mean_prefill_ms / a.mean_prefill_ms, 2.4);
}

// A 64K-token prompt in 16K chunks: under CED the first three chunks run
// no decoder rows, so each is timed as a continuing chunk; the last as one
// that ends its prompt (and runs the decoder's last 140 rows). Alone on its
// instance, its tokens are all its experts see, spread over the EP group.
TEST(Serving, OnlyAPromptsLastChunkRunsTheCedDecoder) {
  Fixture f = Fixture(testing::model_path("deepseek_v4_1_flash"),
                      data("workloads/deployments/h200_pd_64.yaml"), data("workloads/long_doc_qa.yaml"));
  const int64_t chunk = f.deployment.prefill.max_tokens_per_step;
  ASSERT_EQ(chunk, 16384);
  f.workload.first_input_tokens.min = f.workload.first_input_tokens.max = f.workload.first_input_tokens.mean =
      static_cast<double>(4 * chunk);
  f.workload.sessions_per_s = 0.001;  // one prompt at a time
  StepTimeCache steps = deployment_step_times(f.model, f.prefill.cost(), f.decode.cost(), f.deployment);
  const ServingResult r = traced_run(f, 2000);
  std::vector<double> prefill_us;
  for (const TraceSpan& span : r.trace) {
    if (span.kind == TraceSpan::Kind::kPrefillStep) prefill_us.push_back(span.duration_us);
  }
  ASSERT_GE(prefill_us.size(), 4u);
  for (int64_t i = 0; i < 4; ++i) {
    const int64_t continuing = i < 3 ? 1 : 0;
    const int64_t group_tokens_per_rank = chunk / f.deployment.prefill.gpus_per_instance;
    EXPECT_NEAR(prefill_us[static_cast<std::size_t>(i)],
                steps.prefill_step(1, chunk, (i + 1) * chunk, continuing, group_tokens_per_rank).us, 1e-3)
        << "chunk " << i;
    // Costed as if every rank ran such a chunk, it would take longer: the experts would see 8 times the rows.
    EXPECT_GT(steps.prefill_step(1, chunk, (i + 1) * chunk, continuing).us,
              1.1 * prefill_us[static_cast<std::size_t>(i)]);
  }
  EXPECT_LT(steps.prefill_step(1, chunk, 3 * chunk, 1).us, steps.prefill_step(1, chunk, 3 * chunk, 0).us);
}

TEST(Serving, ContextBeyondTheModelIsRejectedWithAReason) {
  Fixture f = Fixture(testing::model_path("deepseek_v4_1_flash"),
                      data("workloads/deployments/h200_pd_64.yaml"), data("workloads/stress_1m.yaml"));
  f.workload.first_input_tokens.min = f.workload.first_input_tokens.max = f.workload.first_input_tokens.mean =
      1048000;
  f.workload.output_tokens.min = 1000;
  f.workload.sessions_per_s = 0.5;
  const ServingResult r = f.run(60);
  EXPECT_GT(r.rejected, 0);
  EXPECT_EQ(r.rejected_by_reason.count("context exceeds the model's max_context"), 1u);
  EXPECT_EQ(r.arrived, r.finished + r.in_flight + r.rejected);
}

TEST(Serving, SpeculativeDecodingShortensTheInterTokenTime) {
  Fixture with = v41_agents();
  Fixture without = v41_agents();
  without.deployment.decode.speculative_decoding = false;
  const ServingResult a = with.run(300);
  const ServingResult b = without.run(300);
  EXPECT_LT(a.tpot_ms.mean, 0.8 * b.tpot_ms.mean);
}

// h200_pd_64.yaml with `keys` added to its decode pool, written to a temp
// file named after `stem`; its path.
std::string pd_64_decode_with(const std::string& keys, const std::string& stem) {
  std::ifstream in(data("workloads/deployments/h200_pd_64.yaml"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string key = "speculative_decoding: true";
  EXPECT_NE(text.find(key), std::string::npos);
  const auto path = std::filesystem::temp_directory_path() / ("v41sim_" + stem + ".yaml");
  std::ofstream(path) << text.replace(text.find(key), key.size(), key + ", " + keys);
  return path.string();
}

// Loading `path` is refused, the error naming `field` and a line.
void expect_refused(const std::string& path, const std::string& field) {
  try {
    load_deployment_file(path);
    ADD_FAILURE() << field << ": a bad value was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(e.where().field.find(field), std::string::npos) << e.where().field;
    EXPECT_GT(e.where().line, 0);
  }
}

// A long decode step (batch 8, 524,288 tokens, `queries` a sequence) of the
// deployment's decode pool on H200.
double long_decode_us(const DeploymentSpec& deployment, int64_t queries) {
  const ModelAnalysis v41 = testing::analyze("deepseek_v4_1_flash");
  const testing::GpuUnderTest h200("h200");
  StepShape s = pool_step_template(v41, deployment.decode, h200.model.gpu());
  s.phase = Phase::kDecode;
  s.batch = 8;
  s.context = 524288;
  s.decode_tokens_per_sequence = queries;
  return testing::timed(v41, h200.cost, s).total_us;
}

// An engine that runs each projection of one input alone (a deployment's
// fuse_input_projections: false) decodes more slowly: narrow GEMMs wait on
// their load pipelines. The key is read, and a bad value is refused.
TEST(Serving, SeparateProjectionsSlowDecode) {
  Fixture fused = v41_agents();
  Fixture separate = v41_agents();
  separate.deployment.decode.fuse_input_projections = false;
  EXPECT_GT(separate.run(200).tpot_ms.mean, fused.run(200).tpot_ms.mean);

  const std::string path = pd_64_decode_with("fuse_input_projections: false", "fuse_projections");
  EXPECT_FALSE(load_deployment_file(path).decode.fuse_input_projections);
  EXPECT_TRUE(load_deployment_file(path).prefill.fuse_input_projections);
  expect_refused(pd_64_decode_with("fuse_input_projections: maybe", "fuse_projections"),
                 "fuse_input_projections");
}

// An engine whose decode splits a sequence's drafts from its token for the
// indexer (a decode pool's draft_queries_share_index_keys: false) reads the
// index keys once a query and decodes more slowly at long contexts; the key
// is read from the decode pool, and a bad value is refused.
TEST(Serving, DraftsReadingTheirIndexKeysApartSlowDecode) {
  const DeploymentSpec apart =
      load_deployment_file(pd_64_decode_with("draft_queries_share_index_keys: false", "draft_index_keys"));
  const DeploymentSpec shared = load_deployment_file(data("workloads/deployments/h200_pd_64.yaml"));
  EXPECT_FALSE(apart.decode.engine.draft_queries_share_index_keys);
  EXPECT_TRUE(shared.decode.engine.draft_queries_share_index_keys);
  EXPECT_GT(long_decode_us(apart, 6), long_decode_us(shared, 6));
  expect_refused(pd_64_decode_with("draft_queries_share_index_keys: often", "draft_index_keys"),
                 "draft_queries_share_index_keys");
}

// An engine with no sparse logits kernel (either pool's
// reindex_scores_pool_only: false) scores every position in a Reindex layer:
// slower decode at long contexts; the key is read, a bad value refused.
TEST(Serving, ReindexScoringEveryPositionSlowsLongDecode) {
  const DeploymentSpec every =
      load_deployment_file(pd_64_decode_with("reindex_scores_pool_only: false", "reindex_scoring"));
  EXPECT_FALSE(every.decode.engine.reindex_scores_pool_only);
  EXPECT_TRUE(every.prefill.engine.reindex_scores_pool_only);
  EXPECT_GT(long_decode_us(every, 1),
            long_decode_us(load_deployment_file(data("workloads/deployments/h200_pd_64.yaml")), 1));
  expect_refused(pd_64_decode_with("reindex_scores_pool_only: 2", "reindex_scoring"),
                 "reindex_scores_pool_only");
}

// An engine that runs the routed experts as W4A16 (a pool's
// routed_expert_math: bf16, Marlin's kernels) decodes more slowly on Hopper;
// fp8 is the default, and another word is refused.
TEST(Serving, W4a16ExpertsSlowDecode) {
  const DeploymentSpec bf16 =
      load_deployment_file(pd_64_decode_with("routed_expert_math: bf16", "expert_math"));
  const DeploymentSpec fp8 =
      load_deployment_file(pd_64_decode_with("routed_expert_math: fp8", "expert_math"));
  const DeploymentSpec as_shipped = load_deployment_file(data("workloads/deployments/h200_pd_64.yaml"));
  EXPECT_TRUE(bf16.decode.engine.experts_bf16_math);
  EXPECT_FALSE(bf16.prefill.engine.experts_bf16_math);
  EXPECT_FALSE(fp8.decode.engine.experts_bf16_math);
  EXPECT_FALSE(as_shipped.decode.engine.experts_bf16_math);
  EXPECT_GT(long_decode_us(bf16, 1), long_decode_us(as_shipped, 1));
  EXPECT_DOUBLE_EQ(long_decode_us(fp8, 1), long_decode_us(as_shipped, 1));
  expect_refused(pd_64_decode_with("routed_expert_math: fp16", "expert_math"), "routed_expert_math");
}

// An engine that runs V4.1's mHC as V4's three kernels (a pool's mhc_form:
// three_kernel; vLLM past its fused kernel's token range) moves the residual
// streams more often and decodes more slowly; single_pass is V4.1's own form,
// another word is refused, and a model without mHC refuses the key at its line.
TEST(Serving, MhcAsThreeKernelsSlowsDecode) {
  const DeploymentSpec three = load_deployment_file(pd_64_decode_with("mhc_form: three_kernel", "mhc_three"));
  const DeploymentSpec single =
      load_deployment_file(pd_64_decode_with("mhc_form: single_pass", "mhc_single"));
  const DeploymentSpec as_shipped = load_deployment_file(data("workloads/deployments/h200_pd_64.yaml"));
  EXPECT_EQ(three.decode.engine.mhc_form, MhcForm::kThreeKernel);
  EXPECT_EQ(three.prefill.engine.mhc_form, MhcForm::kAsModel);
  EXPECT_EQ(single.decode.engine.mhc_form, MhcForm::kSinglePass);
  EXPECT_GT(long_decode_us(three, 1), long_decode_us(as_shipped, 1));
  EXPECT_DOUBLE_EQ(long_decode_us(single, 1), long_decode_us(as_shipped, 1));  // V4.1's own form
  expect_refused(pd_64_decode_with("mhc_form: fused", "mhc_bad"), "mhc_form");
  const ModelAnalysis v3 = testing::analyze("deepseek_v3");
  try {
    pool_step_template(v3, three.decode, testing::GpuUnderTest("h200").model.gpu());
    ADD_FAILURE() << "mhc_form was accepted for a model without mHC";
  } catch (const InputError& e) {
    EXPECT_NE(e.where().field.find("mhc_form"), std::string::npos) << e.where().field;
    EXPECT_GT(e.where().line, 0);
    EXPECT_NE(std::string(e.what()).find("no mHC"), std::string::npos) << e.what();
  }
}

// Outputs name the kernels a deployment's engine runs where the step model
// assumes others, pool by pool, with the keys that say so; none where it runs
// the assumed ones.
TEST(Serving, TheKernelsAnEngineRunsOtherwiseAreNamed) {
  EXPECT_EQ(engine_kernels_note(load_deployment_file(data("workloads/deployments/h200_agg_8.yaml"))), "");
  const std::string hopper =
      engine_kernels_note(load_deployment_file(data("workloads/deployments/h200_agg_8_hopper_kernels.yaml")));
  for (const char* key : {"prompt steps: ", "decode steps: ", "draft_queries_share_index_keys",
                          "reindex_scores_pool_only", "routed_expert_math", "h200_agg_8_hopper_kernels.yaml"})
    EXPECT_NE(hopper.find(key), std::string::npos) << key << " in " << hopper;
  const std::string decode_only =
      engine_kernels_note(load_deployment_file(pd_64_decode_with("routed_expert_math: bf16", "expert_math")));
  EXPECT_NE(decode_only.find("decode pool: the routed experts as W4A16"), std::string::npos) << decode_only;
  EXPECT_EQ(decode_only.find("prefill pool"), std::string::npos) << decode_only;
}

// when_faster: each step shape runs as one batch or as two micro-batches,
// whichever is faster; the file's words are checked.
TEST(Serving, OverlapWhenFasterTakesTheFasterOfTheTwo) {
  Fixture f = v41_agents();
  StepShape off = testing::shape(Phase::kDecode, 1, 1, 8);
  off.include_draft = false;  // one verify length: the step times compare directly
  StepShape on = off;
  on.overlap_communication = true;
  StepShape prefill_off = testing::shape(Phase::kPrefill, 1, 1, 8);
  StepShape prefill_on = prefill_off;
  prefill_on.overlap_communication = true;
  StepTimeCache never(f.model, f.prefill.cost(), f.decode.cost(), prefill_off, off);
  StepTimeCache always(f.model, f.prefill.cost(), f.decode.cost(), prefill_on, on);
  StepTimeCache either(f.model, f.prefill.cost(), f.decode.cost(), prefill_on, on, true, true);
  for (const int64_t batch : {2, 32, 512}) {
    const double a = never.decode_step(batch, 131072).us, b = always.decode_step(batch, 131072).us;
    EXPECT_DOUBLE_EQ(either.decode_step(batch, 131072).us, std::min(a, b)) << batch;
  }
  // Decoding 32 sequences reads mostly weights: two micro-batches read them twice and lose.
  EXPECT_LT(never.decode_step(32, 131072).us, always.decode_step(32, 131072).us);
  // A 16K-token prompt halves its math: two micro-batches hide its transfers and win.
  const double one = never.prefill_step(1, 16384, 16384).us, two = always.prefill_step(1, 16384, 16384).us;
  EXPECT_LT(two, one);
  EXPECT_DOUBLE_EQ(either.prefill_step(1, 16384, 16384).us, two);

  std::ifstream in(data("workloads/deployments/h200_pd_64.yaml"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(load_deployment_file(data("workloads/deployments/h200_pd_64.yaml")).decode.overlap,
            PoolSpec::Overlap::kWhenFaster);
  const std::string key = "overlap_communication: when_faster,";
  ASSERT_NE(text.find(key), std::string::npos);
  const auto path = std::filesystem::temp_directory_path() / "v41sim_overlap_policy.yaml";
  for (const auto& [word, policy] :
       {std::pair{"true", PoolSpec::Overlap::kOn}, std::pair{"false", PoolSpec::Overlap::kOff}}) {
    std::ofstream(path) << std::string(text).replace(text.find(key), key.size(),
                                                     std::string("overlap_communication: ") + word + ",");
    EXPECT_EQ(load_deployment_file(path.string()).decode.overlap, policy) << word;
  }
  std::ofstream(path) << std::string(text).replace(text.find(key), key.size(),
                                                   "overlap_communication: often,");
  try {
    load_deployment_file(path.string());
    FAIL() << "overlap_communication: often was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(e.where().field.find("overlap_communication"), std::string::npos) << e.where().field;
    EXPECT_NE(std::string(e.what()).find("expected true, false or when_faster"), std::string::npos)
        << e.what();
    EXPECT_GT(e.where().line, 0);
  }
}

TEST(Serving, DecodeStepPicksTheVerifyLengthWithTheBestThroughput) {
  Fixture f = v41_agents();
  StepShape decode = testing::shape(Phase::kDecode, 1, 1, 8);
  decode.include_draft = true;
  StepTimeCache steps(f.model, f.prefill.cost(), f.decode.cost(), testing::shape(Phase::kPrefill, 1, 1, 8),
                      decode);
  const StepTimeCache::DecodeStep small = steps.decode_step(4, 32768);
  EXPECT_GT(small.drafts, 0);  // memory-bound: verifying drafts is nearly free
  EXPECT_GT(small.tokens_per_sequence, 1.5);
  const double p = f.model.spec.draft->acceptance.value();
  EXPECT_NEAR(small.tokens_per_sequence, (1 - std::pow(p, static_cast<double>(small.drafts + 1))) / (1 - p),
              1e-9);
}

// Force every returning turn to miss its SWA state (a 1 ms TTL): bounded replay
// recomputes one window per miss, an exact rebuild one window per layer.
TEST(Serving, BoundedReplayCostsOneWindowExactRebuildOnePerLayer) {
  Fixture bounded = v41_agents();
  bounded.deployment.kv.host_ttl_s = 1e-3;
  Fixture exact = v41_agents();
  exact.deployment.kv.host_ttl_s = 1e-3;
  exact.deployment.kv.bounded_replay = false;
  const ServingResult a = bounded.run(300);
  const ServingResult b = exact.run(300);
  ASSERT_GT(a.kv_tiers.global_hits, 10);
  const double window = static_cast<double>(bounded.model.spec.attention.sliding_window);
  EXPECT_DOUBLE_EQ(static_cast<double>(a.input_tokens_replayed) / static_cast<double>(a.kv_tiers.global_hits),
                   window);
  const double per_miss =
      static_cast<double>(b.input_tokens_replayed) / static_cast<double>(b.kv_tiers.global_hits);
  EXPECT_GT(per_miss, 0.9 * window * static_cast<double>(exact.model.spec.num_layers));
  EXPECT_GT(b.mean_prefill_ms, a.mean_prefill_ms);
}

TEST(Serving, TraceDrivenTurnsShareTheirSessionsPrefix) {
  Fixture f(testing::model_path("deepseek_v4_1_flash"), data("workloads/deployments/h200_pd_64.yaml"),
            data("workloads/agent_trace.yaml"));
  const ServingResult r = f.run(1e6, 1, true);
  EXPECT_EQ(r.arrived, static_cast<int64_t>(f.workload.trace.size()));
  EXPECT_EQ(r.finished, r.arrived);
  int64_t inputs = 0;
  for (const auto& row : f.workload.trace) inputs += row.input_tokens;
  EXPECT_EQ(r.input_tokens_arrived, inputs);
  EXPECT_GT(r.kv_tiers.global_hits, 0);
}

// A mix of traffic written to a temp folder: classes `a` (single-turn
// prompts of 2048 tokens) and `b` (of 100 tokens, 50-token answers), with
// the mix's own text `mix` after its arrival line.
std::filesystem::path mix_workload(const std::string& folder, const std::string& mix) {
  const auto dir = std::filesystem::temp_directory_path() / folder;
  std::filesystem::create_directories(dir);
  const std::string fixed = testing::read_text(data("tests/data/fixed_prompts.yaml"));
  std::ofstream(dir / "a.yaml") << fixed;
  std::string b = fixed;
  b.replace(b.find("name: fixed prompts"), 19, "name: short prompts");
  b.replace(b.find("value: 2048"), 11, "value: 100");
  b.replace(b.find("output_tokens: {dist: fixed, value: 1}"), 38, "output_tokens: {dist: fixed, value: 50}");
  std::ofstream(dir / "b.yaml") << b;
  std::ofstream(dir / "mix.yaml")
      << "name: mix\nsource: test\narrival: {process: poisson, sessions_per_s: 2}\n"
      << mix;
  return dir / "mix.yaml";
}

// Each session of a mix is of one class, drawn with the shares, and asks
// what its class's workload asks; each class's requests are counted and
// timed apart, and together they are the run's.
TEST(Serving, AMixDrawsEachSessionsClassAndCountsEachClassApart) {
  Fixture f = tiny_fixed();
  f.workload = load_workload_file(
      mix_workload("v41sim_mix", "mix:\n  - {workload: a, share: 3}\n  - {workload: b.yaml, share: 1}\n")
          .string());
  ASSERT_EQ(f.workload.mix.size(), 2u);
  EXPECT_DOUBLE_EQ(f.workload.mix[0].share, 0.75);  // shares relative to their sum
  EXPECT_EQ(f.workload.mix[1].name, "short prompts");
  ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
  sim.enable_request_log();
  const ServingResult r = sim.run(600, true);
  ASSERT_EQ(r.by_class.size(), 2u);
  const ClassOutcome& a = r.by_class[0];
  const ClassOutcome& b = r.by_class[1];
  EXPECT_EQ(a.arrived + b.arrived, r.arrived);
  EXPECT_EQ(a.finished + b.finished, r.finished);
  EXPECT_EQ(a.sessions + b.sessions, r.sessions_arrived);
  EXPECT_NEAR(static_cast<double>(a.sessions) / static_cast<double>(r.sessions_arrived), 0.75, 0.05);
  EXPECT_EQ(b.tpot_ms.count, b.finished);  // 50-token answers: a TPOT each
  EXPECT_EQ(a.tpot_ms.count, 0);           // one-token answers: none
  for (const RequestRecord& q : r.requests) {
    EXPECT_EQ(q.new_tokens, q.traffic_class == "fixed prompts" ? 2048 : 100) << q.traffic_class;
    EXPECT_EQ(q.output_tokens, q.traffic_class == "fixed prompts" ? 1 : 50);
  }
  // The same seed draws the same classes.
  ServingSimulation again(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
  EXPECT_EQ(again.run(600, true).by_class[0].sessions, a.sessions);
  // A workload of one class has no classes to show.
  EXPECT_TRUE(tiny_fixed().run(60).by_class.empty());
}

// A class with limits of its own is held to them, field by field (the rest
// stay the deployment's); the other classes, and every time, are unchanged.
TEST(Serving, AClassOfAMixIsHeldToItsOwnLimits) {
  Fixture f = tiny_fixed();
  const std::string classes = "mix:\n  - {workload: a, share: 3}\n  - {workload: b, share: 1";
  f.workload = load_workload_file(mix_workload("v41sim_mix_sla0", classes + "}\n").string());
  const ServingResult plain = f.run(600, 1, true);
  ASSERT_EQ(plain.by_class.size(), 2u);
  ASSERT_GT(plain.by_class[1].within_sla, 0);
  EXPECT_DOUBLE_EQ(plain.by_class[1].sla.tpot_ms, f.deployment.sla.tpot_ms);
  // Class b's TPOT limit below any step: none of its requests is within it.
  f.workload =
      load_workload_file(mix_workload("v41sim_mix_sla1", classes + ", sla: {tpot_ms: 1e-9}}\n").string());
  EXPECT_DOUBLE_EQ(f.workload.mix[1].sla.ttft_ms, 0);  // not given: the deployment's
  EXPECT_TRUE(has_class_slas(f.workload));
  const ServingResult held = f.run(600, 1, true);
  const ClassOutcome& b = held.by_class[1];
  EXPECT_DOUBLE_EQ(b.sla.tpot_ms, 1e-9);
  EXPECT_DOUBLE_EQ(b.sla.ttft_ms, f.deployment.sla.ttft_ms);
  EXPECT_EQ(b.finished, plain.by_class[1].finished);
  EXPECT_EQ(b.within_sla, 0);
  EXPECT_EQ(held.by_class[0].within_sla, plain.by_class[0].within_sla);
  EXPECT_DOUBLE_EQ(b.tpot_ms.p99, plain.by_class[1].tpot_ms.p99);
  // The run's goodput loses exactly class b's requests.
  const auto within = [](const ServingResult& r) {
    return static_cast<int64_t>(std::llround(r.goodput_fraction * static_cast<double>(r.finished)));
  };
  EXPECT_EQ(within(held), within(plain) - plain.by_class[1].within_sla);
  // An ITL limit below any step: class b's 50-token answers all stall past
  // it, class a's one-token answers have no gap to judge.
  f.workload = load_workload_file(mix_workload("v41sim_mix_sla2",
                                               "mix:\n  - {workload: a, share: 3, sla: {itl_ms: "
                                               "1e-9}}\n  - {workload: b, share: 1, sla: "
                                               "{itl_ms: 1e-9}}\n")
                                      .string());
  const ServingResult stalls = f.run(600, 1, true);
  EXPECT_DOUBLE_EQ(stalls.by_class[1].sla.itl_ms, 1e-9);
  EXPECT_DOUBLE_EQ(stalls.by_class[1].sla.tpot_ms, f.deployment.sla.tpot_ms);
  EXPECT_EQ(stalls.by_class[1].within_sla, 0);
  EXPECT_EQ(stalls.by_class[1].longest_itl_ms.count, plain.by_class[1].finished);
  EXPECT_EQ(stalls.by_class[0].within_sla, plain.by_class[0].within_sla);
  EXPECT_EQ(stalls.by_class[0].longest_itl_ms.count, 0);
}

// A class of a higher priority (a lower number) waits ahead of the others:
// near the deployment's limit its prompts no longer queue behind theirs,
// while the others wait longer; the same arrivals either way. One priority
// for every class is first come, first served, as with none.
TEST(Serving, AClassOfAHigherPriorityWaitsAheadOfTheOthers) {
  const auto run_with = [](const std::string& folder, const std::string& a_extra,
                           const std::string& b_extra) {
    Fixture f = tiny_fixed();
    f.workload =
        load_workload_file(mix_workload(folder, "mix:\n  - {workload: a, share: 3" + a_extra +
                                                    "}\n  - {workload: b, share: 1" + b_extra + "}\n")
                               .string());
    // Near the one prefill GPU's limit, so prompts queue: class a's 2048-token
    // prompts alone keep it 82% busy (b's short ones add a few percent).
    StepTimeCache steps(f.model, f.prefill.cost(), f.decode.cost(), testing::shape(Phase::kPrefill, 1, 1, 1),
                        testing::shape(Phase::kDecode, 1, 1, 1));
    const double a_prompt_s = steps.prefill_step(1, 2048, 2048).us * 1e-6;
    f.workload.sessions_per_s = 0.82 / (0.75 * a_prompt_s);
    return f.run(120, 1, true);
  };
  const ServingResult plain = run_with("v41sim_mix_prio0", "", "");
  const ServingResult first = run_with("v41sim_mix_prio1", "", ", priority: -1");
  EXPECT_EQ(first.arrived, plain.arrived);
  EXPECT_EQ(first.finished, plain.finished);
  ASSERT_GT(plain.by_class[1].ttft_ms.p99, 4 * plain.by_class[1].ttft_ms.p50);  // b queued behind a
  EXPECT_LT(first.by_class[1].ttft_ms.p99, plain.by_class[1].ttft_ms.p99 / 2);
  EXPECT_GE(first.by_class[0].ttft_ms.mean, plain.by_class[0].ttft_ms.mean);
  const ServingResult same = run_with("v41sim_mix_prio2", ", priority: 7", ", priority: 7");
  EXPECT_EQ(same.events, plain.events);
  EXPECT_EQ(same.by_class[1].ttft_ms.p99, plain.by_class[1].ttft_ms.p99);
}

// A request joins behind its own priority and lower ones, ahead of higher
// ones, but never ahead of one underway.
TEST(Serving, ARequestJoinsItsQueueByPriorityPassingNothingUnderway) {
  std::vector<Request> r(5);
  std::deque<Request*> queue;
  const auto underway = [](const Request& q) { return q.computed > 0; };
  r[0].priority = 2, r[0].computed = 10;  // part prefilled
  r[1].priority = 2;
  r[2].priority = 1;
  r[3].priority = 0;
  r[4].priority = 1;
  for (Request& q : r) join_by_priority(queue, &q, underway);
  EXPECT_EQ(queue, (std::deque<Request*>{&r[0], &r[3], &r[2], &r[4], &r[1]}));
  // Where nothing is underway, the highest priority goes first.
  std::deque<Request*> decode;
  for (Request& q : r) join_by_priority(decode, &q, [](const Request&) { return false; });
  EXPECT_EQ(decode, (std::deque<Request*>{&r[3], &r[2], &r[4], &r[0], &r[1]}));
}

// `turns: {dist: uniform, min: 1, max: 6}` is a die: each whole number as
// likely (a continuous draw rounded gives 1 and 6 half the others' share).
TEST(WorkloadDraws, AUniformCountGivesEachWholeNumberTheSameChance) {
  const auto shares = [](const Distribution& d, double scale) {
    SplitMix64 rng(7);
    std::map<int64_t, double> share;
    constexpr int kDraws = 60000;
    for (int i = 0; i < kDraws; ++i) share[d.sample_whole(rng, scale)] += 1.0 / kDraws;
    return share;
  };
  Distribution die{Distribution::Kind::kUniform, 3.5, 0, 1, 6};
  const std::map<int64_t, double> faces = shares(die, 1.0);
  ASSERT_EQ(faces.size(), 6u);
  for (const auto& [face, share] : faces) {
    EXPECT_GE(face, 1);
    EXPECT_LE(face, 6);
    EXPECT_NEAR(share, 1.0 / 6, 0.01) << "face " << face;
  }
  // Bounds between whole numbers take the whole numbers inside them.
  const std::map<int64_t, double> inside = shares({Distribution::Kind::kUniform, 2.5, 0, 1.5, 3.5}, 1.0);
  ASSERT_EQ(inside.size(), 2u);
  EXPECT_NEAR(inside.at(2), 0.5, 0.01);
  EXPECT_NEAR(inside.at(3), 0.5, 0.01);
  // Scaled (an effort multiplier on output lengths): each count scaled, then rounded.
  const std::map<int64_t, double> doubled = shares(die, 2.0);
  ASSERT_EQ(doubled.size(), 6u);
  EXPECT_NEAR(doubled.at(2), 1.0 / 6, 0.01);
  EXPECT_NEAR(doubled.at(12), 1.0 / 6, 0.01);
  // The other kinds round their continuous draw: a lognormal keeps its mean.
  const std::map<int64_t, double> lognormal = shares({Distribution::Kind::kLognormal, 500, 0.7, 1, 1e6}, 1.0);
  double mean = 0;
  for (const auto& [tokens, share] : lognormal) mean += static_cast<double>(tokens) * share;
  EXPECT_NEAR(mean, 500, 10);
}

TEST(WorkloadFile, ABadMixNamesItsLineAndField) {
  const auto error_of = [](const std::string& folder, const std::string& mix) {
    try {
      load_workload_file(mix_workload(folder, mix).string());
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  EXPECT_NE(error_of("v41sim_mix_bad1", "mix:\n  - {workload: c, share: 1}\n")
                .find("mix.yaml:5: field 'mix[0].workload': no workload file at"),
            std::string::npos);
  EXPECT_NE(error_of("v41sim_mix_bad2", "mix:\n  - {workload: a, share: 0}\n").find("field 'mix[0].share'"),
            std::string::npos);
  EXPECT_NE(error_of("v41sim_mix_bad3", "mix:\n  - {workload: mix, share: 1}\n")
                .find("field 'mix[0].workload': a class is a workload of sessions, not a mix"),
            std::string::npos);  // not read forever
  EXPECT_NE(error_of("v41sim_mix_bad4", "mix: []\n").find("expected at least one class"), std::string::npos);
  EXPECT_NE(
      error_of("v41sim_mix_bad6", "mix:\n  - {workload: a, share: 1e308}\n  - {workload: b, share: 1e308}\n")
          .find("field 'mix': the shares sum past a double's range"),
      std::string::npos);
  EXPECT_NE(error_of("v41sim_mix_bad5", "mix:\n  - {workload: a, share: 1}\neffort: high\n")
                .find("field 'effort': not used with a mix"),
            std::string::npos);
  // A class's own limits: at least one, each positive, named as fields.
  EXPECT_NE(error_of("v41sim_mix_bad7", "mix:\n  - {workload: a, share: 1, sla: {}}\n")
                .find("mix.yaml:5: field 'mix[0].sla': expected ttft_ms, tpot_ms, itl_ms or some of them"),
            std::string::npos);
  EXPECT_NE(error_of("v41sim_mix_bad8", "mix:\n  - {workload: a, share: 1, sla: {ttft_ms: -5}}\n")
                .find("field 'mix[0].sla.ttft_ms': expected a positive number"),
            std::string::npos);
  EXPECT_NE(error_of("v41sim_mix_bad11", "mix:\n  - {workload: a, share: 1, sla: {itl_ms: 0}}\n")
                .find("field 'mix[0].sla.itl_ms': expected a positive number"),
            std::string::npos);
  EXPECT_NE(error_of("v41sim_mix_bad9", "mix:\n  - {workload: a, share: 1, sla: {ttft: 500}}\n")
                .find("field 'mix[0].sla.ttft'"),
            std::string::npos);
  EXPECT_NE(error_of("v41sim_mix_bad10", "mix:\n  - {workload: a, share: 1, priority: high}\n")
                .find("field 'mix[0].priority': expected an integer"),
            std::string::npos);
}

// The tiny model on one prefill and one decode GPU, serving a closed loop of
// `concurrency` one-turn sessions (2048-token prompts, `output` tokens each).
Fixture tiny_closed_loop(const std::string& folder, int64_t concurrency, int64_t output) {
  return Fixture(
      data("tests/data/tiny_gqa.yaml"), data("tests/data/one_gpu.yaml"),
      testing::one_turn_workload(
          folder, fmt::format("{{process: closed_loop, concurrency: {}}}", concurrency), 2048, output));
}

// A closed loop starts its sessions together and each one that ends is
// followed by the next at that instant, so as many are in flight throughout.
TEST(Serving, AClosedLoopKeepsItsSessionsInFlight) {
  Fixture f = tiny_closed_loop("v41sim_closed_loop", 4, 16);
  ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
  sim.enable_request_log();
  const ServingResult r = sim.run(60);
  ASSERT_GT(r.finished, 40);
  EXPECT_EQ(r.rejected, 0);
  EXPECT_EQ(r.in_flight, 4);
  EXPECT_EQ(r.arrived, r.finished + 4);
  std::multiset<double> ends;
  int64_t at_start = 0;
  for (const RequestRecord& x : r.requests) {
    if (x.arrival_s == 0) ++at_start;
    if (x.status == "finished") ends.insert(x.arrival_s + x.e2e_ms / 1e3);
  }
  EXPECT_EQ(at_start, 4);
  // The loop's first four are its population, not arrivals: the SSD tier
  // fills at the rate sessions end and their successors arrive.
  EXPECT_EQ(r.sessions_arrived, r.finished);
  for (const RequestRecord& x : r.requests) {
    if (x.arrival_s == 0) continue;
    const auto end = ends.lower_bound(x.arrival_s - 1e-9);
    ASSERT_TRUE(end != ends.end() && *end <= x.arrival_s + 1e-9)
        << "request " << x.id << " at " << x.arrival_s;
    ends.erase(end);
  }
  // Twice the clients, twice the requests in flight: no fewer served (here the
  // one prefill GPU's pace sets how many), each one waiting longer.
  Fixture twice = tiny_closed_loop("v41sim_closed_loop", 8, 16);
  const ServingResult more = twice.run(60);
  EXPECT_EQ(more.in_flight, 8);
  EXPECT_GE(more.finished, r.finished);
  EXPECT_GT(more.e2e_ms.mean, r.e2e_ms.mean);
  // The same seed, the same run.
  const ServingResult again = f.run(60);
  EXPECT_EQ(again.arrived, r.arrived);
  EXPECT_EQ(again.e2e_ms.mean, r.e2e_ms.mean);
  // Drained: the loop stops starting sessions, and those in flight finish.
  const ServingResult drained = f.run(60, 1, true);
  EXPECT_EQ(drained.in_flight, 0);
  EXPECT_EQ(drained.arrived, drained.finished);
}

// A loop whose sessions are refused as they arrive would start new ones at
// one instant forever: an error naming the concurrency instead.
TEST(Serving, AClosedLoopOfRefusedSessionsIsAnError) {
  Fixture f = tiny_closed_loop("v41sim_closed_loop_refused", 4, 16);
  f.model.spec.max_context = 1000;  // below every 2048-token prompt
  try {
    f.run(60);
    FAIL() << "ran";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(
        what.find("w.yaml:3: field 'arrival.concurrency': the closed loop of 4 sessions at a time started "
                  "40 at 0 s of simulated time without it moving on: its sessions are refused as they "
                  "arrive (context exceeds the model's max_context)"),
        std::string::npos)
        << what;
  }
  // A bounded SSD tier is sized by an arrival rate, which a closed loop has not.
  Fixture bounded = tiny_closed_loop("v41sim_closed_loop_bounded", 4, 16);
  bounded.deployment.kv.ssd_capacity_tb = SourcedValue::assumed(1, "test");
  EXPECT_THROW(bounded.run(10), InputError);
}

// A benchmark's closed loop sends its prompts and stops: the loop keeps its
// concurrency until they are all sent, none follows, and the window ends with
// the last to end, so its rates are the benchmark's over its own span.
TEST(Serving, AClosedLoopWithAPromptCountEndsWithItsLast) {
  Fixture f = tiny_closed_loop("v41sim_closed_loop_prompts", 4, 16);
  f.workload.prompts = 10;
  f.workload.prompts_where = {"w.yaml", 3, "arrival.prompts"};
  ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
  sim.enable_request_log();
  const ServingResult r = sim.run(600);
  EXPECT_EQ(r.arrived, 10);
  EXPECT_EQ(r.finished, 10);
  EXPECT_EQ(r.in_flight, 0);
  ASSERT_TRUE(r.window_ends_with_prompts);
  EXPECT_FALSE(r.window_ends_with_trace);
  double last_end_s = 0;
  int64_t at_start = 0;
  for (const RequestRecord& x : r.requests) {
    last_end_s = std::max(last_end_s, x.arrival_s + x.e2e_ms / 1e3);
    if (x.arrival_s == 0) ++at_start;
  }
  EXPECT_EQ(at_start, 4);
  EXPECT_NEAR(r.duration_s, last_end_s, 1e-6);
  EXPECT_LT(r.duration_s, 600);
  // Its tokens over its own span: 10 answers of 16 tokens over the window.
  EXPECT_NEAR(r.output_tokens_per_s_per_gpu * r.duration_s * static_cast<double>(r.gpus), 160, 1e-6);
  // Fewer prompts than clients: only they start.
  Fixture few = tiny_closed_loop("v41sim_closed_loop_prompts", 4, 16);
  few.workload.prompts = 2;
  const ServingResult two = few.run(600);
  EXPECT_EQ(two.arrived, 2);
  EXPECT_TRUE(two.window_ends_with_prompts);
  // A window too short for them: the benchmark's first seconds, as asked.
  const ServingResult cut = f.run(0.02);
  EXPECT_FALSE(cut.window_ends_with_prompts);
  EXPECT_EQ(cut.duration_s, 0.02);
  // What a run that measures nothing says, where the count was given.
  const auto refused_with = [](ServingSimulation& simulation, double seconds) {
    try {
      simulation.run(seconds);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("ran");
  };
  // All ended in the warm-up: nothing to measure.
  ServingSimulation warmed(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
  warmed.set_warm_up(500);
  EXPECT_NE(refused_with(warmed, 100)
                .find("w.yaml:3: field 'arrival.prompts': the closed loop's 10 prompts all ended by "),
            std::string::npos);
  // All refused as they arrive (prompts past the model's context): said so, not a warm-up's fault.
  f.workload.prompts = 4;
  f.model.spec.max_context = 1000;  // below every 2048-token prompt
  ServingSimulation refused(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
  EXPECT_NE(refused_with(refused, 60)
                .find("the closed loop's 4 prompts were all refused as they arrived, at 0 s "
                      "(context exceeds the model's max_context)"),
            std::string::npos);
}

TEST(WorkloadFile, AClosedLoopNamesItsConcurrency) {
  const auto error_of = [](const std::string& arrival) {
    try {
      load_workload_file(testing::one_turn_workload("v41sim_closed_loop_bad", arrival, 10, 10));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  EXPECT_EQ(error_of("{process: closed_loop, concurrency: 3}"), "loaded");
  EXPECT_NE(error_of("{process: closed_loop}").find("w.yaml:3: field 'arrival.concurrency'"),
            std::string::npos);
  EXPECT_NE(error_of("{process: closed_loop, concurrency: 0}").find("field 'arrival.concurrency'"),
            std::string::npos);
  EXPECT_NE(error_of("{process: closed_loop, concurrency: 1000000}")
                .find("field 'arrival.concurrency': expected at most 100000 sessions at a time"),
            std::string::npos);
  EXPECT_NE(error_of("{process: closed_loop, concurrency: 3, sessions_per_s: 1}")
                .find("field 'arrival.sessions_per_s': a closed loop has no arrival rate"),
            std::string::npos);
  EXPECT_NE(error_of("{process: poisson, sessions_per_s: 1, concurrency: 3}")
                .find("field 'arrival.concurrency': only a closed_loop arrival has one"),
            std::string::npos);
  EXPECT_NE(
      error_of("{process: closed, concurrency: 3}").find("expected poisson, bursty, closed_loop or trace"),
      std::string::npos);
  // A benchmark's prompt count: a whole number of sessions, a closed loop's alone.
  EXPECT_EQ(error_of("{process: closed_loop, concurrency: 3, prompts: 12}"), "loaded");
  EXPECT_NE(error_of("{process: closed_loop, concurrency: 3, prompts: 0}")
                .find("w.yaml:3: field 'arrival.prompts'"),
            std::string::npos);
  EXPECT_NE(error_of("{process: closed_loop, concurrency: 3, prompts: 2.5}").find("field 'arrival.prompts'"),
            std::string::npos);
  EXPECT_NE(error_of("{process: closed_loop, concurrency: 3, prompts: 2000000}")
                .find("field 'arrival.prompts': expected at most 1e+06 sessions, the most one run starts"),
            std::string::npos);
  EXPECT_NE(error_of("{process: poisson, sessions_per_s: 1, prompts: 3}")
                .find("field 'arrival.prompts': only a closed_loop arrival has one"),
            std::string::npos);
  EXPECT_EQ(load_workload_file(
                testing::one_turn_workload("v41sim_closed_loop_bad",
                                           "{process: closed_loop, concurrency: 3, prompts: 12}", 10, 10))
                .prompts,
            12);
  // Its load is its concurrency, set again where asked; an open loop's is its rate.
  const WorkloadSpec loop = load_workload_file(
      testing::one_turn_workload("v41sim_closed_loop_bad", "{process: closed_loop, concurrency: 3}", 10, 10));
  EXPECT_EQ(load_phrase(loop), "3 sessions at a time (closed loop)");
  EXPECT_EQ(at_concurrency(loop, 7, {"", 0, "--concurrency"}).concurrency, 7);
  EXPECT_THROW(at_rate(loop, 2.0, {"", 0, "--sessions-per-s"}), InputError);
  const WorkloadSpec open = load_workload_file(data("workloads/chat.yaml"));
  EXPECT_EQ(load_phrase(open), "20 sessions/s");
  EXPECT_THROW(at_concurrency(open, 7, {"", 0, "--concurrency"}), InputError);
}

// The error a trace of `rows` (after its header) gives, or none.
std::optional<InputError> trace_error(const std::string& rows) {
  const auto dir = std::filesystem::temp_directory_path() / "v41sim_bad_trace";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "t.csv") << "time_s,session,input_tokens,output_tokens\n" << rows;
  std::ofstream(dir / "w.yaml") << "name: t\nsource: test\narrival: {process: trace, file: t.csv}\n";
  try {
    load_workload_file((dir / "w.yaml").string());
  } catch (const InputError& e) {
    return e;
  }
  return std::nullopt;
}

TEST(WorkloadFile, BadTraceRowsNameLineAndColumn) {
  const std::optional<InputError> backwards = trace_error("1.0,0,100,10\n0.5,1,100,10\n");
  ASSERT_TRUE(backwards);
  EXPECT_EQ(backwards->where().line, 3);
  EXPECT_EQ(backwards->where().field, "time_s");
  const std::optional<InputError> words = trace_error("1.0,0,many,10\n");
  ASSERT_TRUE(words);
  EXPECT_EQ(words->where().line, 2);
  EXPECT_EQ(words->where().field, "input_tokens");
  // A signed zero is no session id (it read as session 0).
  const std::optional<InputError> signed_zero = trace_error("1.0,-0.0,100,10\n");
  ASSERT_TRUE(signed_zero);
  EXPECT_EQ(signed_zero->where().line, 2);
  EXPECT_EQ(signed_zero->where().field, "session");
  EXPECT_NE(std::string(signed_zero->what()).find("got '-0.0'"), std::string::npos) << signed_zero->what();
  // Counts are whole and bounded (a count past int64 once wrapped simulated time into the past).
  // Written as plain decimals: a hexadecimal count (which std::stod reads) or a blank is a typo.
  for (const char* tokens : {"99999999999999999999", "2.5", "inf", "0x64", " 100"}) {
    const std::optional<InputError> e = trace_error(std::string("1.0,0,") + tokens + ",10\n");
    ASSERT_TRUE(e) << tokens;
    EXPECT_EQ(e->where().field, "input_tokens");
    EXPECT_NE(std::string(e->what()).find("expected a whole number in [1, 2147483647]"), std::string::npos)
        << e->what();
  }
}

// Spreadsheets and Windows tools end CSV lines with CRLF, and may open the
// file with a UTF-8 byte order mark: such a trace reads as the same rows
// (before, its header was refused as not the header).
TEST(WorkloadFile, ATraceWithCrlfLineEndsOrAByteOrderMarkReadsTheSameRows) {
  const auto dir = std::filesystem::temp_directory_path() / "v41sim_crlf_trace";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "w.yaml") << "name: t\nsource: test\narrival: {process: trace, file: t.csv}\n";
  const auto rows = [&](const std::string& end, const std::string& start = "") {
    std::ofstream(dir / "t.csv") << start << "time_s,session,input_tokens,output_tokens" << end
                                 << "1.0,0,100,10" << end << "2.5,1,200,20" << end;
    std::vector<std::string> out;
    for (const WorkloadSpec::TraceRow& r : load_workload_file((dir / "w.yaml").string()).trace)
      out.push_back(fmt::format("{} {} {} {}", r.time_s, r.session, r.input_tokens, r.output_tokens));
    return out;
  };
  const std::vector<std::string> lf = rows("\n");
  ASSERT_EQ(lf.size(), 2u);
  EXPECT_EQ(rows("\r\n"), lf);
  EXPECT_EQ(rows("\r\n", "\xEF\xBB\xBF"), lf);
}

TEST(Serving, AggregatedInstancesShareTheirGpusBetweenPrefillAndDecode) {
  Fixture f = tiny_aggregated_chat();
  f.workload.sessions_per_s = 2;
  const ServingResult r = f.run(120, 1, true);
  EXPECT_EQ(r.gpus, 1);
  EXPECT_EQ(r.arrived, r.finished + r.rejected);
  EXPECT_EQ(r.mean_transfer_ms, 0.0);  // the KV never leaves the instance
  EXPECT_GT(r.prefill_steps, 0);
  EXPECT_GT(r.decode_steps, 0);
  EXPECT_EQ(r.output_tokens_generated, r.output_tokens_of_finished);
  // One engine: prefill and decode steps never overlap in time.
  expect_one_step_at_a_time(f, 120);
}

// Mixing prompt chunks into decode steps: every token is still accounted for,
// the engine still runs one step at a time, and decode steps carry the chunks
// (a prompt-only step runs only when nothing decodes). Which of the two
// schedules gives the faster decode depends on the shapes (prefill first, the
// other ranks decode beside a prompt; mixed, the prompt's own rank decodes
// too, in steps launched without CUDA graphs), so it is not asserted.
TEST(Serving, MixedStepsCarryPromptChunksInsideDecodeSteps) {
  Fixture f(testing::model_path("deepseek_v4_1_flash"), data("workloads/deployments/h200_agg_8.yaml"),
            data("workloads/agent_coding.yaml"));
  ASSERT_EQ(f.deployment.aggregated_steps, DeploymentSpec::AggregatedSteps::kPrefillFirst);
  const ServingResult first = f.run(180, 1, true);
  f.deployment.aggregated_steps = DeploymentSpec::AggregatedSteps::kMixed;
  const ServingResult mixed = f.run(180, 1, true);
  EXPECT_EQ(first.mixed_steps, 0);
  EXPECT_GT(mixed.mixed_steps, 0);
  EXPECT_LT(mixed.prefill_steps, mixed.mixed_steps / 10);
  EXPECT_EQ(mixed.in_flight, 0);
  EXPECT_EQ(mixed.input_tokens_prefilled, mixed.input_tokens_to_compute);
  EXPECT_EQ(mixed.output_tokens_generated, mixed.output_tokens_of_finished);
  expect_one_step_at_a_time(f, 60);
}

// A mixed step whose chunk only this rank carries (the others decode alone):
// the routed experts take the group's tokens, fewer than every rank running
// this rank's chunk would send, so the step is shorter; the decode sequences
// verify the drafts their plain step would either way.
TEST(Serving, AMixedStepsExpertsTakeTheGroupsTokens) {
  Fixture f(testing::model_path("deepseek_v4_1_flash"), data("workloads/deployments/h200_agg_8.yaml"),
            data("workloads/agent_coding.yaml"));
  StepTimeCache steps = deployment_step_times(f.model, f.prefill.cost(), f.decode.cost(), f.deployment);
  const StepTimeCache::DecodeStep every = steps.mixed_step(32, 65536, 1, 8192, 8192);
  const int64_t ranks = f.deployment.decode.gpus_per_instance;
  const int64_t group = (8192 + ranks * 32 + ranks - 1) / ranks;  // one chunk, every rank's decode
  const StepTimeCache::DecodeStep one = steps.mixed_step(32, 65536, 1, 8192, 8192, 0, group);
  EXPECT_LT(one.us, 0.95 * every.us);
  EXPECT_EQ(one.drafts, every.drafts);
  EXPECT_DOUBLE_EQ(one.tokens_per_sequence, every.tokens_per_sequence);
}

// In a mixed step the ranks without a chunk of their own decode as the
// chunk's rank runs: launched, normal-mode transfers (StepShape::
// beside_prompts), their experts on the group's tokens. Seven ranks decode
// 30 sessions each and a 16-token prompt comes to the eighth: the one step
// carrying it is set by a decoding rank, so it takes that rank's step beside
// the chunk, not its graph-replayed plain step.
TEST(Serving, RanksWithoutAChunkDecodeInAMixedStepAsItRuns) {
  constexpr int64_t kRanks = 8;
  constexpr int64_t kPerRank = 30;
  constexpr int64_t kPrompt = 16;
  Fixture f = tiny_trace("v41sim_mixed_beside", seven_ranks_decoding_then_a_prompt(kPerRank, kPrompt),
                         "workloads/deployments/h200_agg_8.yaml", testing::model_path("deepseek_v4_1_flash"));
  ASSERT_EQ(f.deployment.decode.gpus_per_instance, kRanks);
  f.deployment.routing = DeploymentSpec::Routing::kRoundRobin;
  f.deployment.aggregated_steps = DeploymentSpec::AggregatedSteps::kMixed;
  StepTimeCache steps = deployment_step_times(f.model, f.prefill.cost(), f.decode.cost(), f.deployment);
  const int64_t drafts = steps.decode_step(kPerRank, 101).drafts;
  ASSERT_EQ(steps.decode_step(kPerRank, 3100).drafts, drafts)
      << "the same drafts over the window's histories";
  const int64_t group_tokens = (kRanks - 1) * kPerRank * (1 + drafts) + kPrompt;
  const int64_t group_per_rank = (group_tokens + kRanks - 1) / kRanks;
  const auto beside = [&](int64_t history) {
    return steps
        .decode_in_group(steps.decode_step(kPerRank, history), kPerRank, history, group_per_rank, true)
        .us;
  };
  ASSERT_LT(steps.prefill_step(1, kPrompt, kPrompt, 0, group_per_rank).us, beside(101))
      << "test setup: a decoding rank must set the step";
  const ServingResult r = traced_run(f, 2);
  const TraceSpan* carrying = nullptr;  // the first decode step after the prompt arrives
  for (const TraceSpan& span : r.trace) {
    if (span.kind != TraceSpan::Kind::kDecodeStep || span.start_us < 1e6) continue;
    if (carrying == nullptr || span.start_us < carrying->start_us) carrying = &span;
  }
  ASSERT_NE(carrying, nullptr);
  EXPECT_EQ(carrying->size, (kRanks - 1) * kPerRank);
  // Whatever the decoding ranks' histories (their 100-token prompts and up to 3,000 tokens since):
  // within the beside step's range, and under the plain step at the shortest history.
  EXPECT_GE(carrying->duration_us, beside(101) - 1e-6);
  EXPECT_LE(carrying->duration_us, beside(3100) + 1e-6);
  EXPECT_LT(carrying->duration_us, steps.decode_step(kPerRank, 101).us);
}

// Runs that share one deployment's step times (capacity's rates, plan's
// variants), even at the same time on two threads, give the figures each
// gives alone: a step time depends on its shape only.
TEST(Serving, SharedStepTimesChangeNoFigure) {
  Fixture f(testing::model_path("deepseek_v4_1_flash"), data("workloads/deployments/h200_agg_8.yaml"),
            data("workloads/agent_coding.yaml"));
  f.deployment.aggregated_steps = DeploymentSpec::AggregatedSteps::kMixed;
  const std::vector<double> rates{0.3, 0.9};
  std::vector<ServingResult> alone;
  for (const double rate : rates) {
    f.workload.sessions_per_s = rate;
    alone.push_back(f.run(120, 1, true));
  }
  const auto steps = std::make_shared<StepTimeCache>(
      deployment_step_times(f.model, f.prefill.cost(), f.decode.cost(), f.deployment));
  std::vector<ServingResult> shared(rates.size());
  parallel_for(rates.size(), [&](std::size_t i) {
    WorkloadSpec w = f.workload;
    w.sessions_per_s = rates[i];
    ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, w, 1, steps);
    shared[i] = sim.run(120, true);
  });
  for (std::size_t i = 0; i < rates.size(); ++i) {
    EXPECT_EQ(shared[i].events, alone[i].events) << i;
    EXPECT_EQ(shared[i].ttft_ms.p99, alone[i].ttft_ms.p99) << i;
    EXPECT_EQ(shared[i].tpot_ms.mean, alone[i].tpot_ms.mean) << i;
    EXPECT_EQ(shared[i].output_tokens_generated, alone[i].output_tokens_generated) << i;
    EXPECT_EQ(shared[i].decode_band.pct, alone[i].decode_band.pct) << i;
  }
  // The two runs' shapes overlap: the shared cache holds fewer than both apart.
  EXPECT_LT(steps->size(), alone[0].step_shapes_costed + alone[1].step_shapes_costed);
}

TEST(Serving, PoolsMayUseDifferentGpus) {
  Fixture f(testing::model_path("deepseek_v4_1_flash"),
            data("workloads/deployments/h200_prefill_h20_decode.yaml"), data("workloads/agent_coding.yaml"));
  EXPECT_EQ(f.prefill.gpu().name, "NVIDIA H200 SXM 141GB");
  EXPECT_EQ(f.decode.gpu().name, "NVIDIA H20 96GB");
  const ServingResult r = f.run(120);
  EXPECT_EQ(r.gpus, 48);
  EXPECT_GT(r.finished, 0);
  // The H20's decode memory, not the H200's, bounds its KV.
  EXPECT_LT(r.decode_kv_bytes_per_gpu, 96e9);
}

TEST(Serving, CommunicationShareShrinksWithOverlap) {
  Fixture serial = v41_agents();
  serial.deployment.prefill.overlap = PoolSpec::Overlap::kOff;
  serial.deployment.decode.overlap = PoolSpec::Overlap::kOff;
  Fixture overlapped = v41_agents();
  const ServingResult a = serial.run(200);
  const ServingResult b = overlapped.run(200);
  EXPECT_GT(a.mean_communication_ms, 0.0);
  EXPECT_LT(b.mean_communication_ms, a.mean_communication_ms);
  // Which steps ran as two micro-batches: none without overlap; with
  // when_faster, long prefill chunks do.
  EXPECT_EQ(a.prefill_steps_split + a.decode_steps_split, 0);
  EXPECT_GT(b.prefill_steps_split, 0);
  EXPECT_LE(b.prefill_steps_split, b.prefill_steps);
  EXPECT_LE(b.decode_steps_split, b.decode_steps);
  EXPECT_LT(a.mean_communication_ms, a.mean_prefill_ms + a.mean_decode_ms);
}

// A run's band is its steps' bands weighted by step time: with one band on
// every compute class, the run carries exactly it, over the compute share of
// the step time (link transfers here carry none); uncalibrated, the priors'
// published bands, and it says so.
TEST(Serving, RunsCarryTheKernelModelBandOfTheirSteps) {
  Fixture f = v41_agents();
  const ServingResult plain = f.run(60);
  EXPECT_GT(plain.decode_band.covered_share, 0.0);
  EXPECT_NEAR(plain.decode_band.published_share, 1.0, 1e-12);
  EXPECT_NE(plain.decode_band.describe().find("the priors' error on published figures"), std::string::npos);

  CostParams banded = f.decode.cost().params();
  banded.extrapolation = Extrapolation::kNone;  // bands as set, not widened for a transfer
  for (int i = 0; i < kKernelClassCount; ++i) {
    const auto cls = static_cast<KernelClass>(i);
    ClassCost& c = banded.classes[static_cast<std::size_t>(i)];
    c.error_band_from_published = false;
    c.error_band_pct.reset();
    if (cls == KernelClass::kAllToAll || cls == KernelClass::kHostCopy) continue;
    c.error_band_pct = SourcedValue::assumed(7.0, "test");
  }
  const KernelCostModel prefill(f.prefill.gpu(), banded, false), decode(f.decode.gpu(), banded, true);
  ServingSimulation sim(f.model, prefill, decode, f.deployment, f.workload, 1);
  const ServingResult r = sim.run(60);
  ASSERT_GT(r.decode_steps, 0);
  EXPECT_NEAR(r.decode_band.pct, 7.0, 1e-9);
  EXPECT_NEAR(r.prefill_band.pct, 7.0, 1e-9);
  EXPECT_EQ(r.decode_band.published_share, 0.0);
  EXPECT_GT(r.decode_band.covered_share, 0.5);
  EXPECT_LT(r.decode_band.covered_share, 1.0);  // EP all-to-all (64 GPUs, EP 8) carries no band
  // The band does not change what is simulated.
  EXPECT_EQ(r.finished, plain.finished);
  EXPECT_EQ(r.ttft_ms.p50, plain.ttft_ms.p50);
}

// Context-parallel prefill: a ~1M-token prompt sliced over the 8 ranks of its
// instance. Every token is still prefilled once, and TTFT falls by most of
// the rank count (each slice's attention reaches further back, and the KV
// slices are exchanged over NVLink).
TEST(Serving, ContextParallelPrefillCutsLongPromptTtft) {
  Fixture plain(testing::model_path("deepseek_v4_1_flash"), data("workloads/deployments/h200_pd_64.yaml"),
                data("workloads/stress_1m.yaml"));
  Fixture cp(testing::model_path("deepseek_v4_1_flash"), data("workloads/deployments/h200_pd_64_cp.yaml"),
             data("workloads/stress_1m.yaml"));
  ASSERT_EQ(cp.deployment.prefill.context_parallel_min_tokens, 65536);
  const ServingResult a = plain.run(600, 1, true);
  const ServingResult b = cp.run(600, 1, true);
  EXPECT_EQ(a.context_parallel_steps, 0);
  EXPECT_GT(b.context_parallel_steps, 0);
  ASSERT_EQ(b.arrived, a.arrived);  // same traffic
  EXPECT_EQ(b.input_tokens_prefilled, b.input_tokens_to_compute);
  EXPECT_EQ(b.output_tokens_generated, b.output_tokens_of_finished);
  const double speedup = a.ttft_ms.p50 / b.ttft_ms.p50;
  EXPECT_GT(speedup, 4.0) << a.ttft_ms.p50 << " vs " << b.ttft_ms.p50;
  EXPECT_LT(speedup, 8.0);  // never better than the rank count
  // A CP step is one prompt's slices: fewer, longer steps than chunked prefill.
  EXPECT_LT(b.prefill_steps, a.prefill_steps);
}

// Each rank of a context-parallel prompt's instance reads every earlier
// slice, so the ranks gather its KV and each holds it until it is shipped.
// Eight short prompts with long answers take the eight decode slots; a
// 200K-token prompt then waits for a slot, its KV held on all eight prefill
// GPUs, so the prefill pool's KV in use reaches the prompt's bytes on each
// GPU (counted on one rank, an eighth of that).
TEST(Serving, AContextParallelPromptHoldsItsKvOnEveryRank) {
  std::string rows;
  for (int i = 0; i < 8; ++i) rows += fmt::format("{},{},1000,3000\n", 0.001 * i, i);
  rows += "0.5,8,200000,2\n";
  Fixture f = tiny_trace("v41sim_cp_hold", rows, "tests/data/cp_one_decode_slot.yaml",
                         testing::model_path("deepseek_v4_1_flash"));
  const ServingResult r = f.run(20);
  ASSERT_GT(r.context_parallel_steps, 0);
  const double room = kv_bytes_per_gpu(f.model, f.deployment, f.deployment.prefill, f.prefill.gpu());
  const double prompt = f.model.kv.session_bytes(200000);
  double most = 0;
  for (const OccupancySample& s : r.occupancy) most = std::max(most, s.prefill_kv_used_fraction);
  EXPECT_GE(most, prompt / room * (1 - 1e-9)) << prompt << " B of " << room;
  EXPECT_LT(most, 1.01 * prompt / room);  // and the short prompts' little
}

// Aggregated, a context-parallel prompt's KV is gathered on every rank of
// its instance while it is prefilled: its own rank holds its final context
// (it decodes there), the seven others a copy of the prompt each, given back
// once the prompt is prefilled.
TEST(Serving, AnAggregatedContextParallelPromptIsGatheredOnEveryRank) {
  Fixture f = tiny_trace("v41sim_cp_aggregated", "0.5,0,200000,2000\n",
                         "workloads/deployments/h200_agg_8.yaml", testing::model_path("deepseek_v4_1_flash"));
  f.deployment.prefill.context_parallel_min_tokens = 65536;
  const ServingResult r = f.run(30);
  ASSERT_GT(r.context_parallel_steps, 0);
  ASSERT_EQ(r.finished, 1);
  const double room = 8 * kv_bytes_per_gpu(f.model, f.deployment, f.deployment.decode, f.decode.gpu());
  const double gathered = f.model.kv.session_bytes(202000) + 7 * f.model.kv.session_bytes(200000);
  double most = 0;
  for (const OccupancySample& s : r.occupancy) most = std::max(most, s.decode_kv_used_fraction);
  EXPECT_GE(most, gathered / room * (1 - 1e-9)) << gathered << " B of " << room;
  EXPECT_LT(most, 1.0001 * gathered / room);
  EXPECT_NEAR(r.occupancy.back().decode_kv_used_fraction, 0, 1e-12);  // every copy given back
}

// An aggregated instance holds a prompt's KV and batch slot from its first
// chunk on, as an engine that prefills into its own KV pool must: with room
// for two sequences on its one GPU, no more than two requests are ever
// between their first prefill chunk and their last token, so the third waits
// before prefill (where its TTFT sees the wait), not after it.
TEST(Serving, AggregatedPromptsHoldTheirKvFromTheFirstChunk) {
  Fixture f = tiny_aggregated_chat();
  f.workload.sessions_per_s = 4;  // far more than two sequences at a time can serve
  f.deployment.decode.max_batch_per_gpu = 2;
  for (const auto steps :
       {DeploymentSpec::AggregatedSteps::kPrefillFirst, DeploymentSpec::AggregatedSteps::kMixed}) {
    f.deployment.aggregated_steps = steps;
    const ServingResult r = traced_run(f, 60);
    EXPECT_EQ(r.arrived, r.finished + r.rejected);
    std::map<int64_t, double> started;  // request -> first prefill chunk
    std::vector<std::pair<double, int>> changes;
    for (const TraceSpan& s : r.trace) {
      if (s.kind == TraceSpan::Kind::kRequestPrefill) started[s.instance] = s.start_us;
    }
    for (const TraceSpan& s : r.trace) {
      if (s.kind != TraceSpan::Kind::kRequest || !started.contains(s.instance)) continue;
      changes.emplace_back(started[s.instance], +1);
      // Less a nanosecond: start + duration may round past the next hold's start.
      changes.emplace_back(s.start_us + s.duration_us - 1e-3, -1);
    }
    std::sort(changes.begin(), changes.end());
    int holding = 0;
    int most = 0;
    for (const auto& [time_us, change] : changes) most = std::max(most, holding += change);
    ASSERT_GT(changes.size(), 40u);
    EXPECT_EQ(most, 2) << aggregated_steps_name(steps);
    EXPECT_GT(r.prefill_wait_ms.p99, 1000.0) << aggregated_steps_name(steps);
  }
}

// Common random numbers: what a session asks (its turns' prompt and output
// tokens) comes from its own stream, so two deployments given one seed serve
// the same sessions even where their timing differs. Each session's first
// turn arrives at the same time in both runs and must ask for the same tokens.
TEST(Serving, OneSeedServesTheSameSessionsOnAnyDeployment) {
  Fixture f = tiny_aggregated_chat();
  f.workload.sessions_per_s = 4;
  const auto requests = [&f](int64_t max_batch) {
    f.deployment.decode.max_batch_per_gpu = max_batch;
    std::map<double, int64_t> output_by_arrival;
    for (const TraceSpan& s : traced_run(f, 60, 7).trace) {
      if (s.kind == TraceSpan::Kind::kRequest) output_by_arrival[s.start_us] = s.size;
    }
    return output_by_arrival;
  };
  const auto roomy = requests(64);
  const auto tight = requests(2);  // other step times, other queues: later turns arrive at other times
  int64_t same_arrival = 0;
  for (const auto& [arrival_us, output_tokens] : roomy) {
    const auto it = tight.find(arrival_us);
    if (it == tight.end()) continue;
    ++same_arrival;
    EXPECT_EQ(it->second, output_tokens) << "request arriving at " << arrival_us << " us";
  }
  EXPECT_GT(same_arrival, 100);
  EXPECT_LT(same_arrival, static_cast<int64_t>(roomy.size()));  // the later turns did move
}

// Disaggregated: a decode rank takes a request's KV room and batch slot
// before the prefill side ships its KV (as Mooncake and SGLang's PD
// disaggregation allocate first), so on a decode GPU with one slot, one
// request's KV transfer never overlaps another's decoding.
TEST(Serving, DecodeTakesTheSlotBeforeTheKvIsShipped) {
  Fixture f(data("tests/data/tiny_gqa.yaml"), data("tests/data/one_gpu.yaml"), data("workloads/chat.yaml"));
  f.workload.sessions_per_s = 2;
  f.deployment.decode.max_batch_per_gpu = 1;
  const ServingResult r = traced_run(f, 60);
  std::map<int64_t, std::pair<double, double>> held;  // request -> from its KV transfer to its last token
  for (const TraceSpan& s : r.trace) {
    if (s.kind == TraceSpan::Kind::kRequestKvTransfer) held[s.instance].first = s.start_us;
    if (s.kind == TraceSpan::Kind::kRequestDecode) held[s.instance].second = s.start_us + s.duration_us;
  }
  std::vector<std::pair<double, double>> spans;
  for (const auto& [id, span] : held) {
    if (span.first > 0) spans.push_back(span);
  }
  std::sort(spans.begin(), spans.end());
  ASSERT_GT(spans.size(), 20u);
  for (std::size_t i = 1; i < spans.size(); ++i) EXPECT_GE(spans[i].first, spans[i - 1].second - 1e-3) << i;
  EXPECT_GT(r.decode_wait_ms.p99, 0.0);  // requests did wait for the slot
}

// The first token reaches the client when the decode side streams it:
// disaggregated, once the prompt's KV has reached its decode GPU (after any
// wait for a decode slot and the transfer), so TTFT holds those and TPOT
// counts from there; aggregated, as the prompt is prefilled. (Before, a
// disaggregated TTFT ended at the prefill, and the transfer and any wait for
// a decode slot fell into TPOT.)
TEST(Serving, TheFirstTokenReachesTheClientFromTheDecodeSide) {
  for (const char* deployment : {"tests/data/one_gpu.yaml", "tests/data/aggregated.yaml"}) {
    Fixture f(data("tests/data/tiny_gqa.yaml"), data(deployment), data("workloads/chat.yaml"));
    f.workload.sessions_per_s = 2;
    f.deployment.decode.max_batch_per_gpu = 4;  // decode slots run short: prompts wait for them
    ServingSimulation sim(f.model, f.prefill.cost(), f.decode.cost(), f.deployment, f.workload, 1);
    sim.enable_trace(60);
    sim.enable_request_log();
    const ServingResult r = sim.run(60, true);
    std::map<int64_t, double> arrival_us, prefilled_us, at_decode_us, finished_us;
    for (const TraceSpan& t : r.trace) {
      if (t.kind == TraceSpan::Kind::kRequest) arrival_us[t.instance] = t.start_us;
      if (t.kind == TraceSpan::Kind::kRequest) finished_us[t.instance] = t.start_us + t.duration_us;
      if (t.kind == TraceSpan::Kind::kRequestPrefill) prefilled_us[t.instance] = t.start_us + t.duration_us;
      if (t.kind == TraceSpan::Kind::kRequestDecode) at_decode_us[t.instance] = t.start_us;
    }
    int64_t checked = 0;
    double waited_ms = 0;
    for (const RequestRecord& x : r.requests) {
      if (x.status != "finished" || x.output_tokens < 2 || !at_decode_us.contains(x.id)) continue;
      const double first_us = f.deployment.disaggregated ? at_decode_us[x.id] : prefilled_us[x.id];
      EXPECT_NEAR(x.ttft_ms, (first_us - arrival_us[x.id]) / 1e3, 1e-6) << deployment << " " << x.id;
      EXPECT_NEAR(x.tpot_ms, (finished_us[x.id] - first_us) / 1e3 / static_cast<double>(x.output_tokens - 1),
                  1e-6)
          << deployment << " " << x.id;
      if (f.deployment.disaggregated) waited_ms += x.decode_wait_ms + x.transfer_ms;
      ++checked;
    }
    EXPECT_GT(checked, 20) << deployment;
    if (f.deployment.disaggregated) {
      EXPECT_GT(waited_ms, 0.0);  // TTFT holds waits it did not before
    }
  }
}

// A sequence whose KV reaches its decode GPU while a step runs was not in that
// step: it joins the next. Without drafts each step gives each of its
// sequences one token, so a request's decode (from its KV's arrival to its
// last token) holds exactly one whole step per token after the first. (Before,
// the step under way when it arrived credited it too.)
TEST(Serving, ASequenceArrivingDuringADecodeStepJoinsTheNext) {
  Fixture f(data("tests/data/tiny_gqa.yaml"), data("tests/data/one_gpu.yaml"), data("workloads/chat.yaml"));
  f.workload.sessions_per_s = 2;
  ASSERT_FALSE(f.deployment.decode.speculative_decoding);
  const ServingResult r = traced_run(f, 30);
  std::vector<std::pair<double, double>> steps;
  std::vector<const TraceSpan*> decodes;
  for (const TraceSpan& s : r.trace) {
    if (s.kind == TraceSpan::Kind::kDecodeStep) steps.emplace_back(s.start_us, s.start_us + s.duration_us);
    // Those over by the trace's end, whose every step is traced.
    if (s.kind == TraceSpan::Kind::kRequestDecode && s.start_us + s.duration_us < 30e6) decodes.push_back(&s);
  }
  std::sort(steps.begin(), steps.end());
  ASSERT_GT(decodes.size(), 20u);
  int64_t joined_mid_step = 0;
  for (const TraceSpan* d : decodes) {
    const double from = d->start_us, to = d->start_us + d->duration_us;
    const auto whole = std::count_if(steps.begin(), steps.end(), [&](const auto& step) {
      return step.first >= from - 1e-6 && step.second <= to + 1e-6;
    });
    EXPECT_EQ(whole, d->size - 1) << "request " << d->instance;
    joined_mid_step += std::any_of(steps.begin(), steps.end(), [&](const auto& step) {
      return step.first < from - 1e-6 && step.second > from + 1e-6;
    });
  }
  EXPECT_GT(joined_mid_step, 10);  // the case this is about
}

// Disaggregated: a prompt's KV goes from the prefill GPU that holds it to the
// decode GPU, NIC to NIC, at one NIC's achievable rate; two prompts done
// together on two prefill ranks queue for the one decode GPU's NIC. (Before,
// a transfer had all of its prefill instance's NICs to itself.) The first
// prompt's step runs alone; the two after it take a rank each and end together.
TEST(Serving, KvGoesNicToNicAndQueuesAtTheDecodeGpu) {
  Fixture f = tiny_trace("v41sim_kv_nics", "1.0,0,2048,2\n1.001,1,2048,2\n1.001,2,2048,2\n",
                         "tests/data/one_gpu.yaml");
  f.deployment.prefill.gpus_per_instance = 2;  // data-parallel ranks (a dense model: EP 1)
  const ServingResult r = traced_run(f, 10);
  std::vector<double> transfers_us;
  for (const TraceSpan& s : r.trace) {
    if (s.kind == TraceSpan::Kind::kRequestKvTransfer) transfers_us.push_back(s.duration_us);
  }
  ASSERT_EQ(transfers_us.size(), 3u);
  std::sort(transfers_us.begin(), transfers_us.end());
  const GpuProfile& h200 = f.prefill.cost().gpu();
  const double one_nic =
      h200.nic_bytes_per_s.value() * f.prefill.cost().params().links.nic_efficiency.value();
  const double alone_us = f.model.kv.session_bytes(2048) / one_nic * 1e6;
  EXPECT_NEAR(transfers_us[0], alone_us, 1e-3 * alone_us);
  EXPECT_NEAR(transfers_us[1], alone_us, 1e-3 * alone_us);
  EXPECT_NEAR(transfers_us[2], 2 * alone_us, 1e-3 * alone_us);  // waited for the other
}

// Disaggregated, decode saturated: finished prompts wait for a decode slot
// holding their KV on the prefill instance, which has only so much memory;
// once it is full, new prompts wait in the prefill queue instead.
TEST(Serving, PrefillKvMemoryBoundsThePromptsWaitingForDecode) {
  Fixture f = v41_agents();
  f.deployment.prefill.instances = 1;
  f.deployment.decode.instances = 1;
  f.deployment.decode.max_batch_per_gpu = 1;
  f.deployment.reserve_fraction = 0.64;  // about 0.9 GB of KV per H200 after 49.8 GB of weights
  f.workload.sessions_per_s = 4;
  f.workload.turns = {Distribution::Kind::kFixed, 1, 0, 1, 1};
  f.workload.first_input_tokens = {Distribution::Kind::kFixed, 100000, 0, 100000, 100000};
  f.workload.output_tokens = {Distribution::Kind::kFixed, 2000, 0, 2000, 2000};
  const ServingResult r = f.run(300);
  double most = 0;
  for (const OccupancySample& s : r.occupancy) {
    EXPECT_LE(s.prefill_kv_used_fraction, 1.0 + 1e-12) << s.time_s;
    most = std::max(most, s.prefill_kv_used_fraction);
  }
  EXPECT_GT(most, 0.9);                             // it filled
  EXPECT_GT(r.occupancy.back().prefill_queue, 10);  // and prompts queued for it
  EXPECT_EQ(r.arrived, r.finished + r.in_flight + r.rejected);
  EXPECT_EQ(r.rejected, 0);
}

// Disaggregated, decode saturated: a prefill rank holds its finished
// prompts' KV until they are shipped, so routing counts that KV as load.
// Prompts arriving one at a time (each computed before the next comes) would
// otherwise all go to the first rank, which has no prompt tokens left to
// compute, until its memory is full, while the other waits empty.
TEST(Serving, PromptsWaitingToBeShippedCountInTheirRanksLoad) {
  Fixture f = tiny_fixed();
  f.deployment.prefill.gpus_per_instance = 2;  // data-parallel ranks (a dense model: EP 1)
  f.deployment.decode.max_batch_per_gpu = 1;
  f.deployment.reserve_fraction = 0.98;  // a few prompts' KV per GPU
  f.workload.sessions_per_s = 0.5;
  f.workload.output_tokens = {Distribution::Kind::kFixed, 10000, 0, 10000, 10000};
  const ServingResult r = f.run(200);
  double most = 0;
  for (const OccupancySample& s : r.occupancy) {
    most = std::max(most, s.prefill_kv_used_fraction);
    // No prompt waits for KV room while a rank has room for several.
    if (s.prefill_kv_used_fraction < 0.8) {
      EXPECT_EQ(s.prefill_queue, 0) << s.time_s;
    }
  }
  EXPECT_GT(most, 0.9);  // both ranks filled
  EXPECT_LE(most, 1.0 + 1e-12);
  EXPECT_EQ(r.rejected, 0);
}

// One-token answers finish at the prefill instance and give its KV back
// there, mid-way through the step's completions: no chunk may be taken twice.
TEST(Serving, PromptsEndingAtPrefillGiveTheirKvBackOnce) {
  Fixture f = v41_agents();
  f.deployment.reserve_fraction = 0.64;  // little KV room, so prompts wait for the room given back
  f.workload.sessions_per_s = 4;
  f.workload.output_tokens = {Distribution::Kind::kFixed, 1, 0, 1, 1};
  const ServingResult r = f.run(120, 1, true);
  EXPECT_EQ(r.in_flight, 0);
  EXPECT_EQ(r.input_tokens_prefilled, r.input_tokens_to_compute);
  EXPECT_EQ(r.arrived, r.finished + r.rejected);
  EXPECT_GT(r.finished, 100);
}

}  // namespace
}  // namespace v41sim
