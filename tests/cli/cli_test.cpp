// The v41sim binary as a user runs it: exit codes, one-line errors, JSON keys,
// byte-identical reports.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>

#include "sim/cost/cost_params.h"
#include "sim/report/step_view.h"
#include "tests/test_data.h"

namespace v41sim {
namespace {

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// The binary on the bundled data, or on the data folder given; its stderr
// with its stdout, or into the file named.
RunResult run(const std::string& args, const std::string& data_dir = V41SIM_SOURCE_DIR,
              const std::string& stderr_to = "&1") {
  const std::string command =
      std::string(V41SIM_BINARY) + " --data-dir " + data_dir + " " + args + " 2>" + stderr_to;
  RunResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) result.output += buffer.data();
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

nlohmann::json run_json(const std::string& args) {
  const RunResult r = run(args + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(r.output);
}

// A command's table and its --json, both asked (they say the same).
struct TableAndJson {
  RunResult table;
  nlohmann::json json;
};
TableAndJson table_and_json(const std::string& args) {
  TableAndJson both{run(args), run_json(args)};
  EXPECT_EQ(both.table.exit_code, 0) << both.table.output;
  return both;
}

// Whether a run's output says `phrase`; the output where it does not.
::testing::AssertionResult says(const RunResult& r, std::string_view phrase) {
  if (r.output.find(phrase) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "it does not say '" << phrase << "' in:\n" << r.output;
}

// Where the n-th comma (from 1) of a CSV line is.
std::size_t nth_comma(const std::string& line, int n) {
  std::size_t at = std::string::npos;
  for (int i = 0; i < n; ++i) at = line.find(',', at + 1);
  return at;
}

std::filesystem::path temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("v41sim_test_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(Cli, KvJsonHasTheDerivedTotals) {
  const auto kv = run_json("kv --model deepseek_v4_1_flash --context 1048576");
  EXPECT_DOUBLE_EQ(kv["global_bytes_per_token"].get<double>(), 890.0);
  EXPECT_EQ(kv["per_request_state_bytes"].get<int64_t>(),
            kv["window_state_bytes"].get<int64_t>() + kv["compressor_state_bytes"].get<int64_t>());
  EXPECT_EQ(kv["layers"].size(), 40u);
  EXPECT_EQ(kv["layers"][24]["mode"], "Reindex");
  EXPECT_DOUBLE_EQ(run_json("kv --model DeepSeek-V4-Flash")["global_bytes_per_token"].get<double>(), 3514.25);
  // The other index-key format the file defines (the FP8 key Hopper engines store), with its
  // source and the KV it gives; a model without one lists none.
  ASSERT_EQ(kv["other_index_key_formats"].size(), 1u);
  const auto& fp8 = kv["other_index_key_formats"][0];
  EXPECT_EQ(fp8["format"], "index_key_fp8");
  EXPECT_EQ(fp8["bytes_per_key"].get<int>(), 132);
  EXPECT_FALSE(fp8["source"].get<std::string>().empty());
  EXPECT_DOUBLE_EQ(fp8["global_bytes_per_token"].get<double>(),
                   1050.0);  // 890 + 2.5 index keys a token, 64 B more each
  EXPECT_TRUE(run_json("kv --model deepseek_v3")["other_index_key_formats"].empty());
  EXPECT_NE(run("kv --model deepseek_v4_1_flash")
                .output.find("with the index keys stored as index_key_fp8 (132 B a key"),
            std::string::npos);
}

TEST(Cli, ParamsJsonKeys) {
  const auto p = run_json("params --model deepseek_v4_1_flash");
  for (const char* key : {"total_params", "active_params_prefill", "active_params_decode", "gpu_weight_bytes",
                          "host_weight_bytes"}) {
    EXPECT_TRUE(p.contains(key)) << key;
  }
  EXPECT_GT(p["host_weight_bytes"].get<double>(), 0);
}

TEST(Cli, FitJsonKeys) {
  const auto f = run_json("fit --model deepseek_v4_1_flash --hw h200 --gpus 8 --ep 8 --context 1048576");
  for (const char* key : {"weight_bytes_per_gpu", "kv_bytes_per_gpu", "sessions"})
    EXPECT_TRUE(f.contains(key)) << key;
  EXPECT_GT(f["sessions"].get<int64_t>(), 0);
  // The weights are their parts, the speculative draft's among them.
  EXPECT_GT(f["draft_bytes_per_gpu"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(f["weight_bytes_per_gpu"].get<double>(),
                   f["routed_expert_bytes_per_gpu"].get<double>() + f["dense_bytes_per_gpu"].get<double>() +
                       f["embedding_bytes_per_gpu"].get<double>() + f["draft_bytes_per_gpu"].get<double>());
  const auto fp8 = run_json("fit --hw h200 --weights-dtype fp8");
  EXPECT_GT(fp8["weight_bytes_per_gpu"].get<double>(), f["weight_bytes_per_gpu"].get<double>());
  // The same fit with the FP8 index keys the model file also defines: fewer sessions; none for a
  // model without another key format.
  EXPECT_LT(f["sessions_with_index_keys"]["index_key_fp8"].get<int64_t>(), f["sessions"].get<int64_t>());
  EXPECT_TRUE(
      run_json("fit --model deepseek_v3 --hw h200 --gpus 8 --ep 8 --context 4096")["sessions_with_index_keys"]
          .empty());
}

TEST(Cli, ClaimsJson) {
  const auto c = run_json("claims");
  ASSERT_EQ(c["claims"].size(), 9u);
  EXPECT_EQ(c["claims"][5]["id"], "active_params");
  EXPECT_EQ(c["claims"][5]["verdict"], "holds");
  EXPECT_EQ(c["claims"][0]["verdict"], "holds_only_if");  // with the model files' own index keys
  EXPECT_EQ(c["claims"][2]["id"], "persistent_kv_eighth");
  EXPECT_EQ(c["claims"][7]["id"], "h20_decode");
  EXPECT_EQ(c["claims"][8]["id"], "ep_group_size");
}

TEST(Cli, StepJsonAndTrace) {
  const auto dir = temp_dir("step_trace");
  const std::string trace = (dir / "step.json").string();
  const auto step = run_json(
      "step --model deepseek_v4_1_flash --hw h200 --phase decode --batch 8 --context 131072 "
      "--trace " +
      trace);
  EXPECT_GT(step["total_time_us"].get<double>(), 0);
  ASSERT_EQ(step["layers"].size(), 45u);  // 40 layers, head, 3 draft stages, draft head
  EXPECT_EQ(step["layers"][24]["mode"], "Reindex");
  EXPECT_FALSE(step["layers"][24]["kernels"].empty());
  // The widening of FP4/FP8 operands: the step's total is its kernels' sum, and
  // the kernels it bounds are the ones whose bound says so.
  // So for the indexer's fold of its heads.
  double widening = 0, bound = 0, fold = 0, fold_bound = 0;
  for (const auto& layer : step["layers"]) {
    for (const auto& k : layer["kernels"]) {
      widening += k["widening_us"].get<double>();
      fold += k["fold_us"].get<double>();
      if (k["bound"] == "widening") bound += k["time_us"].get<double>();
      if (k["bound"] == "fold") fold_bound += k["time_us"].get<double>();
      // No term, each as if alone over the whole GPU, outlasts the kernel's busy time.
      const double longest =
          std::max({k["math_us"].get<double>(), k["memory_us"].get<double>(), k["widening_us"].get<double>(),
                    k["fold_us"].get<double>(), k["edge_us"].get<double>()});
      EXPECT_GE(k["busy_us"].get<double>() * (1 + 1e-9), longest) << k["name"];
    }
  }
  EXPECT_GT(widening, 0.0);  // H200: FP4 entries, index keys and expert weights are widened
  EXPECT_NEAR(step["widening_us"].get<double>(), widening, 1e-6 * widening);
  EXPECT_NEAR(step["widening_bound_us"].get<double>(), bound, 1e-6 * (bound + 1));
  EXPECT_GT(fold, 0.0);  // the indexer's logits fold their heads
  EXPECT_NEAR(step["fold_us"].get<double>(), fold, 1e-6 * fold);
  EXPECT_NEAR(step["fold_bound_us"].get<double>(), fold_bound, 1e-6 * (fold_bound + 1));
  const auto events = nlohmann::json::parse(testing::read_text(trace))["traceEvents"];
  ASSERT_GT(events.size(), 100u);
  int complete = 0;
  for (const auto& e : events) complete += e["ph"] == "X" ? 1 : 0;
  EXPECT_EQ(complete, step["kernel_count"].get<int>());
  // Two micro-batches: the trace holds both halves' kernels, and no track runs
  // two kernels at once.
  const std::string split_trace = (dir / "split.json").string();
  const auto split =
      run_json("step --phase prefill --batch 1 --context 16384 --overlap --trace " + split_trace);
  const auto split_events = nlohmann::json::parse(testing::read_text(split_trace))["traceEvents"];
  std::map<int, std::vector<std::pair<double, double>>> by_track;
  int second_half = 0;
  for (const auto& e : split_events) {
    if (e["ph"] != "X") continue;
    by_track[e["tid"].get<int>()].push_back({e["ts"].get<double>(), e["dur"].get<double>()});
    second_half += e["args"].value("micro_batch", 0) == 2 ? 1 : 0;
  }
  int all = 0;
  for (auto& [track, spans] : by_track) {
    all += static_cast<int>(spans.size());
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i)
      EXPECT_GE(spans[i].first, (spans[i - 1].first + spans[i - 1].second) * (1 - 1e-12))
          << track << " " << i;
  }
  EXPECT_EQ(all, split["kernel_count"].get<int>());
  EXPECT_EQ(2 * second_half, all);
  // The JSON lists the second half's kernels too, with their starts.
  std::size_t listed = 0;
  for (const auto& layer : split["layers"])
    listed += layer["kernels"].size() + layer["second_micro_batch_kernels"].size();
  EXPECT_EQ(static_cast<int>(listed), all);
  // The layout no shorter than the busier-track bound it replaced, and no longer than no overlap at all.
  EXPECT_GE(split["total_time_us"].get<double>(), split["busier_track_bound_us"].get<double>() * (1 - 1e-12));
  EXPECT_LE(split["total_time_us"].get<double>(), split["compute_us"].get<double>() +
                                                      split["communication_us"].get<double>() +
                                                      split["host_copy_us"].get<double>());
}

// step says whether its sequences' KV fits the GPU, on fit's own split: as
// many sequences as fit holds fit, one more does not, and a step whose
// weights overflow the GPU is still timed, saying so.
TEST(Cli, StepSaysWhetherItsSequencesFit) {
  const auto fit = run_json("fit --hw b200 --gpus 8 --ep 8 --context 1048576");
  const int64_t held = fit["sessions_per_gpu"].get<int64_t>();
  ASSERT_GT(held, 1);
  const std::string step = "step --hw b200 --phase decode --context 1048576 --batch ";
  const auto at_most = run_json(step + std::to_string(held))["kv_memory"];
  EXPECT_TRUE(at_most["fits"].get<bool>());
  EXPECT_EQ(at_most["sequences_held_at_context"].get<int64_t>(), held);
  EXPECT_DOUBLE_EQ(at_most["kv_bytes"].get<double>(),
                   static_cast<double>(held) * fit["session_bytes"].get<double>());
  EXPECT_DOUBLE_EQ(at_most["kept_for_kv_bytes"].get<double>(), fit["kv_bytes_per_gpu"].get<double>());
  EXPECT_FALSE(run_json(step + std::to_string(held + 1))["kv_memory"]["fits"].get<bool>());
  const RunResult over = run(step + std::to_string(held + 1));
  EXPECT_NE(over.output.find("timed as if it fit"), std::string::npos) << over.output;
  const RunResult alone = run("step --hw h20 --phase decode --batch 1 --context 4096 --ep 1");
  EXPECT_EQ(alone.exit_code, 0) << alone.output;
  EXPECT_NE(alone.output.find("the weights alone"), std::string::npos) << alone.output;
}

// What mHC's kernels leave untimed is named where a model has mHC, not where
// it has none (V3's one residual).
TEST(Cli, StepNamesTheMhcProjectionAssumption) {
  const std::string note = "mHC: each site's projection of the flattened streams";
  const RunResult v41 = run("step --hw h200 --phase decode --batch 4 --context 8192");
  EXPECT_NE(v41.output.find(note), std::string::npos) << v41.output;
  const RunResult v3 = run("step --model deepseek_v3 --hw h200 --phase decode --batch 4 --context 8192");
  EXPECT_EQ(v3.exit_code, 0) << v3.output;
  EXPECT_EQ(v3.output.find(note), std::string::npos) << v3.output;
  // Likewise the indexer's fold, with the priors' figures and where they come from.
  const CostParams priors =
      load_cost_params_file(std::string(V41SIM_SOURCE_DIR) + "/validation/calibration/defaults.yaml");
  const std::string fold = fold_note(priors);
  ASSERT_FALSE(fold.empty());
  EXPECT_NE(fold.find(priors.of(KernelClass::kIndexer).fold_efficiency->provenance().label()),
            std::string::npos);
  EXPECT_NE(v41.output.find(fold), std::string::npos) << v41.output;
  EXPECT_EQ(v3.output.find("the indexer's fold"), std::string::npos) << v3.output;
}

// `run` says what it counts of the engine's time outside its forward steps:
// the deployment's figure with its source, or that the file states none (also
// in --json's provenance).
TEST(Cli, RunSaysTheEnginesStepOverhead) {
  const RunResult vllm = run("run --model deepseek_v4_1_flash --deployment " V41SIM_SOURCE_DIR
                             "/validation/published/serving/vllm_b200_4_tp4_v41.yaml --duration 5");
  ASSERT_EQ(vllm.exit_code, 0) << vllm.output;
  EXPECT_NE(vllm.output.find("engine time outside the forward steps: 560 us after each step's forward"),
            std::string::npos)
      << vllm.output;
  EXPECT_NE(vllm.output.find("published: vLLM pull request #57643"), std::string::npos) << vllm.output;
  const nlohmann::json bundled = run_json("run --duration 5");
  EXPECT_NE(bundled["provenance"]["step_overhead"].get<std::string>().find("none counted"), std::string::npos)
      << bundled["provenance"];
}

// A chunk whose residual streams pass the activation reserve cannot run: a
// plan's variant says so in its row, at the flag that set it.
TEST(Cli, PlanRefusesAChunkPastTheActivationReserve) {
  // Every variant refuses it, so plan stops at the line (PlanWhereNoVariantCouldRun).
  const RunResult r = run("plan --max-tokens-per-step 400000 --duration 10 --confirm-seconds 0");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(
      r.output.find("v41sim: error: input: field '--max-tokens-per-step': a step of 400000 prompt tokens "
                    "holds 16.4 GB of residual streams (40960 B a token of DeepSeek-V4.1-Flash), more "
                    "than the 14.1 GB a GPU of NVIDIA H200 SXM 141GB keeps for activations "
                    "(reserve_fraction 0.1 of its HBM): expected at most 344238 tokens a step"),
      std::string::npos)
      << r.output;
}

// A prefill step of a whole 1M-token prompt holds its residual streams (mHC's
// 4 x 5120 BF16 a token) for every token, past the reserve fit keeps for
// activations: step says so, and the prompt's 16K-token chunk fits in it.
TEST(Cli, StepSaysWhenItsResidualStreamsPassTheReserve) {
  const std::string prompt = "step --hw h200 --phase prefill --batch 1 --context 1048576";
  const auto whole = run_json(prompt)["kv_memory"];
  const double per_token = 4.0 * 5120.0 * 2.0;
  EXPECT_DOUBLE_EQ(whole["residual_stream_bytes"].get<double>(), 1048576.0 * per_token);
  const double reserve = run_json("fit --hw h200 --context 1048576")["reserve_bytes_per_gpu"].get<double>();
  EXPECT_DOUBLE_EQ(whole["reserve_bytes"].get<double>(), reserve);
  EXPECT_GT(whole["residual_stream_bytes"].get<double>(), reserve);
  EXPECT_NE(run(prompt).output.find("more than the 13.13 GiB (14.1 GB) reserve for activations"),
            std::string::npos);
  const auto chunk = run_json(prompt + " --chunk-tokens 16384")["kv_memory"];
  EXPECT_DOUBLE_EQ(chunk["residual_stream_bytes"].get<double>(), 16384.0 * per_token);
  EXPECT_EQ(run(prompt + " --chunk-tokens 16384").output.find("more than the"), std::string::npos);
}

// DeepSeek's decode layout: V3's 256 experts and 32 replicas over EP 144,
// two a GPU. The replicas make the size possible and the memory fit counts
// them; a skewed routing makes the busiest rank set the step, which EPLB's
// replicas even out.
TEST(Cli, RedundantExpertsMakeEpSizesThatDoNotDivideTheExperts) {
  const std::string decode = "step --model deepseek_v3 --hw h800 --batch 128 --context 4096 --ep 144";
  const auto balanced = run_json(decode + " --redundant-experts 32");
  EXPECT_EQ(balanced["redundant_experts"], 32);
  EXPECT_DOUBLE_EQ(balanced["ep_load_imbalance"].get<double>(), 1.0);
  const auto skewed = run_json(decode + " --redundant-experts 32 --routing-skew 1");
  EXPECT_GT(skewed["ep_load_imbalance"].get<double>(), 1.0);
  EXPECT_GT(skewed["total_time_us"].get<double>(), balanced["total_time_us"].get<double>());
  const RunResult text = run(decode + " --redundant-experts 32 --routing-skew 1");
  EXPECT_NE(text.output.find("EP 144 with 32 redundant experts, busiest rank"), std::string::npos)
      << text.output;
  const RunResult alone = run(decode);
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_NE(alone.output.find("32 redundant replicas would make 288 slots"), std::string::npos)
      << alone.output;
  EXPECT_EQ(run("fit --model deepseek_v3 --hw h800 --gpus 144 --ep 144 --context 4096").exit_code, 2);
  const auto with =
      run_json("fit --model deepseek_v3 --hw h800 --gpus 144 --ep 144 --context 4096 --redundant-experts 32");
  const auto eight =
      run_json("fit --model deepseek_v3 --hw h800 --gpus 128 --ep 32 --context 4096 --redundant-experts 0");
  // Two experts a GPU at EP 144, 8 at EP 32: the experts' bytes in proportion.
  EXPECT_NEAR(
      with["routed_expert_bytes_per_gpu"].get<double>() / eight["routed_expert_bytes_per_gpu"].get<double>(),
      2.0 / 8.0, 1e-12);
}

// step-log times each logged step as `step` times that shape, sets the
// logged times against it by phase, and refuses a bad row with its line.
TEST(Cli, StepLogTimesEachStepAsStepDoes) {
  const auto dir = temp_dir("step_log");
  const std::string log = (dir / "steps.csv").string();
  std::ofstream(log) << "phase,batch,context,new_tokens,drafts,measured_us\n"
                     << "decode,32,131072,0,2,40000\nprefill,1,16384,16384,0,500000\n";
  const auto both = table_and_json("step-log --hw h200 --ep 8 --log " + log);
  const auto& steps = both.json["steps"];
  ASSERT_EQ(steps.size(), 2u);
  const auto decode = run_json("step --hw h200 --ep 8 --phase decode --batch 32 --context 131072 --drafts 2");
  EXPECT_DOUBLE_EQ(steps[0]["predicted_us"].get<double>(), decode["total_time_us"].get<double>());
  const auto prefill = run_json("step --hw h200 --ep 8 --phase prefill --batch 1 --context 16384");
  EXPECT_DOUBLE_EQ(steps[1]["predicted_us"].get<double>(), prefill["total_time_us"].get<double>());
  EXPECT_NEAR(steps[0]["error_pct"].get<double>(), 100 * (decode["total_time_us"].get<double>() / 40000 - 1),
              1e-9);
  ASSERT_EQ(both.json["phases"].size(), 2u);
  EXPECT_EQ(both.json["phases"][1]["phase"], "decode");
  EXPECT_TRUE(both.json["phases"][1]["errors"].contains("mape_pct"));
  EXPECT_TRUE(says(both.table, "The 2 steps the model is furthest from"));
  std::ofstream(log) << "phase,batch,context,new_tokens,drafts\ndecode,32,131072,0,9\n";
  const RunResult bad = run("step-log --log " + log);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(says(bad, log + ":2: field 'drafts': expected 0 to 5 drafts")) << bad.output;
}

// A decode step verifies the drafts a serving run would choose, or those
// --drafts gives; the table says which and what a token costs.
TEST(Cli, StepVerifiesTheDraftsAServingRunWould) {
  const std::string base = "step --hw h200 --phase decode --batch 32 --context 131072";
  const auto chosen = run_json(base);
  EXPECT_TRUE(chosen["drafts_chosen"].get<bool>());
  const int64_t drafts = chosen["drafts_verified"].get<int64_t>();
  ASSERT_GT(drafts, 0);
  // Each verified position is a backbone row: the head samples every one.
  for (const auto& layer : chosen["layers"]) {
    if (layer["mode"] == "Head") {
      EXPECT_EQ(layer["tokens"].get<double>(), 32.0 * static_cast<double>(1 + drafts));
    }
  }
  const auto two = run_json(base + " --drafts 2");
  EXPECT_FALSE(two["drafts_chosen"].get<bool>());
  EXPECT_EQ(two["drafts_verified"].get<int64_t>(), 2);
  // The model gives DSpark's measured mean yield at 5 drafts (3.51 tokens a step); the per-position
  // acceptance p derived from it gives 1 + p + p^2 at 2.
  EXPECT_NEAR(run_json(base + " --drafts 5")["tokens_per_sequence"].get<double>(), 3.51, 1e-9);
  const double two_tokens = two["tokens_per_sequence"].get<double>();
  const double p = (std::sqrt(4 * two_tokens - 3) - 1) / 2;  // the root of 1 + p + p^2 = two_tokens
  EXPECT_NEAR(1 + p + p * p + p * p * p + p * p * p * p + p * p * p * p * p, 3.51, 1e-9);
  const auto none = run_json(base + " --no-draft");
  EXPECT_EQ(none["drafts_verified"].get<int64_t>(), 0);
  EXPECT_LT(none["total_time_us"].get<double>(), two["total_time_us"].get<double>());
  const std::string text = run(base + " --drafts 2").output;
  EXPECT_NE(text.find("draft tokens verified per sequence                   2 (--drafts)"), std::string::npos)
      << text;
  EXPECT_NE(
      text.find(fmt::format("{:.2f} at per-position acceptance {:g} (derived: the per-position acceptance p "
                            "whose step of 5 drafts yields 3.51 tokens",
                            two_tokens, p)),
      std::string::npos)
      << text;
}

// step --balanced-routing: every rank its exact share, as DeepSeek's
// profiles route; by default each step's routing falls by chance and its
// busiest rank, reaching more experts' weights, sets a longer step.
TEST(Cli, StepRoutesByChanceUnlessBalanced) {
  const std::string base = "step --hw b200 --batch 1 --context 131072 --ep 8 --no-draft";
  const auto chance = run_json(base);
  const auto balanced = run_json(base + " --balanced-routing");
  EXPECT_TRUE(chance["routed_by_chance"].get<bool>());
  EXPECT_FALSE(balanced["routed_by_chance"].get<bool>());
  EXPECT_GT(chance["total_time_us"].get<double>(), balanced["total_time_us"].get<double>());
  EXPECT_GT(chance["hbm_bytes"].get<double>(), balanced["hbm_bytes"].get<double>());
  EXPECT_NE(run(base + " --balanced-routing").output.find("routing balanced by construction"),
            std::string::npos);
}

// A step whose experts take an eighth of the rows (`flag` at `few`) is
// shorter than the same step with every rank running it; `flag` at `all`
// changes nothing.
void expect_fewer_rows_shorten_the_step(const std::string& base, const std::string& flag, int few, int all) {
  const auto every = run_json(base);
  const auto fewer = run_json(base + " " + flag + " " + std::to_string(few));
  EXPECT_DOUBLE_EQ(fewer["expert_token_share"].get<double>(), 0.125);
  EXPECT_LT(fewer["total_time_us"].get<double>(), 0.9 * every["total_time_us"].get<double>());
  EXPECT_DOUBLE_EQ(run_json(base + " " + flag + " " + std::to_string(all))["total_time_us"].get<double>(),
                   every["total_time_us"].get<double>());
}

// A prefill step that one rank of eight runs: its experts take an eighth of
// the rows, so the step is shorter than when every rank runs such a prompt.
TEST(Cli, StepWithSomeRanksPrompting) {
  const std::string base = "step --phase prefill --context 16384 --ep 8";
  EXPECT_DOUBLE_EQ(run_json(base)["expert_token_share"].get<double>(), 1.0);
  expect_fewer_rows_shorten_the_step(base, "--prompt-ranks", 1, 8);
}

// A decode step on a rank of 8 sequences whose group decodes 1 a rank on
// average: its experts take the group's tokens, so the step is shorter than
// when every rank runs 8; a group batch equal to its own changes nothing.
TEST(Cli, StepWithAGroupDecodingFewer) {
  expect_fewer_rows_shorten_the_step("step --batch 8 --context 65536 --ep 8", "--group-batch", 1, 8);
}

// A decode step beside another rank's prompt step runs as the prompt step:
// the same kernels and bytes, launched, its transfers by the normal kernels.
TEST(Cli, StepBesidePrompts) {
  const std::string base = "step --batch 32 --context 65536 --ep 8";
  const auto plain = run_json(base);
  const auto beside = run_json(base + " --beside-prompts");
  EXPECT_FALSE(plain["beside_prompts"].get<bool>());
  EXPECT_TRUE(beside["beside_prompts"].get<bool>());
  EXPECT_DOUBLE_EQ(beside["flops"].get<double>(), plain["flops"].get<double>());
  EXPECT_GT(beside["compute_us"].get<double>(), plain["compute_us"].get<double>());  // launched, not replayed
  EXPECT_NE(beside["communication_us"].get<double>(), plain["communication_us"].get<double>());
  EXPECT_NE(run(base + " --beside-prompts").output.find("runs as that step runs"), std::string::npos);
}

// --index-keys-per-query: a sequence's drafts read its index keys apart from
// its token (an engine that splits them), more bytes and a longer step at 1M
// tokens; the JSON and the text say which was assumed.
TEST(Cli, StepIndexKeysPerQuery) {
  const std::string base =
      "step --model deepseek_v4_1_flash --hw h200 --batch 8 --context 1048576 --drafts 5";
  const auto shared = run_json(base);
  const auto apart = run_json(base + " --index-keys-per-query");
  EXPECT_EQ(shared["draft_index_keys"], "shared");
  EXPECT_EQ(apart["draft_index_keys"], "per_query");
  EXPECT_GT(apart["hbm_bytes"].get<double>(), shared["hbm_bytes"].get<double>());
  EXPECT_GT(apart["total_time_us"].get<double>(), shared["total_time_us"].get<double>());
  EXPECT_DOUBLE_EQ(apart["flops"].get<double>(), shared["flops"].get<double>());
  EXPECT_NE(run(base).output.find("read its index keys once between them"), std::string::npos);
  EXPECT_NE(run(base + " --index-keys-per-query").output.find("(--index-keys-per-query)"), std::string::npos);

  // --reindex-scores-every-position: a Reindex layer scores the whole context.
  const auto every = run_json(base + " --reindex-scores-every-position");
  EXPECT_EQ(shared["reindex_scoring"], "pool");
  EXPECT_EQ(every["reindex_scoring"], "every_position");
  EXPECT_GT(every["flops"].get<double>(), shared["flops"].get<double>());
  EXPECT_GT(every["total_time_us"].get<double>(), shared["total_time_us"].get<double>());
  EXPECT_NE(run(base).output.find("scores its candidate pool alone"), std::string::npos);
}

// A decode step carrying prompt chunks costs less than the two steps apart
// (the weights are read once) and more than either alone.
TEST(Cli, StepWithPromptChunks) {
  const std::string base = "step --model deepseek_v4_1_flash --hw h200 --batch 32 --context 65536 --no-draft";
  const auto decode = run_json(base + " --no-cuda-graph");
  const auto prefill =
      run_json("step --model deepseek_v4_1_flash --hw h200 --phase prefill --batch 2 --context 8192");
  const auto mixed = run_json(base + " --prompt-chunks 2 --chunk-tokens 8192");
  EXPECT_EQ(mixed["prompt_chunks"]["prompts"], 2);
  EXPECT_EQ(mixed["prompt_chunks"]["context"], 8192);
  const double d = decode["total_time_us"].get<double>();
  const double p = prefill["total_time_us"].get<double>();
  const double x = mixed["total_time_us"].get<double>();
  EXPECT_LT(x, d + p);
  EXPECT_GT(x, std::max(d, p));
  // FLOP for FLOP both steps' work, but for the busiest EP rank's share of
  // the routed tokens: by chance it shrinks as a step's tokens grow.
  const double apart = decode["flops"].get<double>() + prefill["flops"].get<double>();
  EXPECT_LT(mixed["flops"].get<double>(), apart);
  EXPECT_GT(mixed["flops"].get<double>(), 0.999 * apart);
  EXPECT_LT(mixed["hbm_bytes"].get<double>(),
            decode["hbm_bytes"].get<double>() + prefill["hbm_bytes"].get<double>());
  const RunResult text = run(base + " --prompt-chunks 2 --chunk-tokens 8192");
  EXPECT_NE(text.output.find("with 2 prompt chunks of 8192 tokens ending at 8192"), std::string::npos);
  EXPECT_NE(text.output.find("no CUDA-graph replay (assumed"), std::string::npos);  // the assumption named
  // A chunk that is not its prompt's last skips V4.1's decoder layers and sampling.
  const auto continuing = run_json(base + " --prompt-chunks 2 --chunk-tokens 8192 --chunks-continuing 1");
  EXPECT_EQ(continuing["prompt_chunks"]["continuing"], 1);
  EXPECT_LT(continuing["flops"].get<double>(), mixed["flops"].get<double>());
  EXPECT_LT(continuing["total_time_us"].get<double>(), x);
  // A prefill step of chunks on a cached prefix: only the last chunk runs the decoder.
  const std::string chunk =
      "step --model deepseek_v4_1_flash --hw h200 --phase prefill --batch 2 --context 65536 "
      "--chunk-tokens 8192";
  const auto last = run_json(chunk);
  const auto earlier = run_json(chunk + " --chunks-continuing 2");
  EXPECT_EQ(last["new_tokens"], 8192);
  EXPECT_EQ(earlier["continuing"], 2);
  EXPECT_LT(earlier["total_time_us"].get<double>(), last["total_time_us"].get<double>());
  const auto whole =
      run_json("step --model deepseek_v4_1_flash --hw h200 --phase prefill --batch 2 --context 65536");
  EXPECT_LT(last["total_time_us"].get<double>(), whole["total_time_us"].get<double>());
  EXPECT_NE(run(chunk + " --chunks-continuing 1")
                .output.find("chunks of 8192 new tokens each (1 not their prompt's last)"),
            std::string::npos);
}

TEST(Cli, CapacityJsonBracketsTheLargestRate) {
  const auto json = run_json("capacity --model " V41SIM_SOURCE_DIR
                             "/tests/data/tiny_gqa.yaml --deployment " V41SIM_SOURCE_DIR
                             "/tests/data/one_gpu.yaml --workload " V41SIM_SOURCE_DIR
                             "/tests/data/fixed_prompts.yaml --duration 60 --rate-factors 16,256 --precision "
                             "0.1 --confirm-seconds 240");
  ASSERT_EQ(json["variants"].size(), 1u);
  const auto& c = json["variants"][0];
  // The meeting rates were served again over 240 s, largest first, two at a
  // time, down to the pair holding the largest that held: below it at most
  // its pair's second was served again.
  ASSERT_FALSE(c["largest_holding_sessions_per_s"].is_null());
  const double held = c["largest_holding_sessions_per_s"].get<double>();
  int confirmed_below = 0;
  for (const auto& p : c["points"]) {
    const double at = p["sessions_per_s"].get<double>();
    const bool met = p["meets_sla"].get<bool>();
    if (!met || at >= held) {
      EXPECT_EQ(p.contains("confirmation"), met) << at;
    }
    if (met && at < held && p.contains("confirmation")) ++confirmed_below;
    if (at == held) {
      EXPECT_TRUE(p["confirmation"]["holds"].get<bool>());
    }
  }
  EXPECT_LE(confirmed_below, 1);
  // The rate that held and the next that did not are within the precision (or none above failed).
  if (!c["smallest_not_holding_sessions_per_s"].is_null()) {
    EXPECT_LE(c["smallest_not_holding_sessions_per_s"].get<double>() / held, 1.1);
  }
  const double lo = c["largest_meeting_sessions_per_s"].get<double>();
  const double hi = c["smallest_failing_sessions_per_s"].get<double>();
  EXPECT_GT(hi, lo);
  EXPECT_LE(hi / lo, 1.1);
  EXPECT_GT(c["points"].size(), 2u);
  for (const auto& p : c["points"]) {
    EXPECT_EQ(p["meets_sla"].get<bool>(), p["sessions_per_s"].get<double>() <= lo) << p["sessions_per_s"];
    for (const char* key : {"within_sla", "requests_per_s", "ttft_ms", "tpot_ms", "cost"})
      EXPECT_TRUE(p.contains(key)) << key;
  }
  EXPECT_NE(c["verdict"].get<std::string>().find("within the SLA up to"), std::string::npos);
}

// Where no rate meets the SLA, the verdict says what the lightest load
// missed: 1M-token prompts miss a 10 s TTFT at any rate, their prefill alone
// taking longer, which `context` shows.
TEST(Cli, CapacityBelowEveryRateSaysWhatTheLightestMissed) {
  const RunResult r =
      run("capacity --deployment h200_pd_64 --workload stress_1m --rate-factors 1 --duration 250");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("no rate tried meets the SLA: the capacity is below 0.02 sessions/s (there "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("over TTFT; if a lighter load would not help, `context` shows one prompt alone"),
            std::string::npos)
      << r.output;
}

// A long search says how it goes on stderr, a line per run as it ends
// (here not a terminal: asked with --progress); stdout is the same answer,
// byte for byte, with or without it.
TEST(Cli, CapacityShowsItsProgressOnStderr) {
  const std::string args =
      "capacity --model " V41SIM_SOURCE_DIR "/tests/data/tiny_gqa.yaml --deployment " V41SIM_SOURCE_DIR
      "/tests/data/aggregated.yaml --workload " V41SIM_SOURCE_DIR
      "/tests/data/fixed_prompts.yaml --duration 30 --rate-factors 16,256 --precision 0.2 "
      "--aggregated-steps prefill_first,mixed --json";
  const auto progress = temp_dir("capacity_progress") / "stderr.txt";
  const RunResult quiet = run(args, V41SIM_SOURCE_DIR, "/dev/null");
  const RunResult shown = run(args + " --progress", V41SIM_SOURCE_DIR, progress.string());
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_EQ(shown.output, quiet.output);
  std::size_t runs = 0;
  const auto json = nlohmann::json::parse(shown.output);
  for (const auto& variant : json["variants"]) {
    for (const auto& point : variant["points"]) runs += point.contains("confirmation") ? 2 : 1;
  }
  std::istringstream lines(testing::read_text(progress.string()));
  std::size_t said = 0, longer = 0;
  for (std::string line; std::getline(lines, line); ++said) {
    EXPECT_NE(line.find("1 x 1 h200, aggregated, EP 1, prompts "), std::string::npos) << line;
    EXPECT_NE(line.find(" sessions/s over "), std::string::npos) << line;
    EXPECT_NE(line.find("% within the SLA, TTFT p99 "), std::string::npos) << line;
    longer += line.find(" over 1800 s:") != std::string::npos ? 1 : 0;
  }
  EXPECT_GT(runs, 4u);
  EXPECT_EQ(said, runs);
  EXPECT_GT(longer, 0u);  // the confirmations' longer window, said as such
}

// Several variants (here an aggregated pool's two schedules) are asked in
// turn, then set side by side.
TEST(Cli, CapacityOfSeveralVariants) {
  const std::string args =
      "capacity --model " V41SIM_SOURCE_DIR "/tests/data/tiny_gqa.yaml --deployment " V41SIM_SOURCE_DIR
      "/tests/data/aggregated.yaml --workload " V41SIM_SOURCE_DIR
      "/tests/data/fixed_prompts.yaml --duration 30 --rate-factors 16,256 --precision 0.2 "
      "--aggregated-steps prefill_first,mixed";
  const auto json = run_json(args);
  ASSERT_EQ(json["variants"].size(), 2u);
  EXPECT_EQ(json["variants"][0]["aggregated_steps"], "prefill_first");
  EXPECT_EQ(json["variants"][1]["aggregated_steps"], "mixed");
  const auto chart = temp_dir("capacity_svg") / "latency.svg";
  const RunResult text = run(args + " --svg " + chart.string());
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.output.find("The largest rate each serves within the SLA"), std::string::npos)
      << text.output;
  EXPECT_NE(text.output.find("prompts mixed into decode steps"), std::string::npos);
  // The chart draws both variants' TTFT and TPOT p99 and the limit.
  const std::string svg = testing::read_text(chart.string());
  for (const char* series :
       {"prompts in steps of their own: TPOT p99", "prompts in steps of their own: TTFT p99",
        "prompts mixed into decode steps: TPOT p99", "SLA limit"})
    EXPECT_NE(svg.find(series), std::string::npos) << series;
  EXPECT_EQ(svg.find("longest ITL"), std::string::npos) << "no ITL limit, no line against it";
  // With one, each variant's p99 of its requests' longest gaps is drawn against it too
  // (answers of more than one token: the fixed prompts' have one, so chat's).
  const auto limited = temp_dir("capacity_svg") / "itl.svg";
  EXPECT_EQ(
      run("capacity --model " V41SIM_SOURCE_DIR "/tests/data/tiny_gqa.yaml --deployment " V41SIM_SOURCE_DIR
          "/tests/data/aggregated.yaml --workload chat --duration 30 --rate-factors 1,4 --precision 0.5 "
          "--itl-ms 50 --svg " +
          limited.string())
          .exit_code,
      0);
  const std::string itl_svg = testing::read_text(limited.string());
  EXPECT_NE(itl_svg.find(": longest ITL p99"), std::string::npos);
  EXPECT_NE(itl_svg.find("stroke-dasharray=\"2 4\""), std::string::npos) << "dotted";
}

// The GPU day's last steps on synthetic rows: calibrate fits a folder of
// measurements and writes the file that step then runs on; an --out that
// cannot be written is refused, not reported as written.
TEST(Cli, CalibrateWritesTheFileTheKernelModelPicksUp) {
  namespace fs = std::filesystem;
  const fs::path data = testing::scratch_data_dir(
      "v41sim_cli_calibrate",
      {"models", "hw_profiles", "workloads", "validation/published", "validation/calibration/defaults.yaml",
       "validation/calibration/published_bands.yaml"});
  const fs::path measured = data / "validation" / "measurements" / "h200";
  fs::create_directories(measured);
  std::ofstream csv(measured / "kernels.csv");
  csv << "# gpu: synthetic H200\n# sm_count: 132\n# driver: none\n# cuda: none\n# date: 2026-12-01\n"
         "# git_commit: test\n"
         "kernel,class,math,m,n,k,batch,flops,hbm_bytes,median_us,min_us,max_us\n";
  for (int i = 0; i < 12; ++i) {  // streams of 1 MB to 2 GB at 4 TB/s after 3 us
    const double bytes = 1e6 * std::pow(2.0, i);
    const double us = 3 + bytes / 4e12 * 1e6;
    csv << fmt::format("stream,elementwise,fp32,{},4096,1,1,0,{},{},{},{}\n", bytes / 4096, bytes, us, us,
                       us);
  }
  csv.close();
  const RunResult fitted = run("calibrate --measurements " + measured.string(), data.string());
  ASSERT_EQ(fitted.exit_code, 0) << fitted.output;
  EXPECT_TRUE(fs::exists(data / "validation" / "calibration" / "h200.yaml")) << fitted.output;
  const RunResult step = run("step --hw h200 --context 65536 --batch 32", data.string());
  EXPECT_EQ(step.exit_code, 0) << step.output;
  EXPECT_NE(step.output.find("kernel model: calibrated, held-out MAPE"), std::string::npos) << step.output;
  EXPECT_NE(step.output.find("(validation/calibration/h200.yaml)"), std::string::npos) << step.output;
  const RunResult unwritable =
      run("calibrate --measurements " + measured.string() + " --out /proc/h200.yaml", data.string());
  EXPECT_EQ(unwritable.exit_code, 2);
  EXPECT_NE(unwritable.output.find("/proc/h200.yaml: field '--out': cannot write this file"),
            std::string::npos)
      << unwritable.output;
}

TEST(Cli, CompareLayersJson) {
  const auto c = run_json("compare-layers --hw h200 --phase prefill --context 65536");
  ASSERT_EQ(c["models"].size(), 3u);
  // CED: V4.1's prefill is cheaper than V4-Flash's on the same GPU.
  EXPECT_LT(c["models"][0]["total_time_us"].get<double>(), c["models"][1]["total_time_us"].get<double>());
  EXPECT_TRUE(c["not_run"].empty());
}

// At 1M tokens of context (V4's point) the models that hold it compare, and
// V3.2, whose max_context is 163840, is named with why; where none can, the
// command refuses at the flag.
TEST(Cli, CompareLayersKeepsTheModelsThatCanRun) {
  const auto [table, c] = table_and_json("compare-layers --context 1048576");
  ASSERT_EQ(c["models"].size(), 2u);
  EXPECT_EQ(c["models"][0]["model"], "DeepSeek-V4.1-Flash");
  EXPECT_EQ(c["models"][1]["model"], "DeepSeek-V4-Flash");
  ASSERT_EQ(c["not_run"].size(), 1u);
  EXPECT_EQ(c["not_run"][0]["model"], "DeepSeek-V3.2");
  EXPECT_EQ(c["not_run"][0]["reason"], "1048576 tokens exceed DeepSeek-V3.2's max_context of 163840");
  EXPECT_TRUE(says(table, "DeepSeek-V3.2: cannot run this step: 1048576 tokens exceed"));
  const RunResult none = run("compare-layers --context 1048576 --models deepseek_v3_2");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_TRUE(says(none, "field '--context': 1048576 tokens exceed DeepSeek-V3.2's max_context"));
}

// A step past one GPU's memory is compared all the same, as `step` times it,
// and says so: a dense model whose weights overflow the GPU, a model whose
// sequences' KV does, a prompt whose residual streams outgrow the reserve.
TEST(Cli, CompareLayersSaysWhichStepsDoNotFit) {
  const auto [dense, c] =
      table_and_json("compare-layers --models llama_3_1_405b,deepseek_v4_1_flash --context 8192");
  ASSERT_EQ(c["models"].size(), 2u);
  EXPECT_FALSE(c["models"][0]["kv_memory"]["fits"].get<bool>());
  EXPECT_LE(c["models"][0]["kv_memory"]["kept_for_kv_bytes"].get<double>(), 0.0);  // the weights overflow
  EXPECT_TRUE(c["models"][1]["kv_memory"]["fits"].get<bool>());
  EXPECT_TRUE(c["models"][1]["kv_memory"]["activations_fit"].get<bool>());
  EXPECT_TRUE(says(dense, "Llama-3.1-405B: KV held by the step's sequences"));
  EXPECT_TRUE(says(dense, "overflow the GPU's"));
  EXPECT_FALSE(says(dense, "DeepSeek-V4.1-Flash: KV held"));
  const auto [kv, kv_json] =
      table_and_json("compare-layers --models deepseek_v4_flash --context 1048576 --batch 64");
  const auto& memory = kv_json["models"][0]["kv_memory"];
  EXPECT_GT(memory["kv_bytes"].get<double>(), memory["kept_for_kv_bytes"].get<double>());
  EXPECT_TRUE(says(kv, "DeepSeek-V4-Flash: KV held by the step's sequences"));
  EXPECT_TRUE(
      says(kv, fmt::format("one GPU keeps for KV ({} sequences of 1048576 tokens fit): timed as if it fit",
                           memory["sequences_held_at_context"].get<int64_t>())));
  // A whole 1M-token prompt in one step: its residual streams outgrow the activation reserve.
  const auto [prompt, prompt_json] =
      table_and_json("compare-layers --models deepseek_v4_1_flash --phase prefill --context 1048576");
  EXPECT_FALSE(prompt_json["models"][0]["kv_memory"]["activations_fit"].get<bool>());
  EXPECT_TRUE(says(prompt, "DeepSeek-V4.1-Flash: residual streams of its widest layer 1048576 tokens"));
  EXPECT_FALSE(says(prompt, "--chunk-tokens"));  // step's flag
}

TEST(Cli, RunJsonAccountsForEveryRequest) {
  const auto r = run_json("run --deployment h200_pd_64 --workload agent_coding --duration 120 --seed 3");
  for (const char* key : {"ttft_ms", "tpot_ms"}) {
    for (const char* p : {"p50", "p90", "p99"}) EXPECT_TRUE(r[key].contains(p)) << key << "." << p;
  }
  EXPECT_TRUE(r["throughput_tokens_per_s_per_gpu"].contains("input"));
  EXPECT_TRUE(r["throughput_tokens_per_s_per_gpu"].contains("output"));
  const auto& q = r["requests"];
  EXPECT_EQ(q["arrived"].get<int64_t>(),
            q["finished"].get<int64_t>() + q["in_flight"].get<int64_t>() + q["rejected"].get<int64_t>());
  // Where its figures come from, the routing assumption included.
  for (const char* key : {"output_lengths", "routing"}) {
    EXPECT_FALSE(r["provenance"][key].get<std::string>().empty()) << key;
  }
  // Each kernel model's label, with the GPUs it timed.
  ASSERT_EQ(r["provenance"]["step_times"].size(), 1u);
  EXPECT_EQ(r["provenance"]["step_times"][0]["gpus"], nlohmann::json::array({"h200"}));
  EXPECT_NE(r["provenance"]["step_times"][0]["label"].get<std::string>().find("uncalibrated"),
            std::string::npos);
  EXPECT_NE(r["provenance"]["routing"].get<std::string>().find("(least_load in "), std::string::npos);
  // How each MoE layer's busiest EP rank is charged, with the pools' own placement.
  const std::string load = r["provenance"]["expert_load"].get<std::string>();
  EXPECT_NE(load.find("busiest EP rank"), std::string::npos) << load;
  EXPECT_NE(load.find("decode: EP 8, 32 redundant experts, Zipf skew 0.8"), std::string::npos) << load;
  // And how ranks that carry different tokens share the experts.
  EXPECT_NE(load.find("the routed experts the group's mean"), std::string::npos) << load;
  // A deployment that names no routing gets least load, and says so.
  const auto unnamed =
      run_json("run --deployment " V41SIM_SOURCE_DIR "/tests/data/aggregated.yaml --model " V41SIM_SOURCE_DIR
               "/tests/data/tiny_gqa.yaml --workload chat --duration 30");
  EXPECT_NE(unnamed["provenance"]["routing"].get<std::string>().find("least load"), std::string::npos);
  EXPECT_NE(unnamed["provenance"]["routing"].get<std::string>().find("(assumed: "), std::string::npos);
  EXPECT_EQ(run("run --duration 120 --seed 3 --json").output,
            run("run --duration 120 --seed 3 --json").output);
}

// --seeds repeats a run with the next seeds: the JSON lists each seed's
// figures (the first is the run shown), and plan's table gives each figure's
// spread and says which seeds ran.

// A trace in Mooncake's format replays as it is: its prompts find the
// blocks they share with those before them in the SSD tier.
TEST(Cli, RunReplaysABlockHashedTrace) {
  const auto r = run_json("run --workload mooncake_sample --deployment h200_agg_8 --duration 120");
  EXPECT_GT(r["requests"]["finished"].get<int64_t>(), 30);
  EXPECT_GT(r["kv_tiers"]["global_hits"].get<int64_t>(), 30);
  EXPECT_GT(r["tokens"]["input_cached"].get<int64_t>(), r["tokens"]["input_arrived"].get<int64_t>() / 3);
  EXPECT_EQ(run("run --workload mooncake_sample --deployment h200_agg_8 --duration 120 --json").output,
            run("run --workload mooncake_sample --deployment h200_agg_8 --duration 120 --json").output);
}

// A trace at another rate: its rows come at their times scaled to it, so
// at twice the trace's rate its requests all arrive in half the time. Drained
// (plan, capacity), a trace's window of arrivals ends at its last row; so
// capacity sweeps a trace's rate, each rate's figures over its own window.
TEST(Cli, ATraceRunsAtTheRateAsked) {
  const std::string twice = fmt::format("{}", 2 * 40 / 387.612);
  const auto own = run_json("run --workload agent_trace --deployment h200_agg_8 --duration 387.612");
  const auto fast = run_json("run --workload agent_trace --deployment h200_agg_8 --duration " +
                             fmt::format("{}", 387.612 / 2) + " --sessions-per-s " + twice);
  EXPECT_EQ(fast["requests"]["arrived"], own["requests"]["arrived"]);
  EXPECT_NEAR(fast["littles_law"]["arrival_rate_per_s"].get<double>(),
              2 * own["littles_law"]["arrival_rate_per_s"].get<double>(), 1e-6);
  // Not drained, a run asked for longer goes on serving, and says when the trace ended.
  const RunResult longer = run("run --workload agent_trace --deployment h200_agg_8 --duration 600");
  EXPECT_NE(longer.output.find("the trace's last row comes at 387.612 s, before the run's end"),
            std::string::npos)
      << longer.output;
  const auto c = run_json(
      "capacity --workload agent_trace --deployment h200_agg_8 --duration 2000 "
      "--rate-factors 1,4");
  ASSERT_EQ(c["variants"].size(), 1u);
  const auto& v = c["variants"][0];
  ASSERT_GE(v["points"].size(), 2u);
  EXPECT_NEAR(v["workload_sessions_per_s"].get<double>(), 40 / 387.612, 1e-9);
  for (const auto& p : v["points"]) {  // each rate's window: its trace's span at that rate, not 2000 s
    // (or longer, where rows waited past it for their session's previous
    // answer: the window lasts until the last row is sent)
    const double span = 387.612 * (40 / 387.612) / p["sessions_per_s"].get<double>();
    const double window = p["window_s"].get<double>();
    EXPECT_EQ(p["requests"]["arrived"], own["requests"]["arrived"]);
    EXPECT_GE(window, span - 1e-9);
    EXPECT_EQ(window > span + 1e-9, p["requests"]["trace_turns_held"].get<int64_t>() > 0) << p.dump();
    EXPECT_LT(window, 2000);
    EXPECT_NEAR(p["requests_per_s"].get<double>(), p["requests"]["arrived"].get<double>() / window, 1e-6)
        << p.dump();
  }
  // The table names the rates whose rows waited, and what sets the load there.
  const int64_t held = v["points"][1]["requests"]["trace_turns_held"].get<int64_t>();
  ASSERT_GT(held, 0) << "at four times its rate some of the trace's rows wait";
  const RunResult table =
      run("capacity --workload agent_trace --deployment h200_agg_8 --duration 2000 --rate-factors 1,4");
  EXPECT_NE(table.output.find(fmt::format("rows that waited for it: 0.413 sessions/s {} of 294", held)),
            std::string::npos)
      << table.output;
  EXPECT_NE(table.output.find("the trace's sessions, not its rate, set the load"), std::string::npos);
}

// A trace served again over a longer window is judged on the SLA alone: its
// load rises and falls as its 40 sessions do, so its requests in the system
// never settle, at any rate. Where the trace's last row ended the run's own
// window, the run is its own confirmation (a longer one serves the same rows).
TEST(Cli, ATraceReplayHoldsWhereItMeetsTheSla) {
  const auto c = run_json(
      "capacity --workload agent_trace --deployment h200_agg_8 --duration 120 --rate-factors 1,8 "
      "--precision 1");
  const auto& v = c["variants"][0];
  ASSERT_EQ(v["points"].size(), 2u) << v.dump();
  const auto& slow = v["points"][0];  // 120 s of a trace that lasts 387.6 s at this rate
  const auto& fast = v["points"][1];  // the whole trace comes within 120 s
  EXPECT_EQ(slow["window_s"].get<double>(), 120);
  EXPECT_LT(fast["window_s"].get<double>(), 120);
  for (const auto* p : {&slow, &fast}) ASSERT_TRUE((*p)["meets_sla"].get<bool>()) << p->dump();
  // The fast rate met it and ran the whole trace: its run stands as its confirmation.
  const auto& own = fast["confirmation"];
  ASSERT_TRUE(own.is_object()) << fast.dump();
  EXPECT_TRUE(own["window_ends_with_trace"].get<bool>());
  EXPECT_EQ(own["duration_s"], fast["window_s"]);
  EXPECT_TRUE(own["holds"].get<bool>());
  EXPECT_FALSE(own["settled_in_second_half"].get<bool>()) << "the sample trace's load still moves";
  EXPECT_EQ(v["largest_holding_sessions_per_s"], fast["sessions_per_s"]);
  // Served again alone, the slow rate runs the whole trace, longer than its window, and holds unsettled.
  const auto alone =
      run_json("capacity --workload agent_trace --deployment h200_agg_8 --duration 120 --rate-factors 1");
  const auto& longer = alone["variants"][0]["points"][0]["confirmation"];
  ASSERT_TRUE(longer.is_object()) << alone.dump();
  EXPECT_NEAR(longer["duration_s"].get<double>(), 387.612, 1e-9);
  EXPECT_TRUE(longer["window_ends_with_trace"].get<bool>());
  EXPECT_FALSE(longer["settled_in_second_half"].get<bool>());
  EXPECT_TRUE(longer["holds"].get<bool>());
  // The table says what the longer run covered, and how a trace is judged.
  const RunResult table =
      run("capacity --workload agent_trace --deployment h200_agg_8 --duration 120 "
          "--rate-factors 1");
  EXPECT_NE(table.output.find("and over the whole trace"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("a trace's replay holds where it meets the SLA"), std::string::npos);
  EXPECT_NE(table.output.find("or, replaying a trace, the trace's own load rising or falling"),
            std::string::npos);
  // run says why a trace's window need not settle.
  const RunResult one = run("run --workload agent_trace --deployment h200_agg_8 --duration 300");
  EXPECT_NE(one.output.find("not settled"), std::string::npos) << one.output;
  EXPECT_NE(one.output.find("a trace's load rises and falls as its sessions start and end"),
            std::string::npos);
  // plan judges a trace's variants the same way.
  const RunResult plan = run("plan --workload agent_trace --deployment h200_agg_8 --duration 120");
  EXPECT_NE(plan.output.find("and within it over the whole trace (100.0% within)"), std::string::npos)
      << plan.output;
}

// --set gives a figure the file marks unknown a value, as the user's
// assumption: H20's price, which no public source gives, so its runs are priced.
TEST(Cli, SetGivesAnUnknownFigureTheUsersValue) {
  const auto unpriced = run_json("run --deployment h20_pd_16 --duration 30");
  EXPECT_FALSE(unpriced["cost"]["known"].get<bool>());
  const RunResult priced =
      run("--set hw_profiles/h20.yaml:price_usd_per_gpu_hour=1.5 run --deployment h20_pd_16 --duration 30 "
          "--json");
  ASSERT_EQ(priced.exit_code, 0) << priced.output;
  EXPECT_NE(
      priced.output.find("price_usd_per_gpu_hour = 1.5 in hw_profiles/h20.yaml:25 (the file says unknown: "),
      std::string::npos)
      << priced.output;
  const auto cost = nlohmann::json::parse(priced.output.substr(priced.output.find('{')))["cost"];
  EXPECT_TRUE(cost["known"].get<bool>());
  EXPECT_DOUBLE_EQ(cost["gpu_usd_per_hour"].get<double>(), 16 * 1.5);
  EXPECT_NE(cost["provenance"].get<std::string>().find("assumed: --set on the command line"),
            std::string::npos);
  // The value still meets the loader's checks.
  const RunResult bad =
      run("--set hw_profiles/h20.yaml:price_usd_per_gpu_hour=-2 run --deployment h20_pd_16 --duration 30");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("h20.yaml:25: field 'price_usd_per_gpu_hour.value'"), std::string::npos)
      << bad.output;
}

// A run too short for any request to finish prints no latency figures: '-'
// in the tables and null in the JSON, never zeros a reader takes for times.
// From empty, its few requests are sessions' first turns, whose whole prompts
// take longer to prefill than the window lasts.
TEST(Cli, ARunWhereNothingFinishedHasNoLatencyFigures) {
  const std::string args = "run --deployment h200_agg_8 --workload agent_coding --warm-up 0 --duration 3";
  const auto r = run_json(args);
  ASSERT_EQ(r["requests"]["finished"].get<int64_t>(), 0)
      << "the run must be too short for a request to finish";
  ASSERT_GT(r["requests"]["arrived"].get<int64_t>(), 0);
  for (const char* key : {"ttft_ms", "tpot_ms", "e2e_ms", "prefill_wait_ms"}) {
    EXPECT_EQ(r[key]["count"].get<int64_t>(), 0) << key;
    EXPECT_TRUE(r[key]["p99"].is_null()) << key;
    EXPECT_TRUE(r[key]["mean"].is_null()) << key;
  }
  EXPECT_TRUE(r["goodput"]["fraction"].is_null());
  const RunResult text = run(args);
  EXPECT_EQ(text.exit_code, 0) << text.output;
  const std::size_t ttft = text.output.find("\nTTFT ");
  ASSERT_NE(ttft, std::string::npos) << text.output;
  const std::string ttft_row = text.output.substr(ttft + 1, text.output.find('\n', ttft + 1) - ttft - 1);
  EXPECT_EQ(std::count(ttft_row.begin(), ttft_row.end(), '-'), 4) << ttft_row;
  EXPECT_EQ(ttft_row.find_first_of("0123456789"), std::string::npos) << ttft_row;
  EXPECT_NE(text.output.find("no request finished within the run"), std::string::npos);
  EXPECT_NE(text.output.find("0 requests/s (none finished)"), std::string::npos);
}
// A rate so low that the next session comes after any run could end (at
// 1e-300 sessions/s, at infinity), or a run shorter than a tick of simulated
// time (whose occupancy samples once came at one instant forever), is a run
// in which nothing arrives: it ends, saying so, with nothing to judge.
TEST(Cli, ARunTooSlowOrTooShortForAnyArrivalIsRefused) {
  for (const std::string args :
       {"run --deployment h200_agg_8 --duration 1e-300",
        "run --deployment h200_agg_8 --workload agent_coding --duration 30 "
        "--sessions-per-s 1e-300",
        "run --deployment h200_agg_8 --workload chat --duration 30 --sessions-per-s 1e-300"}) {
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
    EXPECT_NE(r.output.find("no request arrived in the"), std::string::npos) << r.output;
  }
}

// plan keeps going past a variant that cannot run, saying why in its row;
// where none could (here no request arrives in the window, or a trace ends
// before the warm-up), the input is wrong for all: it stops at the first
// one's line (exit 2), as capacity and context do, not with a table of
// refusals and exit 0.
TEST(Cli, PlanWhereNoVariantCouldRun) {
  for (const auto& [args, error] :
       {std::pair{"plan --deployment h200_agg_8 --workload chat --sessions-per-s 0.0001 --duration 60",
                  "v41sim: error: input: field '--sessions-per-s': no request arrived"},
        std::pair{
            "plan --workload agent_trace --deployment h200_agg_8 --hw h200,b200 --warm-up 500 --duration 60",
            "v41sim: error: input: field '--warm-up': the trace's last row comes at 387.612 s"}}) {
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
    EXPECT_NE(r.output.find(error), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("no variant meets the SLA"), std::string::npos) << r.output;
  }
}

// A grid variant the model cannot run (V4-Pro's weights overflow 8 H200s)
// keeps its reason, its file named inside the data folder, beside the
// variants that ran: in plan's row, capacity's summary, context's and
// frontier's table of their own, and each one's JSON; where no variant can
// run, the command stops at the first one's line.
TEST(Cli, AVariantThatCannotRunKeepsItsReason) {
  const std::string grid =
      "--model deepseek_v4_pro --deployment h200_agg_8 --hw h200 --ep 8,16 --duration 20 --warm-up 20 "
      "--confirm-seconds 0";
  const std::string reason =
      "cannot run: workloads/deployments/h200_agg_8.yaml:18: field 'decode.ep': DeepSeek-V4-Pro does not fit "
      "on 8 x NVIDIA H200 SXM 141GB at EP 8";
  const RunResult plan = run("plan " + grid, V41SIM_SOURCE_DIR, "/dev/null");
  EXPECT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_NE(plan.output.find(reason), std::string::npos) << plan.output;
  const RunResult capacity = run("capacity " + grid + " --rate-factors 1", V41SIM_SOURCE_DIR, "/dev/null");
  EXPECT_EQ(capacity.exit_code, 0) << capacity.output;
  EXPECT_NE(capacity.output.find("1 x 8 h200, aggregated, EP 8    8     " + reason), std::string::npos)
      << capacity.output;
  EXPECT_NE(
      capacity.output.find("on 1 x 16 h200, aggregated, EP 16 under 'agent coding': arrival rates served"),
      std::string::npos)
      << capacity.output;
  const auto json = nlohmann::json::parse(run("capacity " + grid + " --rate-factors 1 --json").output);
  ASSERT_EQ(json["variants"].size(), 2u);
  EXPECT_EQ("cannot run: " + json["variants"][0]["not_run"].get<std::string>(),
            json["variants"][0]["verdict"]);
  EXPECT_TRUE(json["variants"][0]["points"].empty());
  EXPECT_FALSE(json["variants"][1]["points"].empty());
  // context and frontier: the layouts that run, then a table of those that cannot.
  for (const char* command : {"context --contexts 131072", "frontier"}) {
    const std::string layouts = std::string(command) + " --model deepseek_v4_pro --hw h200,b200 --ep 8,16";
    const RunResult r = run(layouts, V41SIM_SOURCE_DIR, "/dev/null");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("Layouts the model cannot run"), std::string::npos) << r.output;
    EXPECT_NE(
        r.output.find("1 x 8 h200, aggregated, EP 8  " + reason.substr(std::string("cannot run: ").size())),
        std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("1 x 16 b200, aggregated, EP 16"), std::string::npos) << r.output;
    const auto listed =
        nlohmann::json::parse(run(layouts + " --json", V41SIM_SOURCE_DIR, "/dev/null").output);
    ASSERT_EQ(listed["not_run"].size(), 1u) << command;
    EXPECT_EQ(listed["not_run"][0]["deployment"], "1 x 8 h200, aggregated, EP 8");
  }
  for (const char* command : {"capacity --duration 20", "context", "frontier"}) {
    const RunResult none =
        run(std::string(command) + " --model deepseek_v4_pro --deployment h200_agg_8 --hw h200 --ep 8");
    EXPECT_EQ(none.exit_code, 2) << command << ": " << none.output;
    EXPECT_NE(none.output.find("h200_agg_8.yaml:18: field 'decode.ep': DeepSeek-V4-Pro does not fit"),
              std::string::npos)
        << none.output;
  }
}

TEST(Cli, SeedsRepeatTheRunAndShowTheSpread) {
  const auto r =
      run_json("run --deployment h200_agg_8 --workload chat --warm-up 0 --duration 30 --seed 2 --seeds 3");
  ASSERT_EQ(r["seeds"].size(), 3u);
  EXPECT_EQ(r["seeds"][0]["seed"].get<int64_t>(), 2);
  EXPECT_EQ(r["seeds"][2]["seed"].get<int64_t>(), 4);
  EXPECT_EQ(r["seeds"][0]["tpot_p99_ms"].get<double>(), r["tpot_ms"]["p99"].get<double>());
  const std::string args = "plan --deployment h200_agg_8 --workload chat --warm-up 0 --duration 30 --seeds 2";
  const std::string table = run(args).output;
  EXPECT_NE(table.find("seeds 1-2"), std::string::npos) << table;
  EXPECT_NE(table.find(" of 2 seeds alone"), std::string::npos) << table;  // how many meet the SLA alone
  EXPECT_EQ(run_json(args)["rows"][0]["seeds"].size(), 2u);
  const RunResult zero = run("run --duration 30 --seeds 0");
  EXPECT_EQ(zero.exit_code, 2) << zero.output;
  EXPECT_NE(zero.output.find("--seeds"), std::string::npos) << zero.output;
}

// sensitivity: every assumed figure the run reads, moved both ways; a bad
// swing is refused naming the flag.
TEST(Cli, SensitivityMovesEachAssumption) {
  const std::string tiny = fmt::format(
      "--model {0}/tests/data/tiny_gqa.yaml --deployment {0}/tests/data/aggregated.yaml", V41SIM_SOURCE_DIR);
  const auto s = run_json("sensitivity " + tiny + " --workload chat --warm-up 10 --duration 10 --swing 0.2");
  EXPECT_DOUBLE_EQ(s["swing"].get<double>(), 0.2);
  ASSERT_GT(s["figures"].size(), 10u);
  bool launch = false;
  for (const auto& a : s["figures"]) {
    EXPECT_EQ(a["kind"], "assumed");
    for (const char* key : {"field", "file", "line", "value", "source", "low", "high", "tpot_p99_change_ms"})
      EXPECT_TRUE(a.contains(key)) << key;
    if (a["field"] != "launch_overhead_us") continue;
    launch = true;
    EXPECT_EQ(a["file"], "validation/calibration/defaults.yaml");  // named within the data folder
    EXPECT_DOUBLE_EQ(a["low"]["value"].get<double>(), 3.2);
  }
  EXPECT_TRUE(launch) << "the kernel-model priors' launch overhead is an assumption the run reads";
  // Datasheet figures instead: the GPU profile's, e.g. its HBM bandwidth.
  const auto datasheet =
      run_json("sensitivity " + tiny + " --workload chat --warm-up 10 --duration 10 --kinds datasheet");
  bool hbm = false;
  for (const auto& a : datasheet["figures"]) {
    EXPECT_EQ(a["kind"], "datasheet");
    hbm = hbm || (a["field"] == "hbm_bytes_per_s" && a["file"] == "hw_profiles/h200.yaml");
  }
  EXPECT_TRUE(hbm);
  for (const char* bad_flags : {"--swing 1.5", "--kinds guessed"}) {
    const RunResult bad = run(std::string("sensitivity --duration 20 ") + bad_flags);
    EXPECT_EQ(bad.exit_code, 2) << bad.output;
    EXPECT_NE(bad.output.find(std::string(bad_flags).substr(0, 7)), std::string::npos) << bad.output;
  }
}

// sensitivity --progress: a line per moved run, naming the figure, where it
// went and what the run gave; stdout the same as without it.
TEST(Cli, SensitivityShowsItsProgressOnStderr) {
  const std::string args = fmt::format(
      "sensitivity --model {0}/tests/data/tiny_gqa.yaml --deployment {0}/tests/data/aggregated.yaml "
      "--workload "
      "chat --warm-up 10 --duration 10 --json",
      V41SIM_SOURCE_DIR);
  const auto progress = temp_dir("sensitivity_progress") / "stderr.txt";
  const RunResult quiet = run(args, V41SIM_SOURCE_DIR, "/dev/null");
  const RunResult shown = run(args + " --progress", V41SIM_SOURCE_DIR, progress.string());
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_EQ(shown.output, quiet.output);
  const auto figures = nlohmann::json::parse(shown.output)["figures"];
  ASSERT_GT(figures.size(), 10u);
  const std::string text = testing::read_text(progress.string());
  std::istringstream lines(text);
  std::size_t said = 0;
  for (std::string line; std::getline(lines, line); ++said) {
    EXPECT_NE(line.find(fmt::format(" of {}: ", 2 * figures.size())), std::string::npos) << line;
    EXPECT_TRUE(line.find("TPOT p99 ") != std::string::npos || line.find(": refused: ") != std::string::npos)
        << line;
  }
  EXPECT_EQ(said, 2 * figures.size());
  for (const auto& figure : figures) {
    const std::string named = fmt::format(": {} ({}:{}) ", figure["field"].get<std::string>(),
                                          figure["file"].get<std::string>(), figure["line"].get<int>());
    const std::size_t first = text.find(named);
    ASSERT_NE(first, std::string::npos) << named;
    EXPECT_NE(text.find(named, first + 1), std::string::npos) << named << " moved both ways";
  }
}

// --set: what if a file said another value. Every command reads the edited
// value through its loader (a derived figure follows it), says so on stderr,
// and a field the file lacks inside a block map, a field its loader does not
// know or a malformed edit is refused with exit 2.
TEST(Cli, SetEditsOneValueOfAFile) {
  const RunResult plain = run("params --model deepseek_v4_1_flash");
  const RunResult topk8 =
      run("--set models/deepseek_v4_1_flash.yaml:moe.top_k=8 params --model deepseek_v4_1_flash");
  ASSERT_EQ(topk8.exit_code, 0) << topk8.output;
  EXPECT_NE(
      topk8.output.find("what if: moe.top_k = 8 in models/deepseek_v4_1_flash.yaml:41 (the file says 6)"),
      std::string::npos)
      << topk8.output;
  EXPECT_NE(plain.output.find("15.82 B"), std::string::npos) << plain.output;  // active per decode token
  EXPECT_EQ(topk8.output.find("15.82 B"), std::string::npos) << topk8.output;
  // A sourced figure is set by naming it: its number changes, its source stays.
  const RunResult acceptance = run("--set models/deepseek_v4_1_flash.yaml:draft.acceptance_length=3.2 kv");
  EXPECT_NE(acceptance.output.find(
                "draft.acceptance_length = 3.2 in models/deepseek_v4_1_flash.yaml:93 (the file says 3.51)"),
            std::string::npos)
      << acceptance.output;
  // The loader's checks apply to the edited value, naming the line.
  const RunResult too_high = run("--set models/deepseek_v4_1_flash.yaml:draft.acceptance_length=6 kv");
  EXPECT_EQ(too_high.exit_code, 2);
  EXPECT_NE(too_high.output.find("deepseek_v4_1_flash.yaml:93: field 'draft.acceptance_length'"),
            std::string::npos)
      << too_high.output;
  // A field the file lacks is added where no line moves (here inside the
  // prefill pool's { } map), and its loader reads it.
  const RunResult cp =
      run("--set workloads/deployments/h200_pd_64.yaml:prefill.context_parallel_min_tokens=65536 run "
          "--deployment h200_pd_64 --workload stress_1m --duration 300");
  ASSERT_EQ(cp.exit_code, 0) << cp.output;
  EXPECT_NE(cp.output.find("prefill.context_parallel_min_tokens = 65536 in "
                           "workloads/deployments/h200_pd_64.yaml:14 (added: the file does not say it)"),
            std::string::npos)
      << cp.output;
  EXPECT_NE(cp.output.find("context-parallel prefill steps (prompts >= 65536 tokens)"), std::string::npos)
      << cp.output;
  const RunResult unknown = run("--set workloads/deployments/h200_pd_64.yaml:nope=1 run --duration 10");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("h200_pd_64.yaml:28: field 'nope': unknown field"), std::string::npos)
      << unknown.output;
  for (const char* bad :
       {"models/deepseek_v4_1_flash.yaml:draft.nope=1", "models/deepseek_v4_1_flash.yaml:draft=1",
        "models/deepseek_v4_1_flash.yaml:attention.compress_ratios[99]=2", "no_colon=1",
        "models/none.yaml:a=1"}) {
    const RunResult r = run(std::string("--set ") + bad + " kv");
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.output;
    EXPECT_NE(r.output.find("error:"), std::string::npos) << bad << ": " << r.output;
  }
}

TEST(Cli, SessionsPerSecondReplacesTheWorkloadsRate) {
  const auto file_rate = run_json("run --deployment h200_pd_64 --workload chat --duration 120");
  const auto quarter =
      run_json("run --deployment h200_pd_64 --workload chat --duration 120 --sessions-per-s 5");
  // chat.yaml says 20 sessions/s; a quarter of the sessions bring about a quarter of the requests
  // (64 GPUs keep up with either, so turns are not held back by queues).
  const double ratio =
      quarter["requests"]["arrived"].get<double>() / file_rate["requests"]["arrived"].get<double>();
  EXPECT_GT(ratio, 0.15);
  EXPECT_LT(ratio, 0.35);
}

// An NVL72 domain as one EP group: V4.1's 384 experts need 48 replicas to
// deal over 72 ranks, which plan tries without a file edited.
TEST(Cli, PlanTriesReplicaCountsOnAnNvl72Domain) {
  const auto p = run_json(
      "plan --deployment h200_agg_8 --workload chat --hw gb200_nvl72 --ep 72 --redundant-experts 48 "
      "--warm-up 0 --duration 20 --confirm-seconds 0");
  ASSERT_EQ(p["rows"].size(), 1u);
  const auto& row = p["rows"][0];
  EXPECT_FALSE(row.contains("not_run")) << row.dump();
  EXPECT_EQ(row["deployment"], "1 x 72 gb200_nvl72, aggregated, EP 72, 48 redundant experts");
  for (const char* pool : {"prefill", "decode"}) {
    EXPECT_EQ(row[pool]["ep"].get<int64_t>(), 72);
    EXPECT_EQ(row[pool]["redundant_experts"].get<int64_t>(), 48);
  }
  EXPECT_GT(row["requests"]["finished"].get<int64_t>(), 0);
}

// frontier tries replica counts too: EP 72 on an NVL72 domain, each rank
// holding fewer experts' weights, steps faster at small batches than EP 8.
TEST(Cli, FrontierTriesReplicaCounts) {
  const auto j = run_json("frontier --hw gb200_nvl72 --ep 8,72 --redundant-experts 48");
  ASSERT_EQ(j["frontiers"].size(), 2u);
  for (const auto& f : j["frontiers"]) EXPECT_EQ(f["redundant_experts"].get<int64_t>(), 48);
  EXPECT_EQ(j["frontiers"][1]["deployment"], "1 x 72 gb200_nvl72, aggregated, EP 72, 48 redundant experts");
  EXPECT_LT(j["frontiers"][1]["points"][0]["tpot_ms"].get<double>(),
            j["frontiers"][0]["points"][0]["tpot_ms"].get<double>());
  const RunResult none = run("frontier --hw gb200_nvl72 --ep 72 --redundant-experts 0");
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("does not divide the 384 routed experts"), std::string::npos) << none.output;
}

// context lays the deployment out as frontier does: on a GPU whose NVLink
// domain outgrows the EP group, also as one group over the domain; --ep and
// --redundant-experts choose instead.
TEST(Cli, ContextSpansAnNvlinkDomainAsFrontierDoes) {
  const auto both = run_json("context --hw gb200_nvl72 --contexts 131072");
  ASSERT_EQ(both["sweeps"].size(), 2u);
  const auto asked = run_json("context --hw gb200_nvl72 --ep 72 --redundant-experts 48 --contexts 131072");
  ASSERT_EQ(asked["sweeps"].size(), 1u);
  EXPECT_EQ(asked["sweeps"][0].dump(), both["sweeps"][1].dump());
  EXPECT_NE(asked["sweeps"][0].dump().find("EP 72, 48 redundant experts"), std::string::npos);
  const RunResult refused = run("context --hw gb200_nvl72 --ep 72 --redundant-experts 0");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("(--redundant-experts 48)"), std::string::npos) << refused.output;
}

