// Traces in Mooncake's block-hashed format: reading them, the tiers keyed by
// block, and a served trace finding exactly the prefix its prompts share.
#include "sim/serving/mooncake_trace.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/common/input_error.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/model/model_analysis.h"
#include "sim/model/model_loader.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/kv_tiers.h"
#include "sim/serving/serving_simulation.h"
#include "tests/test_data.h"

namespace v41sim {
namespace {

std::string data(const std::string& file) { return std::string(V41SIM_SOURCE_DIR) + "/" + file; }

// A folder of its own holding `trace.jsonl` with these lines, and a workload naming it.
std::filesystem::path write_trace(const std::string& name, const std::string& lines,
                                  const std::string& block_tokens = "512") {
  const auto dir = std::filesystem::temp_directory_path() / ("v41sim_mooncake_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "trace.jsonl") << lines;
  std::ofstream(dir / "w.yaml") << "name: t\nsource: test\narrival: {process: trace, file: trace.jsonl, "
                                   "block_tokens: "
                                << block_tokens << "}\n";
  return dir;
}

TEST(MooncakeTrace, ReadsEachLineAsARequestOfItsOwn) {
  const auto dir = write_trace("read",
                               "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 7, "
                               "\"hash_ids\": [0, 1, 2]}\n"
                               "\n"
                               "{\"timestamp\": 2500, \"input_length\": 1300, \"output_length\": 1, "
                               "\"hash_ids\": [0, 1, 3]}\n");
  const WorkloadSpec w = load_workload_file((dir / "w.yaml").string());
  EXPECT_EQ(w.arrival, WorkloadSpec::Arrival::kTrace);
  EXPECT_EQ(w.trace_block_tokens, 512);
  ASSERT_EQ(w.trace.size(), 2u);
  EXPECT_DOUBLE_EQ(w.trace[1].time_s, 2.5);
  EXPECT_EQ(w.trace[0].session, 0);
  EXPECT_EQ(w.trace[1].session, 1);
  EXPECT_EQ(w.trace[1].input_tokens, 1300);
  EXPECT_EQ(w.trace[0].output_tokens, 7);
  EXPECT_EQ(w.trace[1].blocks, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(w.trace[0].blocks_first_seen, 3);
  EXPECT_EQ(w.trace[1].blocks_first_seen, 1);  // block 3 alone is new
  EXPECT_EQ(w.trace[0].blocks_leading_seen, 0);
  EXPECT_EQ(w.trace[1].blocks_leading_seen, 2);
}

// Each bad line is refused with the file, its line and the field.
TEST(MooncakeTrace, BadLinesNameTheirLineAndField) {
  const std::string good =
      "{\"timestamp\": 5, \"input_length\": 600, \"output_length\": 2, \"hash_ids\": [0, 1]}\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"timestamp\": 1, \"input_length\": 600", ":2: malformed JSON"},
      {"[1, 2]", ":2: expected one JSON object per line"},
      {"{\"timestamp\": 9, \"input_length\": 600, \"output_length\": 2, \"hash_ids\": [0, 1], \"text\": "
       "\"x\"}",
       ":2: field 'text': unknown field"},
      {"{\"timestamp\": 9, \"input_length\": 600, \"hash_ids\": [0, 1]}",
       ":2: field 'output_length': required field is missing"},
      {"{\"timestamp\": 1, \"input_length\": 600, \"output_length\": 2, \"hash_ids\": [0, 1]}",
       ":2: field 'timestamp': lines must be in time order"},
      {"{\"timestamp\": 9, \"input_length\": 600.5, \"output_length\": 2, \"hash_ids\": [0, 1]}",
       ":2: field 'input_length': expected a whole number in [1, 2147483647], got 600.5"},
      {"{\"timestamp\": 9, \"input_length\": 600, \"output_length\": 0, \"hash_ids\": [0, 1]}",
       ":2: field 'output_length': expected a whole number"},
      {"{\"timestamp\": 9, \"input_length\": 600, \"output_length\": 2, \"hash_ids\": [0, 1, 2]}",
       ":2: field 'hash_ids': expected 2 block ids (input_length 600 in blocks of 512 tokens), got 3"},
      {"{\"timestamp\": 9, \"input_length\": 600, \"output_length\": 2, \"hash_ids\": [0, -1]}",
       ":2: field 'hash_ids': expected a whole number in [0, "},
      {"{\"timestamp\": \"late\", \"input_length\": 600, \"output_length\": 2, \"hash_ids\": [0, 1]}",
       ":2: field 'timestamp': expected milliseconds in [0, 2305843000], got \"late\""},
      {"{\"timestamp\": 1e300, \"input_length\": 600, \"output_length\": 2, \"hash_ids\": [0, 1]}",
       ":2: field 'timestamp': expected milliseconds in [0, 2305843000], got 1e+300"},
      {"{\"timestamp\": 9, \"input_length\": 1e999, \"output_length\": 2, \"hash_ids\": [0, 1]}",
       ":2: malformed JSON"},
  };
  for (const auto& [line, message] : cases) {
    const auto dir = write_trace("bad", good + line + "\n");
    try {
      load_workload_file((dir / "w.yaml").string());
      ADD_FAILURE() << "accepted: " << line;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find((dir / "trace.jsonl").string() + message), std::string::npos) << what;
    }
  }
}

// The trace does not say its block size: the workload must, and a CSV trace has none.
TEST(MooncakeTrace, TheBlockSizeIsGivenForAJsonLinesTraceAlone) {
  const auto dir = write_trace("no_block",
                               "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, "
                               "\"hash_ids\": [0]}\n");
  std::ofstream(dir / "w.yaml") << "name: t\nsource: test\narrival: {process: trace, file: trace.jsonl}\n";
  EXPECT_THROW(load_workload_file((dir / "w.yaml").string()), InputError);
  std::ofstream(dir / "t.csv") << "time_s,session,input_tokens,output_tokens\n0,0,10,1\n";
  std::ofstream(dir / "c.yaml")
      << "name: t\nsource: test\narrival: {process: trace, file: t.csv, block_tokens: 512}\n";
  try {
    load_workload_file((dir / "c.yaml").string());
    ADD_FAILURE() << "a CSV trace took block_tokens";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("only a block-hashed trace (.jsonl) has blocks"), std::string::npos);
  }
}

