// The report's answers in brief are read off its own JSON: the largest
// context's figures, the first variant that meets the SLA (and the first
// disaggregated one), and the published figures within tolerance.
#include "sim/report/study_summary.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

namespace v41sim {
namespace {

using nlohmann::json;

// Whether the summary's text says `phrase`, with the whole text in the message either way.
::testing::AssertionResult says(const std::string& text, const std::string& phrase) {
  if (text.find(phrase) != std::string::npos)
    return ::testing::AssertionSuccess() << "it says '" << phrase << "' in:\n" << text;
  return ::testing::AssertionFailure() << "it does not say '" << phrase << "' in:\n" << text;
}

json fit(int64_t context, const std::string& gpu, int64_t sessions) {
  return {{"context_tokens", context}, {"gpu", gpu}, {"gpus", 8}, {"ep", 8}, {"sessions", sessions}};
}

// A step as the report's JSON has it; split_us: its time as two micro-batches (default 1.5x);
// held: the sequences of its context one GPU keeps KV for (its batch of 32 fits from 32 on).
json step(const std::string& phase, int64_t context, double us, bool known, double split_us = 0,
          int64_t held = 87) {
  return {{"phase", phase},
          {"context", context},
          {"batch", 32},
          {"gpu", "NVIDIA H200 SXM 141GB"},
          {"total_time_us", us},
          {"two_micro_batches_us", split_us > 0 ? split_us : 1.5 * us},
          {"error_band", {{"known", known}, {"pct_at_90", 12.0}}},
          {"kv_memory", {{"fits", held >= 32}, {"sequences_held_at_context", held}}}};
}

json row(const std::string& name, bool meets, bool disaggregated, double usd) {
  return {{"deployment", name},
          {"meets_sla", meets},
          {"disaggregated", disaggregated},
          {"tpot_ms", {{"p99", 7.5}}},
          {"itl_ms", {{"p99", 30.5}}},
          {"longest_itl_ms", {{"p99", 41.5}}},
          {"cost", {{"known", true}, {"usd_per_million_output_tokens", usd}}}};
}

// An aggregated plan row: how it ran prompts, on which decode pool, its TPOT p99.
json steps(json plan_row, const std::string& schedule, const std::string& gpu, int64_t instances,
           double p99) {
  plan_row["aggregated_steps"] = schedule;
  plan_row["decode"] = {{"gpu", gpu}, {"instances", instances}, {"ep", 8}};
  plan_row["prefill"] = {{"gpu", gpu}};
  plan_row["tpot_ms"]["p99"] = p99;
  return plan_row;
}

// A plan row's pools: prefill on one GPU, decode on another.
json on(json plan_row, const std::string& prefill_gpu, const std::string& decode_gpu) {
  plan_row["prefill"] = {{"gpu", prefill_gpu}};
  plan_row["decode"] = {{"gpu", decode_gpu}, {"instances", 1}, {"ep", 8}};
  return plan_row;
}

// An aggregated plan row whose prompts wait up to `delay` decode steps for the
// other ranks', with its share within the SLA and TTFT p99.
json delayed(json plan_row, int64_t delay, double within, double ttft_p99) {
  plan_row["prefill_delay_steps"] = delay;
  plan_row["within_sla"] = within;
  plan_row["ttft_ms"] = {{"p99", ttft_p99}};
  return plan_row;
}

// A plan row's decode pool (instances x EP on one GPU) and its share within the SLA.
json pool(json plan_row, const std::string& gpu, int64_t instances, int64_t ep, double within) {
  plan_row["decode"] = {{"gpu", gpu}, {"instances", instances}, {"ep", ep}};
  plan_row["within_sla"] = within;
  return plan_row;
}

// A context sweep's point as the report's JSON has it.
json point(int64_t context, int64_t sessions, double ttft_ms, int64_t batch, const std::string& bound,
           double decode_only, double with_prompt) {
  return {{"context", context},
          {"sessions_per_decode_gpu", sessions},
          {"lone_ttft_ms", ttft_ms},
          {"decode", {{"batch_per_gpu", batch}, {"bound", bound}}},
          {"cost",
           {{"known", true},
            {"usd_per_million_output_decode_only", decode_only},
            {"usd_per_million_output_prompt_included", with_prompt},
            {"tier_pays_at_return_share", decode_only / with_prompt}}}};  // any share, for the test
}

// A plan row with the KV tiers it ran and its share within the SLA.
// A plan row run with three seeds: its price, TPOT p99, ITL p99 (four
// times TPOT's) and longest ITL p99 (five times) as mean, least and most.
json over_three_seeds(json plan_row, double usd_mean, double tpot_mean) {
  const auto spread = [](double mean) {
    return json{{"mean", mean}, {"min", mean - 0.5}, {"max", mean + 0.5}};
  };
  plan_row["over_seeds"] = {{"count", 3},
                            {"usd_per_million_output", spread(usd_mean)},
                            {"tpot_p99_ms", spread(tpot_mean)},
                            {"itl_p99_ms", spread(4 * tpot_mean)},
                            {"longest_itl_p99_ms", spread(5 * tpot_mean)}};
  return plan_row;
}

json tiers(json plan_row, double retention_h, double pool, double within) {
  plan_row["kv_tiers"] = {{"retention_h", retention_h}, {"swa_pool_fraction", pool}};
  plan_row["within_sla"] = within;
  return plan_row;
}

// A KV-tier row with its SSD tier's size (nullopt: unbounded).
json sized(json plan_row, std::optional<double> capacity_tb) {
  plan_row["kv_tiers"]["ssd_capacity_tb"] = capacity_tb ? json(*capacity_tb) : json(nullptr);
  return plan_row;
}

TEST(StudySummary, ReadsTheSectionsFiguresOffTheReport) {
  const json report{
      {"context_sweeps",
       {{{"deployment", "1 x 8 h200"},
         {"output_tokens", 2000},
         {"tpot_limit_ms", 60.0},
         {"max_batch_per_gpu", 0},
         {"points",
          {point(8192, 7832, 140, 1056, "TPOT", 0.02, 0.05), point(65536, 900, 900, 500, "TPOT", 0.03, 0.3),
           point(1048576, 83, 28800, 83, "KV memory", 0.08, 5.72)}}},
        {{"deployment", "1 x 8 b200"}, {"points", json::array()}}}},
      {"claims", {{{"statement", "a claim"}, {"verdict_text", "holds only if a condition"}}}},
      {"step_sensitivity",
       {{"step", "H200 decode step"},
        {"swing", 0.25},
        {"figures",
         {{{"field", "a"}, {"file", "f.yaml"}, {"change_pct", 9.0}},
          {{"field", "b"}, {"file", "f.yaml"}, {"change_pct", 4.0}},
          {{"field", "c"}, {"file", "g.yaml"}, {"change_pct", 2.0}},
          {{"field", "d"}, {"file", "g.yaml"}, {"change_pct", 1.0}}}}}},
      {"fits", {fit(131072, "NVIDIA H200 SXM 141GB", 5000), fit(1048576, "NVIDIA H200 SXM 141GB", 696)}},
      {"steps",
       {step("decode", 131072, 9000, true), step("decode", 1048576, 22700, true),
        step("prefill", 4194304, 1e6, true, 0.9e6)}},
      {"plan",
       {{"workload", "agent coding"},
        {"rows",
         {pool(row("too slow", false, false, 0.1), "h20", 1, 8, 0.2),
          pool(row("fits", true, false, 0.5), "h200", 1, 8, 0.995),
          {{"deployment", "x"}}}}}},
      {"plan_layouts",
       {{"rows",
         {steps(row("one pool", true, false, 0.5), "mixed", "h100_sxm", 1, 18.3),
          delayed(steps(row("held", false, false, 0.4), "prefill_first", "h100_sxm", 1, 9.1), 30, 0.97,
                  12000),
          steps(row("own steps", true, false, 0.59), "prefill_first", "h100_sxm", 1, 23.4),
          on(over_three_seeds(row("two pools", true, true, 0.7), 1.5, 8.0), "h100_sxm", "h100_sxm"),
          on(row("two GPUs", true, true, 0.6), "h200", "h100_sxm"),
          steps(row("two", true, false, 0.9), "mixed", "h100_sxm", 2, 11.0),
          steps(row("no pair", true, false, 0.62), "mixed", "h200", 1, 44.7)}}}},
      {"decode_frontier",
       {{"frontiers",
         {{{"deployment", "fast"},
           {"max_batch_per_gpu", 64},
           {"decode_gpu", "b200"},
           {"context", 131072},
           {"points",
            {{{"batch_per_gpu", 1},
              {"pareto", true},
              {"usd_per_million_output_tokens", 1.6},
              {"tokens_per_s_per_user", 330.0}},
             {{"batch_per_gpu", 951},
              {"pareto", true},
              {"usd_per_million_output_tokens", 0.02},
              {"tokens_per_s_per_user", 28.0}}}}},
          {{"deployment", "slow"},
           {"max_batch_per_gpu", 64},
           {"decode_gpu", "h100_sxm"},
           {"context", 131072},
           {"points",
            {{{"batch_per_gpu", 1},
              {"pareto", false},
              {"usd_per_million_output_tokens", 1.7},
              {"tokens_per_s_per_user", 214.0}}}}},
          {{"deployment", "unpriced"},
           {"max_batch_per_gpu", 64},
           {"decode_gpu", "h20"},
           {"context", 131072},
           {"points",
            {{{"batch_per_gpu", 1},
              {"pareto", true},
              {"usd_per_million_output_tokens", nullptr},
              {"tokens_per_s_per_user", 200.0}}}}}}}}},
      {"plan_kv_tiers",
       {{"workload", "agent coding"},
        {"base_deployments", {"workloads/deployments/h200_agg_8.yaml"}},
        {"rows",
         {tiers(row("both", true, false, 0.66), 72, 0.1, 0.997),
          tiers(row("none", false, false, 1.57), 0, 0, 0.349)}},
        {"by_size",
         {{"workload", "agent coding, resumed"},
          {"base_deployments", {"workloads/deployments/h200_agg_8.yaml"}},
          {"rows",
           {sized(tiers(row("unbounded", true, false, 0.69), 72, 0.1, 0.999), std::nullopt),
            sized(tiers(row("two", true, false, 0.80), 72, 0.1, 0.994), 2.0)}}}}}},
      {"capacity",
       {{{"deployment", "8 x H200, own steps"},
         {"workload", "agent coding"},
         {"verdict", "up to 0.794 sessions/s"}},
        {{"deployment", "8 x H200, mixed"},
         {"workload", "agent coding"},
         {"verdict", "up to 0.857 sessions/s"}}}},
      {"validation",
       {{{"kind", "published"}, {"within_tolerance", true}},
        {{"kind", "published"}, {"within_tolerance", false}},
        {{"kind", "published"}, {"within_tolerance", true}}}}};
  const std::string text = study_summary(report).to_text();
  EXPECT_TRUE(says(text, "holds only if a condition"));
  // The three figures the step moves with most, not the fourth.
  EXPECT_TRUE(
      says(text, "assumed figures the H200 decode step moves with most (each moved 25% down and up)"));
  EXPECT_TRUE(says(text, "a (f.yaml) 9.0%; b (f.yaml) 4.0%; c (g.yaml) 2.0%"));
  EXPECT_FALSE(says(text, "d (g.yaml)"));
  EXPECT_TRUE(says(text, "1048576-token sessions that 8 GPUs hold"));
  EXPECT_TRUE(says(text, "H200 696"));
  EXPECT_FALSE(says(text, "H200 5000"));
  EXPECT_TRUE(says(text, "H200 22.7 ms ±12%"));  // decode at the largest context
  EXPECT_TRUE(says(
      text, "fits ($0.50 per 1M output tokens, TPOT p99 7.5 ms, ITL p99 30.5 ms, longest ITL p99 41.5 ms)"));
  EXPECT_FALSE(says(text, "too slow"));
  // One pool against a split on each GPU alone: a split over two GPUs, though cheaper, is not either's.
  EXPECT_TRUE(says(text, "on h100_sxm: one pool one pool ($0.50"));
  // A row run with several seeds gives their means (not the first seed's figures) and their range.
  EXPECT_TRUE(
      says(text,
           "; split two pools ($1.50 per 1M output tokens [$1.00-$2.00 over 3 seeds], "
           "TPOT p99 8.0 ms [7.5-8.5 over 3 seeds], ITL p99 32.0 ms [31.5-32.5 over 3 seeds], longest ITL "
           "p99 40.0 ms [39.5-40.5 over 3 seeds]) | on h200: one pool no pair ($0.62"));
  EXPECT_TRUE(says(text, "ITL p99 41.5 ms); split none within the SLA"));
  EXPECT_FALSE(says(text, "two GPUs ("));
  EXPECT_TRUE(says(text, "2 of 3 within tolerance; no GPU of ours measured yet"));
  EXPECT_TRUE(
      says(text, "the SSD tier pays for itself if 40% -> 1.4% of sessions come back within its retention"));
  EXPECT_TRUE(
      says(text, "how large an SSD tier under 'agent coding, resumed' (h200_agg_8, kept at most 72 h)"));
  EXPECT_TRUE(says(text,
                   "unbounded: $0.69 per 1M output tokens, 99.9% within the SLA; 2 TB: $0.80 per 1M output "
                   "tokens, 99.4% within the SLA"));
  EXPECT_TRUE(says(text, "traffic served within the SLA under 'agent coding'"));
  EXPECT_TRUE(
      says(text, "8 x H200, own steps: up to 0.794 sessions/s; 8 x H200, mixed: up to 0.857 sessions/s"));
  // Mixed against own steps on the same pool; a GPU without the pair is left out.
  EXPECT_TRUE(
      says(text,
           "1 x 8 h100_sxm: mixed $0.50 per 1M output tokens (TPOT p99 18.3 ms), own steps $0.59 per 1M "
           "output tokens (TPOT p99 23.4 ms), with a prefill delay of up to 30 steps $0.40 per 1M output "
           "tokens (97.0% within, TPOT p99 9.1 ms, TTFT p99 12000 ms)"));
  EXPECT_FALSE(says(text, "2 x 8 h100_sxm: mixed"));
  EXPECT_FALSE(says(text, "h200: mixed"));
  // The first sweep, from its shortest session to its longest.
  EXPECT_TRUE(says(text, "sessions of 8192 to 1048576 tokens on 1 x 8 h200 (2000 output tokens each)"));
  EXPECT_TRUE(says(text,
                   "sessions per decode GPU 7832 -> 83; first token of one prompt alone 0.14 s -> 28.80 s; "
                   "decode batch per GPU within TPOT 60 ms (no engine batch limit) 1056 (TPOT) -> 83 (KV "
                   "memory); $ per 1M output "
                   "tokens $0.02 -> $0.08 with every prefix cached, $0.05 -> $5.72 with every prompt "
                   "prefilled"));
  EXPECT_FALSE(says(text, "b200"));
  EXPECT_TRUE(says(
      text,
      "fast (batch 1, 951); cheapest of them: fast at batch 951 ($0.020 per 1M output tokens, 28 "
      "tokens/s per user; above the deployment's batch limit of 64: what the GPU allows); not ranked (no "
      "public price): h20"));
  EXPECT_FALSE(says(text, "slow (batch"));
  EXPECT_TRUE(says(text, "what the KV tiers are worth under 'agent coding' (h200_agg_8)"));
  EXPECT_TRUE(says(text,
                   "SSD tier 72 h, window pool 10% of DRAM: $0.66 per 1M output tokens, 99.7% within the "
                   "SLA; no SSD tier, no window pool: $1.57 per 1M output tokens, 34.9% within the SLA"));
  EXPECT_TRUE(says(text, "decode at 1048576 tokens: faster on 0 of 1 GPU profiles (mean 1.50x"));
  EXPECT_TRUE(says(text, "prefill at 4194304 tokens: faster on 1 of 1 GPU profiles (mean 0.90x"));
}

// The same GPUs as several EP groups or one: a pair per GPU and GPU count,
// the several first; a pool with no counterpart is left out.
// The indexer kernels an engine may lack: their changes in time per output
// token at the longest context the section times, each with its drafts.
TEST(StudySummary, SaysWhatTheKernelsAnEngineMayLackCost) {
  // Each row as the engine-choices table writes it: its key and what the engine has instead.
  const std::map<std::string, std::string> phrases{
      {"assumed", ""},
      {"index_keys_per_query", "a sequence's drafts reading its index keys apart"},
      {"reindex_every_position", "Reindex layers scoring every position"},
      {"both", "both indexer choices"},
      {"experts_bf16", "the routed experts in BF16 math (W4A16)"},
      {"all_three", "all three"}};
  const auto choice = [&phrases](const std::string& key, int64_t context, double pct, int64_t drafts) {
    return json{{"choice", key},
                {"phrase", phrases.at(key)},
                {"context", context},
                {"change_pct", pct},
                {"drafts", drafts}};
  };
  const json report{
      {"claims", json::array()},
      {"fits", json::array()},
      {"steps", json::array()},
      {"step_sensitivity",
       {{"step", "H200 decode step"},
        {"swing", 0.25},
        {"figures", json::array()},
        {"engine_choices",
         {{"gpu", "NVIDIA H200 SXM 141GB"},
          {"batch", 32},
          {"rows",
           {choice("assumed", 131072, 0.0, 5), choice("both", 131072, 9.2, 5),
            choice("assumed", 1048576, 0.0, 5), choice("index_keys_per_query", 1048576, 17.3, 5),
            choice("reindex_every_position", 1048576, 23.8, 5), choice("both", 1048576, 65.8, 3),
            choice("experts_bf16", 1048576, 26.1, 5), choice("all_three", 1048576, 99.5, 3)}},
          {"prefill_rows",
           {choice("assumed", 131072, 0.0, 0), choice("index_keys_per_query", 131072, 0.0, 0),
            choice("experts_bf16", 131072, 92.6, 0)}}}}}},
      {"plan", {{"workload", "chat"}, {"rows", json::array()}}},
      {"plan_layouts", {{"rows", json::array()}}},
      {"validation", json::array()}};
  const std::string text = study_summary(report).to_markdown();
  EXPECT_TRUE(says(text,
                   "(NVIDIA H200 SXM 141GB decode, batch 32, 1048576 tokens; time per output token; and one "
                   "prompt's prefill, where a choice moves it)"));
  // The prefill's: only the choices that move it.
  EXPECT_TRUE(says(text,
                   "(3 drafts); a 131072-token prompt's prefill +92.6% with the routed experts in BF16 "
                   "math (W4A16)"));
  EXPECT_FALSE(says(text, "prefill +0.0%"));
  EXPECT_TRUE(says(text,
                   "+17.3% with a sequence's drafts reading its index keys apart (5 drafts); +23.8% with "
                   "Reindex layers scoring every position (5 drafts); +65.8% with both indexer choices (3 "
                   "drafts); +26.1% with the routed experts in BF16 math (W4A16) (5 drafts); +99.5% with all "
                   "three (3 drafts)"));
  EXPECT_FALSE(says(text, "+9.2%"));  // a shorter context's
}

TEST(StudySummary, SetsOneEpGroupAgainstSeveralOnTheSameGpus) {
  json report{{"claims", json::array()},
              {"fits", json::array()},
              {"steps", json::array()},
              {"plan",
               {{"workload", "chat"},
                {"rows",
                 {pool(row("two", true, false, 0.51), "h200", 2, 8, 0.999),
                  pool(row("one", false, false, 0.66), "h200", 1, 16, 0.933),
                  pool(row("alone", true, false, 0.35), "h200", 1, 8, 0.99),
                  pool(row("other gpu", true, false, 0.64), "b200", 2, 8, 1.0)}}}},
              {"plan_layouts", {{"rows", json::array()}}},
              {"validation", json::array()}};
  const std::string text = study_summary(report).to_text();
  EXPECT_TRUE(says(text,
                   "h200 on 16 GPUs: 2 x EP 8 99.9% within, TPOT p99 7.5 ms, $0.51 per 1M output tokens / "
                   "1 x EP 16 93.3% within, TPOT p99 7.5 ms, $0.66 per 1M output tokens"));
  EXPECT_FALSE(says(text, "h200 on 8 GPUs"));
  EXPECT_FALSE(says(text, "b200 on"));
}

TEST(StudySummary, SaysWhenNoVariantMeetsTheSla) {
  const json report{
      {"claims", json::array()},
      {"fits", {fit(1048576, "NVIDIA H20", 344)}},
      {"steps", {step("decode", 1048576, 29600, false)}},
      {"plan", {{"workload", "chat"}, {"rows", {pool(row("slow", false, false, 0.1), "h20", 1, 8, 0.1)}}}},
      {"plan_layouts", {{"rows", json::array()}}},
      {"validation", json::array()}};
  const std::string text = study_summary(report).to_text();
  EXPECT_TRUE(says(text, "H200 29.6 ms"));
  EXPECT_FALSE(says(text, "past its memory"));  // its batch fits
  EXPECT_FALSE(says(text, "±"));                // no band known
  EXPECT_TRUE(says(text, "no variant meets the SLA"));
}

// A step whose batch's KV one GPU cannot hold is timed all the same, and the
// brief says so beside its time.
TEST(StudySummary, SaysWhichStepsArePastTheirMemory) {
  const json report{{"claims", json::array()},
                    {"fits", json::array()},
                    {"steps", {step("decode", 1048576, 46100, true, 0, 28)}},
                    {"plan", {{"workload", "chat"}, {"rows", json::array()}}},
                    {"plan_layouts", {{"rows", json::array()}}},
                    {"validation", json::array()}};
  const std::string text = study_summary(report).to_text();
  EXPECT_TRUE(says(text, "H200 46.1 ms ±12% (past its memory: KV for 28 of the 32 sequences)"));
}

// The whole steps and whole benchmarks that engines published, apart from
// the kernel figures: how far the model's throughput (and a benchmark's
// latencies) is from theirs, on which GPUs.
TEST(StudySummary, SaysHowFarWholeStepsAreFromTheEngines) {
  const auto reference = [](const char* probe, const char* gpu, double error_pct, bool within,
                            const char* metric = "tokens_per_s_per_gpu") {
    return json{{"kind", "published"}, {"probe", probe},         {"gpu", gpu},
                {"metric", metric},    {"error_pct", error_pct}, {"within_tolerance", within}};
  };
  json report{{"claims", json::array()},
              {"fits", json::array()},
              {"steps", json::array()},
              {"plan", {{"workload", "chat"}, {"rows", json::array()}}},
              {"plan_layouts", {{"rows", json::array()}}},
              {"validation",
               {reference("gemm", "h800", -60.0, false), reference("step", "h800", 29.5, false),
                reference("step", "h100_sxm", 38.8, false), reference("step", "gb200_nvl72", 33.8, false),
                reference("step", "h100_sxm", 10.0, true)}}};
  std::string text = study_summary(report).to_text();
  // The kernel figures' row counts the GEMM alone: the steps have a row of their own.
  EXPECT_TRUE(says(text, "0 of 1 within tolerance; no GPU of ours measured yet"));
  EXPECT_TRUE(says(text,
                   "whole forward steps that serving engines published (4 on gb200_nvl72, h100_sxm (2), "
                   "h800)"));
  // The GEMM's -60% is not a step's.
  EXPECT_TRUE(says(text, "the model's throughput +10.0% to +38.8% against theirs, 1 of 4 within tolerance;"));
  EXPECT_FALSE(says(text, "whole serving benchmarks"));
  // Steps of more than one model: each model's range and count too.
  json by_model = report;
  for (std::size_t i = 1; i < 5; ++i)
    by_model["validation"][i]["model"] = i < 4 ? "deepseek_v3" : "deepseek_v4_1_flash";
  EXPECT_TRUE(says(study_summary(by_model).to_text(),
                   "1 of 4 within tolerance (deepseek_v3: +29.5% to +38.8%, 0 of 3; deepseek_v4_1_flash: "
                   "+10.0% to +10.0%, 1 of 1); the step times"));
  // A benchmark's throughput and latencies, each its own range.
  report["validation"].push_back(reference("serving", "h200", 125.0, false));
  report["validation"].push_back(reference("serving", "h200", 126.1, false));
  report["validation"].push_back(reference("serving", "h200", -58.5, false, "tpot_ms"));
  report["validation"].push_back(reference("serving", "h200", -66.7, false, "ttft_ms"));
  text = study_summary(report).to_text();
  EXPECT_TRUE(says(text, "0 of 1 within tolerance; no GPU of ours measured yet"));
  report["validation"].push_back(reference("serving", "b200", -46.0, false, "ttft_p50_ms"));
  text = study_summary(report).to_text();
  EXPECT_TRUE(says(text, "whole serving benchmarks that engines published (5 figures on b200, h200)"));
  EXPECT_TRUE(
      says(text,
           "the model's throughput +125.0% to +126.1%, mean TPOT -58.5% to -58.5%, mean TTFT -66.7% to "
           "-66.7%, median TTFT -46.0% to -46.0% against theirs"));
  report["validation"] = json::array({reference("gemm", "h800", 5.0, true)});
  text = study_summary(report).to_text();
  EXPECT_FALSE(says(text, "whole forward steps"));
  EXPECT_FALSE(says(text, "whole serving benchmarks"));
}

}  // namespace
}  // namespace v41sim