// An ITL limit judges each request's worst stall: an aggregated instance
// whose prompt steps run 16K tokens meets a TTFT and TPOT SLA, but its
// decoding requests wait out each prompt step; with 1K-token steps they do
// not. The table shows the figure the limit judges.
TEST(Cli, PlanWithAnItlLimitRanksOnEachRequestsLongestStall) {
  const std::string args =
      "plan --deployment h200_agg_8 --max-tokens-per-step 1024,16384 --duration 120 --confirm-seconds 0";
  const auto rows_by_budget = [](const nlohmann::json& plan) {
    std::map<std::string, nlohmann::json> out;
    for (const auto& row : plan["rows"]) {
      const std::string name = row["deployment"].get<std::string>();
      out[name.find("16384") != std::string::npos ? "16K" : "1K"] = row;
    }
    return out;
  };
  const auto free = rows_by_budget(run_json(args));
  const nlohmann::json limited_plan = run_json(args + " --itl-ms 100");
  const auto limited = rows_by_budget(limited_plan);
  ASSERT_EQ(free.size(), 2u);
  ASSERT_EQ(limited.size(), 2u);
  EXPECT_TRUE(limited_plan["sla"]["itl_ms"].is_number());
  EXPECT_EQ(limited_plan["sla"]["itl_ms"].get<double>(), 100);
  EXPECT_TRUE(run_json(args)["sla"]["itl_ms"].is_null()) << "no limit unless asked";
  EXPECT_TRUE(free.at("16K")["meets_sla"].get<bool>());
  EXPECT_TRUE(free.at("1K")["meets_sla"].get<bool>());
  EXPECT_GT(limited.at("16K")["longest_itl_ms"]["p99"].get<double>(), 100);
  EXPECT_FALSE(limited.at("16K")["meets_sla"].get<bool>());
  EXPECT_LT(limited.at("1K")["longest_itl_ms"]["p99"].get<double>(), 100);
  EXPECT_TRUE(limited.at("1K")["meets_sla"].get<bool>());
  // The same runs: a limit judges them, it does not change them.
  EXPECT_EQ(limited.at("16K")["tpot_ms"], free.at("16K")["tpot_ms"]);
  const std::string table = run(args + " --itl-ms 100").output;
  EXPECT_NE(table.find("longest ITL p99 (ms)"), std::string::npos) << table;
  EXPECT_NE(table.find("no gap between streamed chunks over 100 ms"), std::string::npos) << table;
  EXPECT_EQ(run(args).output.find("longest ITL p99 (ms)"), std::string::npos);
}