// A trace at another rate: its rows' times scaled by its own rate over the
// one asked, its sessions and tokens as they are; a trace all at time 0, or
// one stretched past the simulator's clock, is the caller's error.
TEST(MooncakeTrace, ATraceRunsAtAnotherRateByScalingItsTimes) {
  const auto dir = write_trace("rate",
                               "{\"timestamp\": 1000, \"input_length\": 600, \"output_length\": 2, "
                               "\"hash_ids\": [0, 1]}\n"
                               "{\"timestamp\": 4000, \"input_length\": 600, \"output_length\": 2, "
                               "\"hash_ids\": [0, 2]}\n");
  const WorkloadSpec w = load_workload_file((dir / "w.yaml").string());
  EXPECT_DOUBLE_EQ(w.sessions_per_s, 2 / 4.0);  // two sessions over its last row's 4 s
  const WorkloadSpec fast = at_rate(w, 2.0, {"", 0, "--sessions-per-s"});
  EXPECT_DOUBLE_EQ(fast.sessions_per_s, 2.0);
  EXPECT_DOUBLE_EQ(fast.trace[0].time_s, 0.25);
  EXPECT_DOUBLE_EQ(fast.trace[1].time_s, 1.0);
  EXPECT_EQ(fast.trace[1].blocks, w.trace[1].blocks);
  EXPECT_EQ(fast.trace[1].input_tokens, w.trace[1].input_tokens);
  EXPECT_THROW(at_rate(w, 1e-9, {"", 0, "--sessions-per-s"}), InputError);
  WorkloadSpec instant = w;
  for (WorkloadSpec::TraceRow& row : instant.trace) row.time_s = 0;
  instant.sessions_per_s = 0;
  EXPECT_THROW(at_rate(instant, 1.0, {"", 0, "--sessions-per-s"}), InputError);
  // A Poisson workload's rate is simply replaced.
  const WorkloadSpec poisson = load_workload_file(data("workloads/agent_coding.yaml"));
  EXPECT_DOUBLE_EQ(at_rate(poisson, 3.0, {}).sessions_per_s, 3.0);
}

// Keyed by block: a prompt finds the run of its leading blocks still held
// (all but its last token at most), and the window state where that run ends
// at a stored prompt's last block, for the host pool's TTL from when it was
// parked (a later prompt persisting the block again does not extend it).
TEST(KvTiers, ABlockHashedPromptFindsTheRunOfItsLeadingBlocks) {
  SessionKvTiers tiers(3600, 300, 4);
  const auto at = [](double s) { return SimTime::from_s(s); };
  tiers.store_blocks({0, 1, 2}, 512, at(0));
  TierLookup hit = tiers.lookup_blocks({0, 1, 5, 2}, 512, 2000, at(10));
  EXPECT_EQ(hit.cached_tokens, 1024);  // block 5 breaks the run: block 2 after it does not count
  EXPECT_FALSE(hit.swa_hit);           // no prompt ended at block 1
  hit = tiers.lookup_blocks({0, 1, 2}, 512, 1200, at(10));
  EXPECT_EQ(hit.cached_tokens, 1199);  // the whole prompt: its last token still runs
  EXPECT_TRUE(hit.swa_hit);
  EXPECT_EQ(tiers.lookup_blocks({7, 0}, 512, 900, at(10)).cached_tokens, 0);
  // Block 2 persisted again inside a longer prompt: its KV stays longer, its parked window state does not.
  tiers.store_blocks({0, 1, 2, 3}, 512, at(200));
  hit = tiers.lookup_blocks({0, 1, 2, 9}, 512, 1900, at(350));
  EXPECT_EQ(hit.cached_tokens, 1536);
  EXPECT_FALSE(hit.swa_hit);  // parked at 0, past the 300-s TTL
  EXPECT_TRUE(tiers.lookup_blocks({0, 1, 2, 3}, 512, 1900, at(350)).swa_hit);
  // Past the retention, from each block's last store.
  EXPECT_EQ(tiers.lookup_blocks({0, 1, 2, 3}, 512, 2100, at(3700)).cached_tokens, 2048);
  EXPECT_EQ(tiers.lookup_blocks({0, 1, 2, 3}, 512, 2100, at(3801)).cached_tokens, 0);
  const KvTierCounters& c = tiers.counters();
  EXPECT_EQ(c.global_hits, 5);
  EXPECT_EQ(c.global_misses, 2);
}