// run takes the SLA flags plan and capacity take: the same run, judged
// against other limits, and its misses by limit in the JSON.
TEST(Cli, RunJudgesTheSameRunAgainstTheLimitsItIsGiven) {
  const std::string args = "run --deployment h200_agg_8 --warm-up 120 --duration 60 --json";
  const auto plain = run_json(args);
  const auto stalls = run_json(args + " --itl-ms 100");
  EXPECT_TRUE(plain["goodput"]["itl_ms"].is_null());
  EXPECT_EQ(stalls["goodput"]["itl_ms"].get<double>(), 100);
  EXPECT_EQ(plain["goodput"]["misses"]["over_longest_itl"].get<int64_t>(), 0);
  EXPECT_GT(stalls["goodput"]["misses"]["over_longest_itl"].get<int64_t>(), 0);
  EXPECT_LT(stalls["goodput"]["fraction"].get<double>(), plain["goodput"]["fraction"].get<double>());
  EXPECT_EQ(stalls["longest_itl_ms"], plain["longest_itl_ms"]) << "the same run";
  const auto strict = run_json(args + " --tpot-ms 1");
  EXPECT_EQ(strict["goodput"]["misses"]["over_tpot"].get<int64_t>(),
            strict["requests"]["finished"].get<int64_t>());
}

// Without grid flags plan serves the base alone, and says what would rank it
// against others.
TEST(Cli, PlanWithoutAGridSaysNothingWasRanked) {
  const RunResult r = run("plan --deployment h200_agg_8 --warm-up 60 --duration 60 --confirm-seconds 0");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("one variant of each base: nothing was ranked against it; the grid flags (--hw, "
                          "--ep, --prefill-instances, --decode-instances"),
            std::string::npos)
      << r.output;
}

TEST(Cli, PlanJsonRanksEveryVariant) {
  const std::string args =
      "plan --deployment h200_agg_8 --hw h200,b200 --decode-instances 1,2 --warm-up 60 --duration 60 "
      "--confirm-seconds 300";
  const auto p = run_json(args);
  ASSERT_EQ(p["rows"].size(), 4u);
  // Each variant within the SLA was served again over the longer window, in
  // rank order: after a warm-up of a minute agent sessions are still
  // arriving at their full number, so none settles there, and none holds.
  for (const auto& row : p["rows"]) {
    if (!row["meets_sla"].get<bool>()) continue;
    ASSERT_TRUE(row.contains("confirmation")) << row["deployment"];
    EXPECT_EQ(row["confirmation"]["duration_s"].get<double>(), 300);
    EXPECT_FALSE(row["confirmation"]["settled"].get<bool>()) << row["deployment"];
    EXPECT_FALSE(row["holds"].get<bool>()) << row["deployment"];
  }
  for (const auto& row : p["rows"]) {
    for (const char* key : {"deployment", "gpus", "prefill", "decode", "within_sla", "meets_sla", "holds",
                            "ttft_ms", "tpot_ms", "cost", "error_band"}) {
      EXPECT_TRUE(row.contains(key)) << key;
    }
    EXPECT_EQ(row["requests"]["arrived"].get<int64_t>(),
              row["requests"]["finished"].get<int64_t>() + row["requests"]["rejected"].get<int64_t>());
  }
  EXPECT_EQ(run(args + " --json").output, run(args + " --json").output);
  // A TPOT limit no variant can reach: every row ran, none meets it.
  const auto strict = run_json(args + " --tpot-ms 0.5");
  for (const auto& row : strict["rows"]) EXPECT_FALSE(row["meets_sla"].get<bool>()) << row["deployment"];
  // The table says the answer in one line.
  EXPECT_NE(run(args + " --tpot-ms 0.5").output.find("no variant meets the SLA"), std::string::npos);
  const std::string answer = run(args).output;
  EXPECT_NE(answer.find("cheapest within the SLA: " + p["rows"][0]["deployment"].get<std::string>()),
            std::string::npos)
      << answer;
  EXPECT_NE(answer.find("but not over 300 s: "), std::string::npos) << answer;
  EXPECT_EQ(answer.find("one variant of each base"), std::string::npos) << answer;
  // After the default warm-up the cheapest holds over the longer window.
  const auto settled =
      run_json("plan --deployment h200_agg_8 --hw b200 --duration 120 --confirm-seconds 300");
  EXPECT_TRUE(settled["rows"][0]["confirmation"]["holds"].get<bool>());
  EXPECT_TRUE(settled["rows"][0]["holds"].get<bool>());
  // A confirmation no longer than the window is refused where asked for, and
  // the default not asked where the window is as long.
  const RunResult asked = run("plan --deployment h200_agg_8 --hw b200 --duration 120 --confirm-seconds 120");
  EXPECT_EQ(asked.exit_code, 2) << asked.output;
  EXPECT_NE(
      asked.output.find("field '--confirm-seconds': expected 0 (none) or more seconds than --duration's "
                        "120 (a confirmation serves a longer window), got 120"),
      std::string::npos)
      << asked.output;
  EXPECT_FALSE(
      run_json("plan --deployment h200_agg_8 --hw b200 --sessions-per-s 0.05 --duration 1800 --warm-up 0")
          ["rows"][0]
              .contains("confirmation"));
}