// Served: the second prompt shares two blocks with the first, prefilled (and
// still decoding its long answer) when it came, so it computes only the rest;
// the tier's steady state counts the blocks each prompt adds (3 and 1).
TEST(Serving, ABlockHashedTraceComputesOnlyWhatItsPromptsDoNotShare) {
  const auto dir = write_trace("served",
                               "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 4000, "
                               "\"hash_ids\": [0, 1, 2]}\n"
                               "{\"timestamp\": 1000, \"input_length\": 1300, \"output_length\": 2, "
                               "\"hash_ids\": [0, 1, 3]}\n");
  const ModelAnalysis model = analyze_model(load_model_file(data("tests/data/tiny_gqa.yaml")));
  const DeploymentSpec deployment = load_deployment_file(data("tests/data/aggregated.yaml"));
  const WorkloadSpec workload = load_workload_file((dir / "w.yaml").string());
  const GpuCostModel gpu(V41SIM_SOURCE_DIR, testing::gpu_path("h200"), false);
  ServingSimulation sim(model, gpu.cost(), gpu.cost(), deployment, workload, 1);
  sim.enable_request_log();
  const ServingResult r = sim.run(120, true);
  ASSERT_EQ(r.finished, 2);
  ASSERT_GT(r.requests[0].e2e_ms, 1000) << "the first must still be decoding when the second comes";
  EXPECT_EQ(r.input_tokens_cached, 1024);
  EXPECT_EQ(r.input_tokens_shareable, 1024);  // all a tier could give it, found
  EXPECT_EQ(r.input_tokens_prefilled, 1100 + (1300 - 1024));
  EXPECT_EQ(r.kv_tiers.global_hits, 1);
  EXPECT_EQ(r.kv_tiers.global_misses, 1);
  EXPECT_DOUBLE_EQ(r.mean_last_context_tokens, (3 + 1) * 512 / 2.0);
  // With no tier, nothing is found; what a tier could have served stays.
  DeploymentSpec no_tier = deployment;
  no_tier.kv.retention_s = 0;
  const ServingResult none =
      ServingSimulation(model, gpu.cost(), gpu.cost(), no_tier, workload, 1).run(120, true);
  EXPECT_EQ(none.input_tokens_cached, 0);
  EXPECT_EQ(none.input_tokens_shareable, 1024);
}

// A tier of bounded size keeps a block until what the trace stores fills it:
// by Little's law, the rows' rate x the new blocks each brings x that time.
TEST(Serving, ABoundedTierSizesItselfFromTheBlocksATraceAdds) {
  const ModelAnalysis model = analyze_model(load_model_file(testing::model_path("deepseek_v4_1_flash")));
  DeploymentSpec deployment = load_deployment_file(data("workloads/deployments/h200_agg_8.yaml"));
  const WorkloadSpec workload = load_workload_file(data("workloads/mooncake_sample.yaml"));
  deployment.kv.ssd_capacity_tb = SourcedValue::assumed(0.0002, "test");
  double new_tokens = 0;
  for (const WorkloadSpec::TraceRow& row : workload.trace) {
    new_tokens += static_cast<double>(row.blocks_first_seen * workload.trace_block_tokens);
  }
  const double bytes_per_s = workload.sessions_per_s * new_tokens /
                             static_cast<double>(workload.trace.size()) * model.kv.global_bytes_per_token;
  const GpuCostModel gpu(V41SIM_SOURCE_DIR, testing::gpu_path("h200"), true);
  ServingSimulation sim(model, gpu.cost(), gpu.cost(), deployment, workload, 1);
  const ServingResult r = sim.run(10);
  ASSERT_LT(r.tier_keeps_s, deployment.kv.retention_s);
  EXPECT_NEAR(r.tier_keeps_s, 0.0002e12 / bytes_per_s, 1e-6 * r.tier_keeps_s);
}

}  // namespace
}  // namespace v41sim