TEST(Cli, ContextJsonSweepsEachGpu) {
  const std::string args = "context --hw h200,b200 --contexts 8192,1048576 --json";
  const auto j = run_json(args);
  ASSERT_EQ(j["sweeps"].size(), 2u);
  EXPECT_EQ(j["sweeps"][1]["decode_gpu"], "b200");
  for (const auto& sweep : j["sweeps"]) {
    EXPECT_EQ(sweep["tpot_limit_ms"].get<double>(), 60);  // h200_agg_8's SLA
    EXPECT_EQ(sweep["max_batch_per_gpu"].get<int64_t>(), 64);
    ASSERT_EQ(sweep["points"].size(), 2u);
    for (const auto& p : sweep["points"]) {
      for (const char* key : {"context", "session_bytes", "sessions_per_decode_gpu", "lone_ttft_ms", "decode",
                              "prefill", "cost"}) {
        EXPECT_TRUE(p.contains(key)) << key;
      }
    }
  }
  EXPECT_EQ(run(args).exit_code, 0);
}

// Without --contexts the sweep runs 8K to 1M within the model's
// max_context, ending at it where it is shorter (V3.2: 160K).
TEST(Cli, ContextSweepsWithinTheModelsLongestContext) {
  const auto j = run_json("context --model deepseek_v3_2 --deployment h200_agg_8 --hw h200 --json");
  ASSERT_EQ(j["sweeps"].size(), 1u);
  std::vector<int64_t> contexts;
  for (const auto& p : j["sweeps"][0]["points"]) contexts.push_back(p["context"].get<int64_t>());
  EXPECT_EQ(contexts, (std::vector<int64_t>{8192, 32768, 131072, 163840}));
  // Given, a context past it is the flag's error.
  const RunResult past = run("context --model deepseek_v3_2 --deployment h200_agg_8 --contexts 8192,524288");
  EXPECT_EQ(past.exit_code, 2);
  EXPECT_NE(past.output.find("field '--contexts'"), std::string::npos) << past.output;
  // frontier's default context (128K) is the model's max_context where that is shorter.
  const std::string shorter = "--set models/deepseek_v4_1_flash.yaml:max_context=65536 ";
  const RunResult frontier =
      run(shorter + "frontier --deployment h200_agg_8 --hw h200 --json", V41SIM_SOURCE_DIR,
          "/dev/null");  // stdout alone: the what-if line goes to stderr
  ASSERT_EQ(frontier.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(frontier.output)["frontiers"][0]["context"].get<int64_t>(), 65536);
  EXPECT_EQ(run(shorter + "frontier --deployment h200_agg_8 --hw h200 --context 131072").exit_code, 2);
}

// A served run names how an aggregated deployment's steps are modelled:
// decode beside prompt steps, or prompt chunks mixed into decode steps;
// a disaggregated one neither.
TEST(Cli, RunNamesHowAggregatedStepsAreModelled) {
  const std::string beside = "runs as that step runs";
  const std::string mixed = "a decode step carrying prompt chunks";
  const std::string window = " --warm-up 0 --duration 5";
  const std::string first = run("run --deployment h200_agg_8" + window).output;
  EXPECT_NE(first.find(beside), std::string::npos);
  EXPECT_EQ(first.find(mixed), std::string::npos);
  const std::string mixing =
      run("--set workloads/deployments/h200_agg_8.yaml:aggregated_steps=mixed run --deployment h200_agg_8" +
          window)
          .output;
  EXPECT_NE(mixing.find(mixed), std::string::npos);
  EXPECT_EQ(mixing.find(beside), std::string::npos);
  const std::string split = run("run --deployment h200_pd_64" + window).output;
  EXPECT_EQ(split.find(beside), std::string::npos);
  EXPECT_EQ(split.find(mixed), std::string::npos);
  // The JSON names it among the run's provenance (null where disaggregated).
  const auto json = run_json("run --deployment h200_agg_8" + window);
  EXPECT_NE(json["provenance"]["aggregated_steps"].get<std::string>().find(beside), std::string::npos);
  EXPECT_TRUE(run_json("run --deployment h200_pd_64" + window)["provenance"]["aggregated_steps"].is_null());
  // Disaggregated, it says where TTFT ends instead (the decode side streams the first token).
  const std::string decode_side = "TTFT ends when the prompt's KV reaches its decode GPU";
  EXPECT_NE(split.find(decode_side), std::string::npos);
  EXPECT_EQ(first.find(decode_side), std::string::npos);
  EXPECT_NE(
      run_json("run --deployment h200_pd_64" + window)["provenance"]["first_token"].get<std::string>().find(
          decode_side),
      std::string::npos);
  EXPECT_TRUE(json["provenance"]["first_token"].is_null());
}

TEST(Cli, RunTraceHasStepsAndRequests) {
  const auto dir = temp_dir("run_trace");
  const std::string trace = (dir / "run.json").string();
  ASSERT_EQ(run("run --warm-up 300 --duration 60 --trace " + trace + " --trace-seconds 30").exit_code, 0);
  const auto events = nlohmann::json::parse(testing::read_text(trace))["traceEvents"];
  int steps = 0, begins = 0, ends = 0;
  for (const auto& e : events) {
    steps += e["ph"] == "X" ? 1 : 0;
    begins += e["ph"] == "b" ? 1 : 0;
    ends += e["ph"] == "e" ? 1 : 0;
    if (e["ph"] == "X") {  // steps of the measured window's first 30 s, at their run times
      EXPECT_GE(e["ts"].get<double>(), 300e6);
      EXPECT_LT(e["ts"].get<double>(), 330e6);
    }
  }
  EXPECT_GT(steps, 100);
  EXPECT_GT(begins, 0);
  EXPECT_EQ(begins, ends);
}

TEST(Cli, RunWritesEveryRequestToCsv) {
  const auto dir = temp_dir("run_requests");
  const std::string csv = (dir / "requests.csv").string();
  const auto j = run_json("run --warm-up 120 --duration 30 --json --requests " + csv);
  const std::string text = testing::read_text(csv);
  EXPECT_EQ(text.rfind("request,session,class,turn,arrival_s,", 0), 0u) << text.substr(0, 80);
  EXPECT_NE(text.find(",\"finished\","), std::string::npos);
  // Every request is written; those that arrived after the warm-up say so, and are what the run counts.
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  int64_t measured = 0, warm_up = 0;
  while (std::getline(lines, line)) {
    const double arrival_s = std::stod(line.substr(nth_comma(line, 4) + 1));
    const bool counted = line.back() == '1';
    EXPECT_EQ(counted, arrival_s >= 120) << line;
    (counted ? measured : warm_up) += 1;
  }
  EXPECT_GT(warm_up, 0);
  EXPECT_EQ(measured, j["requests"]["arrived"].get<int64_t>());
  EXPECT_DOUBLE_EQ(j["warm_up_s"].get<double>(), 120);
}

// Every step of the measured window, one row each, as many as the run counts.
TEST(Cli, RunWritesEveryMeasuredStepToCsv) {
  const auto dir = temp_dir("run_steps");
  const std::string csv = (dir / "steps.csv").string();
  const auto j = run_json("run --deployment h200_agg_8 --warm-up 60 --duration 20 --json --steps " + csv);
  const std::string text = testing::read_text(csv);
  EXPECT_EQ(
      text.rfind("start_s,pool,instance,kind,sequences,decode_context,drafts,prompts,prompt_tokens,", 0), 0u)
      << text.substr(0, 80);
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  int64_t rows = 0;
  while (std::getline(lines, line)) {
    EXPECT_GE(std::stod(line), 60.0) << line;  // the window's steps only
    ++rows;
  }
  EXPECT_EQ(rows, j["steps"]["prefill"].get<int64_t>() + j["steps"]["decode"].get<int64_t>());
}

// The bundled mix of chats and agents: each class's requests and latencies
// apart, in the table, the JSON and each request's row.
TEST(Cli, RunShowsEachClassOfAMixApart) {
  const auto dir = temp_dir("run_mix");
  const std::string csv = (dir / "requests.csv").string();
  const std::string args =
      "run --deployment h200_agg_8 --workload chat_and_agents --warm-up 60 --duration 60";
  const auto j = run_json(args + " --requests " + csv);
  ASSERT_EQ(j["by_class"].size(), 2u);
  EXPECT_EQ(j["by_class"][0]["class"], "chat");
  EXPECT_EQ(j["by_class"][1]["class"], "agent coding");
  EXPECT_EQ(j["by_class"][0]["arrived"].get<int64_t>() + j["by_class"][1]["arrived"].get<int64_t>(),
            j["requests"]["arrived"].get<int64_t>());
  const std::string rows = testing::read_text(csv);
  EXPECT_NE(rows.find(",\"chat\","), std::string::npos);
  EXPECT_NE(rows.find(",\"agent coding\","), std::string::npos);
  // Each row says whether it was within its class's SLA; they add up to the class's count.
  std::map<std::string, int64_t> within;
  std::istringstream lines(rows);
  std::string line;
  std::getline(lines, line);
  EXPECT_NE(line.find(",tpot_ms,max_itl_ms,e2e_ms,within_sla"), std::string::npos) << line;
  const auto fields = [](const std::string& row) {  // commas outside quotes, plus one
    bool quoted = false;
    std::size_t n = 1;
    for (char c : row) {
      if (c == '"') quoted = !quoted;
      n += c == ',' && !quoted ? 1 : 0;
    }
    return n;
  };
  const std::size_t columns = fields(line);
  while (std::getline(lines, line)) {
    ASSERT_EQ(fields(line), columns) << line;
    const std::size_t open = line.find('"');
    const std::string traffic_class = line.substr(open + 1, line.find('"', open + 1) - open - 1);
    within[traffic_class] += line.substr(line.size() - 3) == "1,1" ? 1 : 0;  // within its SLA, measured
  }
  EXPECT_EQ(within["chat"], j["by_class"][0]["within_sla"].get<int64_t>());
  EXPECT_EQ(within["agent coding"], j["by_class"][1]["within_sla"].get<int64_t>());
  // The gaps between streamed chunks: many more than requests, the longest above the median.
  EXPECT_GT(j["itl_ms"]["count"].get<int64_t>(), 10 * j["requests"]["finished"].get<int64_t>());
  EXPECT_GT(j["itl_ms"]["max"].get<double>(), j["itl_ms"]["p50"].get<double>());
  EXPECT_EQ(
      j["by_class"][0]["itl_ms"]["count"].get<int64_t>() + j["by_class"][1]["itl_ms"]["count"].get<int64_t>(),
      j["itl_ms"]["count"].get<int64_t>())
      << "each chunk is of one class";
  const RunResult text = run(args);
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.output.find("By class of traffic"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("ITL (per streamed chunk)"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("output lengths chat: assumed"), std::string::npos) << text.output;
  // The chats are held to a first-token limit of their own, the agents to the deployment's.
  EXPECT_EQ(j["by_class"][0]["sla"]["ttft_ms"].get<double>(), 2000.0);
  EXPECT_TRUE(j["by_class"][0]["sla"]["own"].get<bool>());
  EXPECT_EQ(j["by_class"][1]["sla"]["ttft_ms"].get<double>(), j["goodput"]["ttft_ms"].get<double>());
  EXPECT_FALSE(j["by_class"][1]["sla"]["own"].get<bool>());
  EXPECT_NE(text.output.find("goodput (TTFT <= 10000 ms and TPOT <= 60 ms (chat's own: TTFT <= 2000 ms and "
                             "TPOT <= 60 ms))"),
            std::string::npos)
      << text.output;
  // plan and capacity say how each class fares where they answer.
  const RunResult plan = run("plan --deployment h200_agg_8 --workload chat_and_agents --duration 60");
  const auto plan_json = run_json("plan --deployment h200_agg_8 --workload chat_and_agents --duration 60");
  const auto& shares = plan_json["rows"][0]["class_within_sla"];
  ASSERT_EQ(shares.size(), 2u);
  EXPECT_EQ(shares[1]["class"], "agent coding");
  EXPECT_EQ(plan_json["sla"]["classes"][0]["ttft_ms"].get<double>(), 2000.0);
  EXPECT_NE(plan.output.find("by class on 1 x 8 h200, aggregated, EP 8 (the first seed's run): chat "),
            std::string::npos)
      << plan.output;
  const std::string capacity_args =
      "capacity --deployment h200_agg_8 --workload chat_and_agents --duration 60 --rate-factors 0.25,8 "
      "--precision 1";
  const RunResult capacity = run(capacity_args);
  EXPECT_NE(capacity.output.find("(seed 1's run): chat "), std::string::npos) << capacity.output;
  EXPECT_NE(capacity.output.find(" within its SLA of TTFT <= 2000 ms and TPOT <= 60 ms"), std::string::npos)
      << capacity.output;
  EXPECT_NE(capacity.output.find("; agent coding "), std::string::npos) << capacity.output;
  // The first rate that misses says each class's share there: which class binds.
  EXPECT_NE(capacity.output.find("sessions/s misses it (chat "), std::string::npos) << capacity.output;
  const auto sla = run_json(capacity_args)["variants"][0]["sla"];
  ASSERT_EQ(sla["classes"].size(), 1u);
  EXPECT_EQ(sla["classes"][0]["class"], "chat");
  EXPECT_EQ(sla["classes"][0]["ttft_ms"].get<double>(), 2000.0);
}

// --probe and --gpu list only the references asked for; a value no
// reference has is refused with those there are.
TEST(Cli, ValidateListsTheProbesAndGpusAsked) {
  const auto all = run_json("validate")["references"];
  std::size_t steps = 0, steps_on_h100 = 0;
  for (const auto& r : all) {
    steps += r["probe"] == "step" ? 1 : 0;
    steps_on_h100 += r["probe"] == "step" && r["gpu"] == "h100_sxm" ? 1 : 0;
  }
  ASSERT_GT(steps, steps_on_h100);
  ASSERT_GT(steps_on_h100, 0u);
  const auto asked = run_json("validate --probe step")["references"];
  EXPECT_EQ(asked.size(), steps);
  for (const auto& r : asked) EXPECT_EQ(r["probe"], "step");
  EXPECT_EQ(run_json("validate --probe step --gpu h100_sxm")["references"].size(), steps_on_h100);
  EXPECT_EQ(run_json("validate --probe step,gemm")["references"].size() - steps,
            static_cast<std::size_t>(
                std::count_if(all.begin(), all.end(), [](const auto& r) { return r["probe"] == "gemm"; })));
  for (const auto& [args, error] :
       {std::pair{"validate --probe steps", "field '--probe': no reference has steps (those there: "},
        std::pair{"validate --gpu h999", "field '--gpu': no reference has h999"},
        std::pair{"validate --probe step --gpu h20", "no reference of probe step is on GPU h20"}}) {
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.output.find(error), std::string::npos) << r.output;
  }
}

TEST(Cli, ValidateReportsEveryReference) {
  const auto v = run_json("validate");
  ASSERT_GE(v["references"].size(), 10u);
  int in_sample = 0, misses = 0, explained = 0, fp8_index_keys = 0;
  for (const auto& r : v["references"]) {
    for (const char* key :
         {"predicted", "reference", "error_pct", "within_tolerance", "sets_prior", "model_lacks"}) {
      EXPECT_TRUE(r.contains(key)) << key;
    }
    in_sample += r["sets_prior"].get<std::string>().empty() ? 0 : 1;
    misses += r["within_tolerance"].get<bool>() ? 0 : 1;
    explained += !r["within_tolerance"].get<bool>() && !r["model_lacks"].get<std::string>().empty() ? 1 : 0;
    EXPECT_GT(r["predicted"].get<double>(), 0);
    const double error =
        100 * (r["predicted"].get<double>() - r["reference"].get<double>()) / r["reference"].get<double>();
    EXPECT_NEAR(r["error_pct"].get<double>(), error, 1e-9);
    // What the probe set, enough to rerun it: a serving benchmark's files and formats too.
    ASSERT_TRUE(r["probe_fields"].is_object()) << r["name"];
    if (r["probe"] == "serving") {
      EXPECT_TRUE(r["probe_fields"].contains("deployment")) << r["name"];
      EXPECT_TRUE(r["probe_fields"].contains("workload")) << r["name"];
      fp8_index_keys += r["probe_fields"].value("index_key_cache", "") == "index_key_fp8" ? 1 : 0;
    }
    if (!r["model"].get<std::string>().empty()) {
      EXPECT_EQ(r["probe_fields"]["model"], r["model"]);
    }
  }
  EXPECT_GT(fp8_index_keys, 0) << "the engines' FP8 index keys, as the bundled serving probes say";
  // Each miss says what the model lacks there, or is counted as not explained.
  EXPECT_NE(run("validate")
                .output.find(fmt::format("misses: {} with what the model lacks there, {} not explained",
                                         explained, misses - explained)),
            std::string::npos);
  // Figures the priors were read off are named, and some references are out of sample.
  EXPECT_GT(in_sample, 0);
  EXPECT_LT(in_sample, static_cast<int>(v["references"].size()));
  // The summary by probe covers every reference once, its statistics within its rows'.
  std::size_t counted = 0, out_of_sample = 0;
  for (const auto& p : v["by_probe"]) {
    const auto& all = p["all"];
    counted += all["count"].get<std::size_t>();
    out_of_sample += p["out_of_sample"]["count"].get<std::size_t>();
    EXPECT_LE(all["mape_pct"].get<double>(), all["worst_pct"].get<double>() + 1e-9);
    EXPECT_LE(all["band_90_pct"].get<double>(), all["worst_pct"].get<double>() + 1e-9);
    EXPECT_LE(std::fabs(all["bias_pct"].get<double>()), all["mape_pct"].get<double>() + 1e-9);
    EXPECT_LE(p["within_tolerance"].get<int>(), all["count"].get<int>());
  }
  EXPECT_EQ(counted, v["references"].size());
  EXPECT_EQ(out_of_sample, v["references"].size() - static_cast<std::size_t>(in_sample));
  // The priors' error by kernel class, and whether the committed bands file still matches it.
  const auto& bands = v["published_bands"];
  ASSERT_FALSE(bands["classes"].empty());
  for (const auto& c : bands["classes"]) {
    EXPECT_LE(c["set_priors"].get<int>(), c["figures"].get<int>());
    EXPECT_EQ(c["band_90_pct"].is_null(), c["figures"].get<int>() < bands["min_references"].get<int>());
  }
  EXPECT_NE(bands["file"].get<std::string>().find("matches"), std::string::npos) << bands["file"];
}

struct BadRun {
  const char* args;
  const char* message;
};

// Printed as its command line, so that ctest's list says what each case runs.
void PrintTo(const BadRun& c, std::ostream* os) { *os << c.args; }

class CliBadInput : public ::testing::TestWithParam<BadRun> {};

TEST_P(CliBadInput, ExitsTwoWithOneLine) {
  const RunResult r = run(GetParam().args);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(GetParam().message), std::string::npos) << r.output;
  // One line of error, besides the what-if lines that say which value was replaced.
  std::istringstream lines(r.output);
  int errors = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("v41sim: what if: ")) continue;
    EXPECT_TRUE(line.starts_with("v41sim: error: ")) << line;
    ++errors;
  }
  EXPECT_EQ(errors, 1) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CliBadInput,
    ::testing::Values(
        BadRun{"kv --model no_such_model", "unknown name 'no_such_model'"},
        BadRun{"fit --gpus 7 --ep 7", "does not divide the 384 routed experts"},
        // An explicit value is checked, never taken for "not given".
        BadRun{
            "fit --context 0",
            "field '--context': expected tokens in (0, 1048576] (DeepSeek-V4.1-Flash's max_context), got 0"},
        BadRun{"kv --context 99999999999", "field '--context': expected tokens in (0, 1048576]"},
        BadRun{"fit --reserve-fraction -1",
               "field '--reserve-fraction': expected a fraction in [0, 1), got -1"},
        BadRun{"run --duration nan", "field '--duration': expected seconds in (0, 2305843], got nan"},
        BadRun{"run --duration 1e300", "field '--duration': expected seconds in (0, 2305843]"},
        BadRun{"run --seeds 1001", "field '--seeds': expected 1..1000 seeds, got 1001"},
        BadRun{"run --warm-up -1",
               "field '--warm-up': expected seconds in [0, 2305243] (with --duration 600 "
               "after them), got -1"},
        BadRun{"plan --warm-up nan", "field '--warm-up': expected seconds in [0, 2305243]"},
        BadRun{"plan --ep domian",
               "field '--ep': expected EP sizes (positive integers) or domain, got 'domian'"},
        BadRun{"run --workload agent_trace --warm-up 100000",
               "field '--warm-up': the trace's last row comes at"},
        // capacity sweeps the trace faster: the fastest rate's last row comes before the warm-up ends.
        BadRun{
            "capacity --workload agent_trace --deployment h200_agg_8 --duration 120 --warm-up 50",
            "field '--warm-up': at 0.826 sessions/s (8 x the trace's rate, the largest --rate-factors) the "
            "trace's last row comes at 48.4515 s: a warm-up of 50 s leaves no arrival to measure (expected a "
            "warm-up under 48.4515 s, or smaller --rate-factors)"},
        // A window nothing arrived in has nothing to judge (not a deployment that serves nothing).
        BadRun{"run --workload chat --sessions-per-s 0.0001 --duration 60",
               "field '--sessions-per-s': no request arrived in the 60 s measured window of 'chat at 0.0001 "
               "sessions/s (the file says 20)' (0.0001 sessions/s: about 0.006 sessions in it)"},
        BadRun{"capacity --workload chat --sessions-per-s 0.0001 --duration 60 --rate-factors 1,2",
               "field '--rate-factors': no request arrived in the 60 s measured window"},
        // Named where the rate was set: here the workload's own field.
        BadRun{"run --workload stress_1m --duration 20 --warm-up 0",
               "stress_1m.yaml:4: field 'arrival.sessions_per_s': no request arrived in the 20 s measured "
               "window of "
               "'1M-context stress' (0.02 sessions/s: about 0.4 sessions in it)"},
        BadRun{"run --sessions-per-s 1e9 --warm-up 0 --duration 60",
               "field '--sessions-per-s': 1e+09 sessions/s over 60 s asks for up to 6e+10 sessions; one run "
               "starts at most 1e+06"},
        BadRun{
            "--set hw_profiles/h200.yaml:hbm_bytes_per_s.value=1 run --duration 30",
            "h200.yaml:11: field 'hbm_bytes_per_s.value': 1 is out of the plausible range 1e+11 to 1e+15 for "
            "this figure, in bytes per second (4.8 TB/s is 4.8e12)"},
        BadRun{"--set "
               "validation/calibration/defaults.yaml:classes.grouped_gemm.memory_efficiency.value=1e-12 run "
               "--duration 30",
               "field 'classes.grouped_gemm.memory_efficiency': expected an efficiency, a share of peak, of "
               "0.001 to 1, got 1e-12"},
        BadRun{
            "--set workloads/agent_coding.yaml:session.first_input_tokens.max=1e20 run --duration 60",
            "agent_coding.yaml:10: field 'session.first_input_tokens.max': expected at most 2147483647, got "
            "1e+20"},
        BadRun{"--set validation/published/serving/vllm_b200_4_tp4_v41.yaml:step_overhead_us.value=-5 run "
               "--deployment " V41SIM_SOURCE_DIR
               "/validation/published/serving/vllm_b200_4_tp4_v41.yaml --duration 10",
               "vllm_b200_4_tp4_v41.yaml:37: field 'step_overhead_us.value': expected a non-negative number, "
               "got -5"},
        BadRun{
            "--set validation/published/serving/vllm_b200_4_tp4_v41.yaml:step_overhead_us.value=2e6 run "
            "--deployment " V41SIM_SOURCE_DIR
            "/validation/published/serving/vllm_b200_4_tp4_v41.yaml --duration 10",
            "field 'step_overhead_us.value': 2e+06 is out of the plausible range 0 to 1e+06 for this figure, "
            "in us a step"},
        BadRun{
            "--set \"validation/published/serving/vllm_b200_4_tp4_v41.yaml:step_overhead_us={unknown: x}\" "
            "run --deployment " V41SIM_SOURCE_DIR
            "/validation/published/serving/vllm_b200_4_tp4_v41.yaml --duration 10",
            "field 'step_overhead_us': expected a figure (a step is timed with it; leave the field out to "
            "count none)"},
        BadRun{"--set workloads/deployments/h200_pd_64.yaml:kv_tiers.ssd_usd_per_tb_month.value=-1 run "
               "--duration 10",
               "h200_pd_64.yaml:20: field 'kv_tiers.ssd_usd_per_tb_month.value': expected a positive number, "
               "got -1"},
        BadRun{
            "--set workloads/deployments/h200_pd_64.yaml:prefill.max_tokens_per_step=1048576 run "
            "--duration 10",
            "h200_pd_64.yaml:13: field 'prefill.max_tokens_per_step': a step of 1048576 prompt tokens holds "
            "42.9 GB of residual streams"},
        BadRun{
            "--set workloads/deployments/h200_pd_64.yaml:kv_tiers.host_pool_fraction=0.95 run --duration 10",
            "h200_pd_64.yaml:23: field 'kv_tiers.host_pool_fraction': 0.95 of a node's 2000.0 GB of DRAM "
            "(NVIDIA H200 SXM 141GB) for window state leaves 100.0 GB, less than the 202.8 GB of "
            "DeepSeek-V4.1-Flash's host-resident weights"},
        BadRun{"--set hw_profiles/h200.yaml:host_dram_bytes_per_node.value=100e9 run --duration 10",
               "h200.yaml: field 'host_dram_bytes_per_node': NVIDIA H200 SXM 141GB's 100.0 GB of DRAM a node "
               "cannot hold DeepSeek-V4.1-Flash's 202.8 GB of host-resident weights"},
        BadRun{
            "fit --model llama_3_1_405b",
            "(try --dense-placement sharded over enough GPUs, or a GPU with more HBM: a dense model has no "
            "experts for EP to spread)"},
        BadRun{"--set models/deepseek_v4_1_flash.yaml:attention.candidate_pool.top_blocks=63 kv",
               "deepseek_v4_1_flash.yaml:29: field 'attention.candidate_pool.top_blocks': expected a pool of "
               "at least the indexer's top-k (512 positions), got 63 blocks x 8 = 504"},
        BadRun{"--set models/deepseek_v4_1_flash.yaml:draft.acceptance_length.value=1 kv",
               "deepseek_v4_1_flash.yaml:93: field 'draft.acceptance_length': expected a step's mean tokens "
               "between 1 and 6 (the verifier's token and 5 drafts), exclusive, got 1"},
        BadRun{"--set models/deepseek_v4_1_flash.yaml:draft.acceptance_length_drafts=6 kv",
               "deepseek_v4_1_flash.yaml:94: field 'draft.acceptance_length_drafts': expected 1..5 drafts a "
               "step "
               "(the draft's block_size), got 6"},
        // Only the flags that would shrink what this request holds: V4-Pro's
        // experts are 4-bit already, V3's are FP8.
        BadRun{"fit --model deepseek_v4_pro",
               "(try more GPUs with a larger --ep, --dense-placement sharded or a GPU with more HBM)"},
        BadRun{"fit --model deepseek_v3 --hw h100_sxm --gpus 16 --ep 8 --redundant-experts 32",
               "(try a larger --ep, --dense-placement sharded, --weights-dtype mxfp4, fewer "
               "--redundant-experts or a GPU with more HBM)"},
        BadRun{"fit --model llama_3_1_405b --dense-placement sharded --gpus 2 --ep 2",
               "(try more GPUs, or a GPU with more HBM)"},
        BadRun{"fit --model llama_3_1_405b --weights-dtype mxfp4",
               "field '--weights-dtype': Llama-3.1-405B has no routed experts, whose weights are all "
               "--weights-dtype changes"},
        BadRun{"run --model llama_3_1_405b --duration 10",
               "h200_pd_64.yaml:16: field 'decode.redundant_experts': expected 0 redundant replicas: "
               "Llama-3.1-405B has no routed experts, got 32"},
        BadRun{"--set workloads/deployments/h200_pd_64.yaml:prefill.redundant_experts=0 --set "
               "workloads/deployments/h200_pd_64.yaml:decode.redundant_experts=0 run --model llama_3_1_405b "
               "--duration 10",
               "h200_pd_64.yaml:15: field 'decode.ep': Llama-3.1-405B does not fit on 8 x NVIDIA H200 SXM "
               "141GB"},
        BadRun{"fit --model llama_3_1_405b --dense-placement sharded --redundant-experts 32",
               "field '--redundant-experts': expected 0 redundant replicas: Llama-3.1-405B has no routed "
               "experts"},
        BadRun{"run --duration 10 --requests /nonexistent/dir/requests.csv",
               "/nonexistent/dir/requests.csv: field '--requests': cannot write the requests file"},
        BadRun{"run --duration 10 --steps /nonexistent/dir/steps.csv",
               "/nonexistent/dir/steps.csv: field '--steps': cannot write the steps file"},
        BadRun{"--set workloads/agent_coding.yaml:session.turns.max=1e30 run --duration 60",
               "field 'session.turns.max': expected at most 1000000"},
        BadRun{"--set workloads/agent_resumed.yaml:session.resumed.fraction=1.5 run --workload agent_resumed "
               "--duration 60",
               "agent_resumed.yaml:18: field 'session.resumed.fraction': expected a share of the sessions, 0 "
               "to 1, "
               "got 1.5"},
        BadRun{"--set workloads/deployments/h200_pd_64.yaml:kv_tiers.ssd_capacity_tb=lots run --duration 30",
               "h200_pd_64.yaml:21: field 'kv_tiers.ssd_capacity_tb': expected unbounded or a sourced size "
               "in TB"},
        // EP and redundant experts meet the model only when a run loads both: the file's line is named,
        // the replicas' where the experts alone deal evenly, the EP size's where they do not.
        BadRun{
            "--set workloads/deployments/h200_pd_64.yaml:decode.redundant_experts=4 run --duration 10",
            "h200_pd_64.yaml:16: field 'decode.redundant_experts': EP size 8 does not divide the 384 routed "
            "experts of DeepSeek-V4.1-Flash + 4 redundant replicas = 388 slots"},
        BadRun{
            "--set workloads/deployments/h200_agg_8.yaml:decode.ep=7 --set "
            "workloads/deployments/h200_agg_8.yaml:decode.gpus_per_instance=7 --set "
            "workloads/deployments/h200_agg_8.yaml:prefill.ep=7 --set "
            "workloads/deployments/h200_agg_8.yaml:prefill.gpus_per_instance=7 run --deployment h200_agg_8",
            "h200_agg_8.yaml:18: field 'decode.ep': EP size 7 does not divide the 384 routed experts"},
        BadRun{"context --redundant-experts 1",
               "field '--redundant-experts': EP size 8 does not divide the 384 routed experts"},
        BadRun{"context --ep 1,2", "field '--ep': DeepSeek-V4.1-Flash does not fit on 1 x NVIDIA H200"},
        BadRun{"--set workloads/deployments/h200_pd_64.yaml:decode.redundant_experts=400 run --duration 10",
               "h200_pd_64.yaml:16: field 'decode.redundant_experts': expected 0..384 redundant replicas"},
        // A deployment's GPU names and memory meet the catalog and the model only when a run loads
        // them: the file's line is named, not a flag the user did not give.
        BadRun{
            "--set workloads/deployments/h200_agg_8.yaml:gpu=abc run --deployment h200_agg_8 --duration 10",
            "h200_agg_8.yaml:4: field 'gpu': unknown name 'abc' (expected a path or one of: b200,"},
        // plan refuses it too, rather than listing a variant that cannot run; context and frontier name it.
        BadRun{"--set workloads/deployments/h20_pd_16.yaml:gpu=abc plan --deployment h20_pd_16 --duration 10",
               "h20_pd_16.yaml:4: field 'gpu': unknown name 'abc'"},
        BadRun{"--set workloads/deployments/h20_pd_16.yaml:gpu=abc context --deployment h20_pd_16",
               "h20_pd_16.yaml:4: field 'gpu': unknown name 'abc'"},
        BadRun{"--set workloads/deployments/h20_pd_16.yaml:gpu=abc frontier --deployment h20_pd_16",
               "h20_pd_16.yaml:4: field 'gpu': unknown name 'abc'"},
        BadRun{"--set workloads/deployments/h200_prefill_h20_decode.yaml:decode.gpu=h21 run --deployment "
               "h200_prefill_h20_decode --duration 10",
               "h200_prefill_h20_decode.yaml:16: field 'decode.gpu': unknown name 'h21'"},
        // The weights fit beside the default 10% reserve: the file's larger reserve is what overflows, so
        // its line is named (where the weights alone overflow, as Llama's above, the pool's EP is).
        BadRun{
            "--set workloads/deployments/h20_pd_16.yaml:reserve_fraction=0.5 run --deployment h20_pd_16 "
            "--duration 10",
            "h20_pd_16.yaml:27: field 'reserve_fraction': DeepSeek-V4.1-Flash does not fit on 8 x NVIDIA H20 "
            "96GB at EP 8 (replicated dense weights): 49.8 GB of weights + 48.0 GB reserve per GPU exceed "
            "96.0 GB of HBM (try a larger ep"},
        // The reserve that would leave room for KV: (96.0 - 49.8) / 96.0 of the H20's HBM.
        BadRun{"--set workloads/deployments/h20_pd_16.yaml:reserve_fraction=0.5 run --deployment h20_pd_16 "
               "--duration 10",
               "a GPU with more HBM or a reserve_fraction below 0.4808)"},
        // claims sizes an EP group to the rack's NVLink domain: one past what V4.1's
        // 384 experts deal over (768 ranks, a replica each) is named at its line.
        BadRun{"--set hw_profiles/gb200_nvl72.yaml:nvlink_domain_gpus=769 claims",
               "gb200_nvl72.yaml:20: field 'nvlink_domain_gpus': expected at most 768 GPUs in one NVLink "
               "domain"},
        // A what-if's list index is digits: -1 once read as the largest index there is.
        BadRun{"--set workloads/chat_and_agents.yaml:mix[-1].share=0.5 kv",
               "field 'mix[-1].share': expected a list index (0, 1, ...) in [ ], got '-1'"},
        BadRun{"--set workloads/chat_and_agents.yaml:mix[1x].share=0.5 kv", "got '1x'"},
        BadRun{"step --context 4096 --routing-skew -1",
               "field '--routing-skew': expected a finite Zipf exponent"},
        BadRun{"step --context 4096 --redundant-experts -8", "field '--redundant-experts': expected 0..384"},
        BadRun{"plan --ep 72 --duration 10",
               "field '--ep': EP size 72 does not divide the 384 routed experts of DeepSeek-V4.1-Flash, nor "
               "with the bases' redundant replicas (32) added: 48 replicas would make 432 slots "
               "(--redundant-experts 48)"},
        BadRun{"plan --ep 7 --duration 10", "added: 1 replica would make 385 slots (--redundant-experts 1)"},
        BadRun{"plan --ep 8,72 --redundant-experts 40,32 --duration 10",
               "field '--ep': EP size 72 does not divide the 384 routed experts of DeepSeek-V4.1-Flash, nor "
               "with the redundant replicas (32, 40) added: 48 replicas would make 432 slots"},
        BadRun{"plan --redundant-experts 0,-32 --duration 10",
               "field '--redundant-experts': expected 0 or more replicas, got -32"},
        BadRun{"plan --redundant-experts 99999999999 --duration 10",
               "field '--redundant-experts': expected 0..384 redundant replicas"},
        BadRun{"frontier --ep 7 --redundant-experts 9223372036854775800",
               "field '--redundant-experts': expected 0..384 redundant replicas"},
        // Every GPU is a rank of its own: a pool past any cluster's size is refused, not simulated.
        BadRun{"--set workloads/deployments/h200_pd_64.yaml:decode.instances=1000000000 run --duration 30",
               "h200_pd_64.yaml:15: field 'decode.instances': expected at most 65536 GPUs in a pool, got "
               "1000000000 instances of 8"},
        BadRun{
            "plan --deployment h200_agg_8 --decode-instances 100000 --duration 30",
            "field '--decode-instances': expected at most 65536 GPUs in a pool, got 100000 instances of 8"},
        // A figure typed in another unit than its field's.
        BadRun{
            "--set workloads/deployments/h200_pd_64.yaml:kv_tiers.ssd_read_bytes_per_s=40 run --duration 30",
            "h200_pd_64.yaml:19: field 'kv_tiers.ssd_read_bytes_per_s.value': 40 is out of the plausible "
            "range "
            "1e+08 to 1e+13 for this figure, in bytes per second (40 GB/s is 40e9)"},
        BadRun{"--set "
               "workloads/deployments/"
               "h200_pd_64.yaml:kv_tiers.ssd_capacity_tb='{\"value\":20e12,\"assumed\":\"x\"}' "
               "run --duration 30",
               "field 'kv_tiers.ssd_capacity_tb.value': 2e+13 is out of the plausible range 0.001 to 1e+06"},
        BadRun{"plan --ssd-capacity-tb unbounded,0",
               "field '--ssd-capacity-tb': expected unbounded or a size in TB "
               "above 0, got '0'"},
        BadRun{"--set workloads/agent_coding.yaml:session.resumed.fraction=0.5 run --duration 60",
               "agent_coding.yaml:14: field 'session.resumed': expected gap_s"},
        // A block-hashed trace read at another block size than its own.
        BadRun{
            "--set workloads/mooncake_sample.yaml:arrival.block_tokens=256 run --workload mooncake_sample "
            "--duration 10",
            "traces/mooncake_sample.jsonl:1: field 'hash_ids': expected 13 block ids (input_length 3095 in "
            "blocks of 256 tokens), got 7"},
        BadRun{"--set workloads/agent_trace.yaml:arrival.block_tokens=512 run --workload agent_trace "
               "--duration 10",
               "agent_trace.yaml:4: field 'arrival.block_tokens': only a block-hashed trace (.jsonl) has "
               "blocks"},
        // A tier's time past the simulator's clock is the file's error, not an internal one.
        BadRun{"--set workloads/deployments/h200_pd_64.yaml:kv_tiers.retention_s=1e308 run --duration 10",
               "h200_pd_64.yaml:22: field 'kv_tiers.retention_s': expected at most 2305843 s"},
        BadRun{"plan --kv-retention-h 1e30",
               "field '--kv-retention-h': expected hours in [0, 640.5], got 1e+30"},
        BadRun{"--set workloads/deployments/h200_pd_64.yaml:kv_tiers.host_ttl_s=-1 run --duration 10",
               "h200_pd_64.yaml:24: field 'kv_tiers.host_ttl_s': expected a non-negative number, got -1"},
        BadRun{"run --duration 10 --trace /tmp/v41sim_t.json --trace-seconds -1",
               "field '--trace-seconds': expected a positive number of seconds, got -1"},
        BadRun{"plan --ep 7", "field '--ep': EP size 7 does not divide the 384 routed experts"},
        BadRun{"capacity --ep 0", "field '--ep': expected positive integers, got 0"},
        BadRun{"step --context 4096 --batch 9223372036854775807",
               "field '--batch': expected 1..16777216 sequences, got 9223372036854775807"},
        BadRun{"fit --gpus 12 --ep 8", "does not divide the 12 GPUs"},
        BadRun{"fit --hw h100_sxm --gpus 2 --ep 2", "does not fit"},
        BadRun{"fit --hw no_such_gpu", "unknown name 'no_such_gpu'"},
        BadRun{"fit --weights-dtype fp6", "--weights-dtype"},
        BadRun{"fit --reserve-fraction 1.5", "--reserve-fraction"}, BadRun{"kv --context -5", "--context"},
        // Past 64 bits or with a leading 0 (octal to CLI11), as typed rather than as converted.
        BadRun{"kv --context 18446744073709551615",
               "field '--context': expected a whole number of at most 9223372036854775807 in magnitude, got "
               "18446744073709551615"},
        BadRun{"kv --context 010",
               "field '--context': expected a whole number without leading zeros, got 010"},
        BadRun{"context --contexts 8192,0131072",
               "field '--contexts': expected a whole number without leading zeros, got 0131072"},
        BadRun{"run --seed 99999999999999999999 --duration 10",
               "field '--seed': expected a whole number of at most 18446744073709551615 in magnitude, got "
               "99999999999999999999"},
        BadRun{"kv --no-such-flag", "no-such-flag"}, BadRun{"fit --ep eight", "--ep"},
        BadRun{"step --context 4096 --phase warmup", "--phase"},
        BadRun{"step --phase decode", "--context is required"},
        // A value CLI11 cannot read is one line too, with our prefix.
        BadRun{"run --seed abc",
               "v41sim: error: input: Could not convert: --seed = abc (--help after the command"},
        BadRun{"step --context 4096 --no-such-flag", "v41sim: error: input: The following argument"},
        BadRun{"step --context 4096 --batch 0", "--batch"},
        BadRun{"step --context 4096 --mhc two-pass", "--mhc"},
        BadRun{"step --model deepseek_v3 --context 4096 --mhc fused",
               "field '--mhc': DeepSeek-V3 has no mHC to run in another form"},
        BadRun{"step --context 4096 --trace /nonexistent/dir/t.json", "cannot write"},
        BadRun{"step --context 4096 --phase prefill --prompt-chunks 2 --chunk-tokens 512",
               "give --phase decode"},
        BadRun{
            "step --context 4096 --prompt-chunks 2 --chunk-tokens 512 --chunk-context 256",
            "field '--chunk-tokens': expected at most --chunk-context (256) new tokens per chunk, got 512"},
        BadRun{"step --context 4096 --prompt-chunks 2 --chunk-tokens 0",
               "field '--chunk-tokens': expected a positive number of new tokens per chunk, got 0"},
        BadRun{
            "step --context 4096 --prompt-chunks 2 --chunk-tokens 512 --chunks-continuing 3",
            "field '--chunks-continuing': expected 0..2 prompt chunks that do not end their prompt, got 3"},
        BadRun{"step --phase prefill --context 4096 --chunk-tokens 8192",
               "field '--chunk-tokens': expected 1..--context (4096) new tokens per chunk, got 8192"},
        BadRun{"step --phase prefill --context 4096 --chunk-tokens 512 --chunk-context 8192",
               "field '--chunk-context': in a prefill step each chunk ends at --context"},
        BadRun{"step --phase prefill --context 4096 --batch 2 --chunk-tokens 512 --chunks-continuing 3",
               "field '--chunks-continuing': expected 0..2 prompts whose chunk does not end them, got 3"},
        BadRun{"step --context 4096 --chunk-tokens 512",
               "field '--prompt-chunks': expected a positive number"},
        BadRun{"run --workload no_such_workload", "unknown name 'no_such_workload'"},
        BadRun{"run --duration 0", "--duration"},
        BadRun{"capacity --precision 0", "field '--precision': expected a ratio above 0"},
        // Not a number, or no limit at all, is not a latency or a ratio (NaN once read as "not given").
        BadRun{"plan --deployment h200_agg_8 --ttft-ms nan",
               "field '--ttft-ms': expected a positive latency, got nan"},
        BadRun{"capacity --tpot-ms inf", "field '--tpot-ms': expected a positive latency, got inf"},
        BadRun{"context --deployment h200_agg_8 --tpot-ms nan",
               "field '--tpot-ms': expected a positive latency, got nan"},
        BadRun{"capacity --precision inf", "field '--precision': expected a ratio above 0, got inf"},
        BadRun{"run --duration 10 --trace-seconds nan",
               "field '--trace-seconds': expected a positive number of seconds"},
        BadRun{"capacity --rate-factors 1,0",
               "field '--rate-factors': expected finite factors above 0, got 0"},
        BadRun{"run --sessions-per-s -1",
               "field '--sessions-per-s': expected a finite positive arrival rate"},
        BadRun{"run --workload mooncake_sample --sessions-per-s inf",
               "field '--sessions-per-s': expected a finite positive arrival rate, got inf"},
        // A factor that makes the rate too high for one run is named, not the file's rate it multiplied.
        BadRun{"capacity --rate-factors 1e12 --duration 10",
               "field '--rate-factors': 5e+11 sessions/s over 1210 s asks for up to"},
        BadRun{"capacity --rate-factors 1,inf",
               "field '--rate-factors': expected finite factors above 0, got inf"},
        BadRun{"run --workload agent_trace --sessions-per-s 0.00001",
               "field '--sessions-per-s': 1e-05 sessions/s stretches the trace's 387.612 s past the "
               "simulator's clock"},
        // A closed loop's load is its concurrency, an open loop's its rate.
        BadRun{"run --workload bench_random_8k_1k --sessions-per-s 2",
               "field '--sessions-per-s': 'random 8192 in / 1024 out, closed loop' is a closed loop of 32 "
               "sessions at a time: it has no arrival rate to set"},
        BadRun{"run --workload agent_coding --concurrency 4",
               "field '--concurrency': 'agent coding' is not a closed loop"},
        BadRun{"run --workload bench_random_8k_1k --concurrency -3",
               "field '--concurrency': expected 1 to 100000 sessions at a time, got -3"},
        // Zero is a value given, not "not given": refused like any other out of range.
        BadRun{"run --sessions-per-s 0",
               "field '--sessions-per-s': expected a finite positive arrival rate, got 0"},
        BadRun{"run --workload bench_random_8k_1k --concurrency 0",
               "field '--concurrency': expected 1 to 100000 sessions at a time, got 0"},
        BadRun{"plan --deployment h200_agg_8 --ttft-ms 0",
               "field '--ttft-ms': expected a positive latency, got 0"},
        BadRun{"context --deployment h200_agg_8 --tpot-ms 0",
               "field '--tpot-ms': expected a positive latency, got 0"},
        BadRun{"context --deployment h200_agg_8 --max-batch-per-gpu -1",
               "field '--max-batch-per-gpu': expected a positive batch (or 0: memory alone), got -1"},
        BadRun{"plan --ep 8,0", "field '--ep': expected positive integers, got 0"},
        BadRun{"plan --hw h200,no_such_gpu", "unknown name 'no_such_gpu'"},
        BadRun{"plan --deployment h200_agg_8 --prefill-instances 2", "the deployment is aggregated"},
        BadRun{"plan --min-within-sla 0", "--min-within-sla"}, BadRun{"plan --tpot-ms -5", "--tpot-ms"},
        BadRun{"plan --itl-ms -5", "field '--itl-ms': expected a positive latency, got -5"},
        BadRun{"run --duration 10 --itl-ms 0", "field '--itl-ms': expected a positive latency, got 0"},
        BadRun{"run --duration 10 --ttft-ms inf", "field '--ttft-ms': expected a positive latency, got inf"},
        BadRun{"capacity --itl-ms nan", "field '--itl-ms': expected a positive latency, got nan"},
        BadRun{"--set workloads/deployments/h200_agg_8.yaml:sla.itl_ms=0 run --deployment h200_agg_8 "
               "--duration 10",
               "h200_agg_8.yaml:29: field 'sla.itl_ms': expected a positive number, got 0"},
        BadRun{"plan --confirm-seconds -1", "--confirm-seconds"},
        BadRun{"capacity --confirm-seconds -1", "--confirm-seconds"},
        // An empty item in a list is a slip, not a shorter list (CLI11 alone would drop it and run 8,16).
        BadRun{
            "plan --deployment h200_agg_8,,h200_pd_64",
            "field '--deployment': expected items separated by single commas, got 'h200_agg_8,,h200_pd_64'"},
        BadRun{"plan --ep 8,,16", "field '--ep': expected items separated by single commas, got '8,,16'"},
        BadRun{"capacity --rate-factors=1,2,",
               "field '--rate-factors': expected items separated by single commas"},
        BadRun{"plan --hw ,h200", "field '--hw': expected items separated by single commas, got ',h200'"},
        // An empty value (a script's unset variable) is a slip too: CLI11 alone kept the default, or read 0.
        BadRun{"context --tpot-ms ''", "field '--tpot-ms': expected a value, got an empty one"},
        // CLI11 alone reads hexadecimal (0x3c as 60): the output would quote a number not written.
        BadRun{"context --tpot-ms 0x3c", "field '--tpot-ms': expected a decimal number, got 0x3c"},
        BadRun{"step --context 0x10", "field '--context': expected a decimal number, got 0x10"},
        BadRun{"fit --reserve-fraction -0x0.1p0", "field '--reserve-fraction': expected a decimal number"},
        BadRun{"context --tpot-ms=", "field '--tpot-ms': expected a value, got an empty one"},
        BadRun{"fit --gpus ''", "field '--gpus': expected a value, got an empty one"},
        BadRun{"--set= kv", "field '--set': expected a value, got an empty one"},
        BadRun{"plan --hw '' --duration 10", "field '--hw': expected a value, got an empty one"},
        BadRun{"run --seed -1", "--seed: expected a whole number, 0 or more, got -1"},
        BadRun{"step --context 8192 --drafts 9",
               "field '--drafts': expected 0 to 5 drafts (the draft's block size), got 9"},
        BadRun{"step --context 8192 --no-draft --drafts 1",
               "field '--drafts': expected 0 drafts (--no-draft), got 1"},
        BadRun{"step --model deepseek_v4_flash --context 8192 --drafts 1",
               "field '--drafts': expected 0 drafts (the model has no draft), got 1"},
        BadRun{"step --phase prefill --context 8192 --drafts 1",
               "field '--drafts': a decode step verifies drafts, not a prefill step"},
        // A value twice would run the same variant, rate or point twice.
        BadRun{"plan --decode-instances 1,2,1",
               "field '--decode-instances': expected each item once, got '1' twice in '1,2,1'"},
        BadRun{"capacity --rate-factors=1,1",
               "field '--rate-factors': expected each item once, got '1' twice"},
        BadRun{"plan --deployment h200_agg_8,h200_agg_8", "field '--deployment': expected each item once"},
        BadRun{"context --contexts 8192,8192", "field '--contexts': expected each item once"},
        BadRun{"plan --deployment h200_agg_8,no_such_deployment", "unknown name 'no_such_deployment'"},
        BadRun{"plan --decode-instances two", "--decode-instances"},
        BadRun{"plan --deployment h200_agg_8 --aggregated-steps mixed,interleaved",
               "field '--aggregated-steps': expected prefill_first or mixed, got 'interleaved'"},
        BadRun{"plan --deployment h200_pd_64 --aggregated-steps mixed", "the deployment is disaggregated"},
        BadRun{"plan --kv-retention-h 72,-1",
               "field '--kv-retention-h': expected hours in [0, 640.5], got -1"},
        BadRun{"plan --swa-pool-fraction 1.5", "field '--swa-pool-fraction': expected a share in [0, 1)"},
        BadRun{"context --contexts 8192,1000",
               "field '--contexts/--output-tokens': a session of 1000 tokens cannot end 2000 output tokens "
               "after "
               "its prompt: expected contexts longer than the output, got 1000"},
        BadRun{
            "context --output-tokens 1048576",
            "field '--contexts/--output-tokens': a session of 8192 tokens cannot end 1048576 output tokens"},
        BadRun{"context --output-tokens 0", "field '--output-tokens'"},
        BadRun{"context --tpot-ms -3", "field '--tpot-ms'"}, BadRun{"context --contexts 8k", "--contexts"},
        BadRun{"context --hw h200,no_such_gpu", "unknown name 'no_such_gpu'"},
        BadRun{"frontier --context 0", "field '--context'"}, BadRun{"frontier --ep 8,7", "does not divide"},
        BadRun{"frontier --svg /nonexistent/dir/f.svg", "cannot write the chart file"},
        // Made before the sections run, not after a minute of them.
        BadRun{"report --out /proc/v41sim_report",
               "/proc/v41sim_report: field '--out': cannot make the report's folder"},
        BadRun{"capacity --duration 10 --svg /nonexistent/dir/f.svg", "cannot write the chart file"},
        BadRun{"calibrate --measurements /nonexistent/h200",
               "no such folder: the measuring harness writes one per GPU"},
        BadRun{"targets --measurements /dev/null", "field '--measurements': not a directory"},
        // An H100's measurements in a folder named after the H200's profile.
        BadRun{
            "calibrate --measurements " V41SIM_SOURCE_DIR "/tests/data/measured_elsewhere/h200",
            "kernels.csv:1: field 'gpu': measured on 'NVIDIA H100 80GB HBM3' (model H100), but these files "
            "would calibrate the profile h200"},
        BadRun{"run --deployment " V41SIM_SOURCE_DIR "/tests/data/aggregated_mismatch.yaml", "must match"},
        BadRun{"run --deployment " V41SIM_SOURCE_DIR "/tests/data/aggregated_bad_steps.yaml",
               "aggregated_bad_steps.yaml:6: field 'aggregated_steps': expected prefill_first or mixed"},
        BadRun{"run --deployment " V41SIM_SOURCE_DIR "/tests/data/bad_routing.yaml",
               "bad_routing.yaml:7: field 'routing': expected least_load, least_requests or round_robin"},
        BadRun{"plan --deployment h200_agg_8 --routing least_load,fastest",
               "field '--routing': expected least_load, least_requests or round_robin, got 'fastest'"},
        BadRun{"plan --deployment h200_agg_8 --max-tokens-per-step 4096,0",
               "field '--max-tokens-per-step': expected positive integers, got 0"},
        BadRun{"capacity --deployment h200_agg_8 --max-batch-per-gpu 32,lots", "--max-batch-per-gpu"},
        BadRun{"run --deployment " V41SIM_SOURCE_DIR "/tests/data/disaggregated_with_steps.yaml",
               "disaggregated_with_steps.yaml:6: field 'aggregated_steps': only an aggregated deployment"},
        BadRun{"run --deployment " V41SIM_SOURCE_DIR "/tests/data/cp_one_gpu.yaml",
               "cp_one_gpu.yaml:6: field 'prefill.context_parallel_min_tokens': context parallelism "
               "needs an instance of at least 2 GPUs"},
        BadRun{"run --deployment " V41SIM_SOURCE_DIR "/tests/data/cp_in_decode.yaml",
               "context_parallel_min_tokens"},
        // A prefill delay holds prompts only where an aggregated deployment runs them first.
        BadRun{
            "--set workloads/deployments/h200_pd_64.yaml:prefill_delay_steps=30 run --deployment h200_pd_64",
            "h200_pd_64.yaml:28: field 'prefill_delay_steps': expected 0: prompts are held"},
        BadRun{"--set workloads/deployments/h200_agg_8.yaml:aggregated_steps=mixed --set "
               "workloads/deployments/h200_agg_8.yaml:prefill_delay_steps=4 run --deployment h200_agg_8",
               "field 'prefill_delay_steps': expected 0: prompts are held"},
        BadRun{
            "--set workloads/deployments/h200_agg_8.yaml:prefill_delay_steps=-2 run --deployment h200_agg_8",
            "field 'prefill_delay_steps': expected a non-negative integer, got -2"},
        BadRun{"plan --deployment h200_pd_64 --prefill-delay-steps 0,30",
               "field '--prefill-delay-steps': the deployment is disaggregated"},
        BadRun{"step --context 16384 --prompt-ranks 2",
               "field '--prompt-ranks': only a prefill step's ranks"},
        BadRun{"step --phase prefill --context 16384 --prompt-ranks 9",
               "field '--prompt-ranks': expected 1 to --ep (8) ranks, got 9"},
        BadRun{"step --phase prefill --context 16384 --group-batch 2",
               "field '--group-batch': only a plain decode step's batch may differ"},
        BadRun{"step --batch 8 --context 16384 --group-batch 9",
               "field '--group-batch': expected 1 to --batch (8) sequences, got 9"},
        BadRun{"step --batch 8 --context 16384 --group-batch 0",
               "field '--group-batch': expected 1 to --batch (8) sequences, got 0"},
        BadRun{"step --phase prefill --context 16384 --prompt-ranks 0",
               "field '--prompt-ranks': expected 1 to --ep (8) ranks, got 0"},
        BadRun{"step --phase prefill --context 16384 --beside-prompts",
               "field '--beside-prompts': only a plain decode step runs beside prompts"},
        BadRun{"step --context 16384 --prompt-chunks 1 --chunk-tokens 512 --beside-prompts",
               "field '--beside-prompts': only a plain decode step runs beside prompts"},
        BadRun{"step --batch 8 --context 16384 --ep 1 --group-batch 2",
               "field '--group-batch': with --ep 1 this rank is its group: its mean is --batch (8), got 2"},
        BadRun{"step --batch 8 --context 16384 --prompt-chunks 1 --chunk-tokens 512 --group-batch 2",
               "field '--group-batch': only a plain decode step's batch may differ"},
        BadRun{"step-log --log /nonexistent/steps.csv", "/nonexistent/steps.csv: cannot open file"},
        BadRun{"step-log --log /tmp", "/tmp: no header line"}, BadRun{"step-log", "--log is required"}),
    [](const ::testing::TestParamInfo<BadRun>& param) { return "case_" + std::to_string(param.index); });

TEST(Cli, BadModelFileNamesFileAndLine) {
  const auto dir = temp_dir("bad_model");
  std::string text = testing::read_text(testing::model_path("deepseek_v4_1_flash"));
  text.replace(text.find("hidden_size: 5120"), 17, "hidden_size: 0");
  const auto path = dir / "bad.yaml";
  std::ofstream(path) << text;
  const RunResult r = run("kv --model " + path.string());
  EXPECT_EQ(r.exit_code, 2);
  const auto line =
      1 + std::count(text.begin(), text.begin() + static_cast<long>(text.find("hidden_size: 0")), '\n');
  EXPECT_NE(r.output.find(path.string() + ":" + std::to_string(line) +
                          ": field 'hidden_size': expected a positive integer"),
            std::string::npos)
      << r.output;
}

// A draft without its acceptance rate is refused where it is described: a
// deployment asking for speculative decoding would otherwise decode one token
// a step without saying so.
TEST(Cli, ADraftWithoutItsAcceptanceIsRefused) {
  const auto dir = temp_dir("draft_acceptance");
  std::string text = testing::read_text(testing::model_path("deepseek_v4_1_flash"));
  // Neither its per-position acceptance nor a measured mean yield: both lines of the latter go.
  for (const char* field : {"  acceptance_length: {value:", "  acceptance_length_drafts:"}) {
    const std::size_t at = text.find(field);
    ASSERT_NE(at, std::string::npos) << field;
    text.erase(at, text.find('\n', at) + 1 - at);
  }
  const auto path = dir / "no_acceptance.yaml";
  std::ofstream(path) << text;
  // The block map begins at its first field, the line after "draft:".
  const auto draft_line =
      2 + std::count(text.begin(), text.begin() + static_cast<long>(text.find("\ndraft:") + 1), '\n');
  for (const std::string command : {"kv", "run --deployment h200_agg_8 --duration 10"}) {
    const RunResult r = run(command + " --model " + path.string());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(path.string() + ":" + std::to_string(draft_line) +
                            ": field 'draft.acceptance': required field is missing"),
              std::string::npos)
        << r.output;
  }
}

// A --set on a file the command never reads changes nothing, and is said so
// on stderr after the answer; one the command reads is not.
TEST(Cli, ASetOnAFileTheCommandDoesNotReadIsSaid) {
  const std::string note =
      "v41sim: what if: this command did not read hw_profiles/h200.yaml: its --set changed nothing";
  const RunResult kv = run("--set hw_profiles/h200.yaml:price_usd_per_gpu_hour=2 kv");
  EXPECT_EQ(kv.exit_code, 0) << kv.output;
  EXPECT_NE(kv.output.find(note), std::string::npos) << kv.output;
  const RunResult fit = run("--set hw_profiles/h200.yaml:price_usd_per_gpu_hour=2 fit");
  EXPECT_EQ(fit.exit_code, 0) << fit.output;
  EXPECT_EQ(fit.output.find("did not read"), std::string::npos) << fit.output;
  const RunResult other = run("--set hw_profiles/h20.yaml:power_watts=500 run --duration 10 --warm-up 10");
  EXPECT_NE(other.output.find("this command did not read hw_profiles/h20.yaml"), std::string::npos)
      << other.output;
}

// A data folder that is not one (a --data-dir or V41SIM_DATA_DIR off by a
// level) is said as such, not as an empty list of names.
TEST(Cli, ADataFolderWithoutModelsIsNamed) {
  const RunResult r = run("kv", "/nonexistent");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("field '--model': unknown name 'deepseek_v4_1_flash' (expected a path: "
                          "/nonexistent/models holds no .yaml files; --data-dir names the folder that holds "
                          "models/, hw_profiles/ and workloads/)"),
            std::string::npos)
      << r.output;
}

// Each command names the files it read relative to the data folder: the same
// data seen from another folder gives the same bytes, tables and JSON alike.
TEST(Cli, CommandsReadTheSameFromAnyDataFolder) {
  const auto elsewhere = testing::scratch_data_dir("v41sim_commands_elsewhere",
                                                   {"models", "hw_profiles", "workloads", "validation"});
  for (const char* command :
       {"kv", "params --json", "step --context 8192", "step --context 8192 --json", "context --contexts 8192",
        "context --contexts 8192 --json", "run --duration 10 --warm-up 10", "validate",
        "plan --duration 10 --warm-up 10 --confirm-seconds 0 --decode-instances 1"}) {
    const RunResult here = run(command, V41SIM_SOURCE_DIR, "/dev/null");
    ASSERT_EQ(here.exit_code, 0) << command;
    EXPECT_EQ(here.output.find(V41SIM_SOURCE_DIR), std::string::npos) << command;
    EXPECT_EQ(here.output, run(command, elsewhere.string(), "/dev/null").output) << command;
  }
}

TEST(Cli, ReportIsByteIdenticalAcrossRunsAndDataFolders) {
  const auto a = temp_dir("report_a");
  const auto b = temp_dir("report_b");
  ASSERT_EQ(run("report --out " + a.string()).exit_code, 0);
  // The same files seen from another folder: the report names them relative to it.
  const auto elsewhere = testing::scratch_data_dir("v41sim_report_elsewhere",
                                                   {"models", "hw_profiles", "workloads", "validation"});
  ASSERT_EQ(run("report --out " + b.string(), elsewhere.string()).exit_code, 0);
  for (const char* file :
       {"report.md", "report.json", "report.html", "validation_us.svg", "validation_tflops.svg",
        "context_cost.svg", "context_capacity.svg", "decode_frontier.svg", "capacity_latency.svg"}) {
    const std::string first = testing::read_text((a / file).string());
    EXPECT_FALSE(first.empty());
    EXPECT_EQ(first, testing::read_text((b / file).string())) << file;
  }
  const std::string md = testing::read_text((a / "report.md").string());
  for (const char* gpu : {"H20", "H100", "H200", "B200", "GB200"})
    EXPECT_NE(md.find(gpu), std::string::npos) << gpu;
  EXPECT_NE(md.find("holds only if"), std::string::npos);
  // The cheapest-deployment section ranks one variant per GPU profile, EP size and instance count.
  EXPECT_NE(md.find("## The cheapest deployment within the SLA"), std::string::npos);
  // The HTML page carries every chart the Markdown links, drawn inline.
  const std::string html = testing::read_text((a / "report.html").string());
  const auto occurrences = [](const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(occurrences(html, "<svg "), occurrences(md, ".svg)"));
  EXPECT_GE(occurrences(html, "<svg "), 6u);
  EXPECT_EQ(occurrences(html, "<img "), 0u);
  EXPECT_EQ(occurrences(html, "<table>"), occurrences(md, "\n| --- |"));
  const auto json = nlohmann::json::parse(testing::read_text((a / "report.json").string()));
  EXPECT_EQ(json["plan"]["rows"].size(), 24u);  // 6 GPU profiles x EP 8 or 16 x 1 or 2 instances
  // The memory fit again with the FP8 index keys Hopper engines store: fewer sessions on every GPU.
  EXPECT_NE(md.find("| sessions on all GPUs | sessions, index keys as index_key_fp8 |"), std::string::npos);
  ASSERT_FALSE(json["fits"].empty());
  for (const auto& fit : json["fits"]) {
    ASSERT_TRUE(fit["sessions_with_index_keys"].contains("index_key_fp8")) << fit.dump();
    EXPECT_LT(fit["sessions_with_index_keys"]["index_key_fp8"].get<int64_t>(),
              fit["sessions"].get<int64_t>());
  }
  // The step table says the time of the kernels the indexer's fold bounds
  // (some of B200's prefill, whose FP4 tensor math outpaces the CUDA cores).
  EXPECT_NE(md.find("in fold-bound kernels"), std::string::npos);
  for (const auto& step : json["steps"]) {
    EXPECT_LE(step["fold_bound_us"].get<double>(), step["total_time_us"].get<double>());
    EXPECT_GT(step["fold_work_us"].get<double>(), 0.0) << step["gpu"];
    if (step["phase"] == "prefill" && step["gpu"] == "NVIDIA B200 (HGX, 1000 W)") {
      EXPECT_GT(step["fold_bound_us"].get<double>(), 0.0) << step["context"];
    }
  }
  EXPECT_NE(md.find("| the same GPUs as several instances of a smaller EP group, or as one group |"),
            std::string::npos);
  // The mix of traffic: every bundled deployment, each class of the mix counted apart, drained.
  EXPECT_NE(md.find("## A mix of traffic on one deployment: chat and coding agents"), std::string::npos);
  ASSERT_EQ(json["serving_mix"].size(), json["serving"].size());
  for (const auto& run : json["serving_mix"]) {
    ASSERT_EQ(run["by_class"].size(), 2u);
    EXPECT_GT(run["by_class"][1]["arrived"].get<int64_t>(), 0);
    EXPECT_LE(run["by_class"][1]["within_sla"].get<int64_t>(), run["by_class"][1]["arrived"].get<int64_t>());
  }
  EXPECT_NE(md.find("| each class of 'chat and coding agents' within its own SLA |"), std::string::npos);
  // The KV tiers are compared on instances that serve their traffic at the
  // longest retention: that variant meets the SLA over a settled window.
  const auto& tiers = json["plan_kv_tiers"];
  ASSERT_TRUE(tiers["instances_serve_longest_retention"].get<bool>());
  bool longest_served = false;
  for (const auto& row : tiers["rows"]) {
    EXPECT_EQ(row["decode"]["instances"], tiers["instances"]);
    if (row["kv_tiers"]["retention_h"].get<double>() == 72.0)
      longest_served =
          longest_served || (row["meets_sla"].get<bool>() && row["seeds"][0]["steady"].get<bool>());
  }
  EXPECT_TRUE(longest_served);
}

}  // namespace
}  // namespace v41sim
