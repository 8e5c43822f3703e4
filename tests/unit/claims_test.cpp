#include "sim/report/claims.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "sim/capacity/memory_fit.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/hw/gpu_profile_loader.h"
#include "tests/test_data.h"

namespace v41sim {
namespace {

using testing::analyze;
using testing::gpu_path;

class ClaimsTest : public ::testing::Test {
 protected:
  ModelAnalysis v41_ = analyze("deepseek_v4_1_flash");
  ModelAnalysis v4_ = analyze("deepseek_v4_flash");
  GpuProfile h100_ = load_gpu_profile_file(gpu_path("h100_sxm"));
  GpuProfile h200_ = load_gpu_profile_file(gpu_path("h200"));
  GpuCostModel h20_decode_{V41SIM_SOURCE_DIR, gpu_path("h20"), true};
  GpuCostModel h100_decode_{V41SIM_SOURCE_DIR, gpu_path("h100_sxm"), true};
  GpuCostModel h200_decode_{V41SIM_SOURCE_DIR, gpu_path("h200"), true};
  GpuCostModel gb200_decode_{V41SIM_SOURCE_DIR, gpu_path("gb200_nvl72"), true};

  // The decode GPUs the H20 claim compares, as "H20" and "H100" (swappable).
  const GpuCostModel* h20_as_ = &h20_decode_;
  const GpuCostModel* h100_as_ = &h100_decode_;
  // The node and the rack the EP claim compares (swappable too).
  const GpuCostModel* node_as_ = &h200_decode_;
  const GpuCostModel* rack_as_ = &gb200_decode_;

  Claim find(const std::string& id) {
    for (const Claim& c : check_claims({v41_, v4_, h100_, h200_, default_reserve_fraction(), h20_as_->cost(),
                                        h100_as_->cost(), node_as_->cost(), rack_as_->cost()})) {
      if (c.id == id) return c;
    }
    ADD_FAILURE() << "no claim " << id;
    return {};
  }
};

TEST_F(ClaimsTest, Verdicts) {
  // 890 and 3514 B/token are the model files' own index keys' (FP4): with
  // the FP8 keys the files also define, more; without those, it simply holds.
  const Claim kv = find("kv_bytes_per_token");
  EXPECT_EQ(kv.verdict, Verdict::kHoldsOnlyIf);
  EXPECT_NE(kv.condition.find("DeepSeek-V4.1-Flash 1050 B/token (index_key_fp8, 132 B a key)"),
            std::string::npos)
      << kv.condition;
  const Claim session = find("session_1m_bytes");
  EXPECT_EQ(session.verdict, Verdict::kHoldsOnlyIf);
  EXPECT_NE(session.condition.find("DeepSeek-V4.1-Flash 1050 MB at 10^6 tokens (index_key_fp8"),
            std::string::npos)
      << session.condition;
  v41_.spec.cache_formats.erase("index_key_fp8");
  v4_.spec.cache_formats.erase("index_key_fp8");
  EXPECT_EQ(find("kv_bytes_per_token").verdict, Verdict::kHolds);
  EXPECT_EQ(find("session_1m_bytes").verdict, Verdict::kHolds);
  v41_ = analyze("deepseek_v4_1_flash");
  v4_ = analyze("deepseek_v4_flash");
  EXPECT_EQ(find("h200_sessions").verdict, Verdict::kHoldsOnlyIf);
  EXPECT_EQ(find("h100_ep8_weights").verdict, Verdict::kHoldsOnlyIf);
  EXPECT_EQ(find("active_params").verdict, Verdict::kHolds);
  EXPECT_EQ(find("persistent_kv_eighth").verdict, Verdict::kHoldsOnlyIf);
  EXPECT_EQ(find("mhc_single_pass").verdict, Verdict::kHolds);
}

TEST_F(ClaimsTest, NoMhcNoTrafficClaim) {
  v41_.spec.mhc.reset();  // a plain residual: nothing to halve
  v41_ = analyze_model(v41_.spec);
  EXPECT_EQ(find("mhc_single_pass").verdict, Verdict::kDoesNotHold);
}

TEST_F(ClaimsTest, AVerdictFollowsTheModelFile) {
  // Store the main KV in FP8 instead of MXFP4: the 890 B/token claim must fail.
  v41_.spec.cache_formats["main_kv_mxfp4"].bytes = 528;
  v41_ = analyze_model(v41_.spec);
  EXPECT_EQ(find("kv_bytes_per_token").verdict, Verdict::kDoesNotHold);
}

TEST_F(ClaimsTest, TheH20DecodeClaimFollowsTheStepTimes) {
  // The kernel model: the H20 leads at small batches only, where EP
  // transfers and load latencies, not HBM bandwidth, take most of the step.
  const Claim as_is = find("h20_decode");
  ASSERT_EQ(as_is.verdict, Verdict::kHoldsOnlyIf);
  EXPECT_NE(as_is.condition.find("decode batches stay at or below"), std::string::npos) << as_is.condition;
  EXPECT_NE(as_is.condition.find("no public H20 price"), std::string::npos);
  // With the engines' W4A16 experts (Marlin's) the H20's widening and BF16
  // rate weigh more: its token is slower at batch 1 too, which the condition says.
  EXPECT_NE(as_is.condition.find("with the W4A16 ones engines run on Hopper (Marlin's) its token is"),
            std::string::npos)
      << as_is.condition;
  const auto w4a16 = std::find_if(as_is.findings.begin(), as_is.findings.end(), [](const std::string& f) {
    return f.find("with the routed experts in W4A16 on both") != std::string::npos;
  });
  ASSERT_NE(w4a16, as_is.findings.end());
  EXPECT_NE(w4a16->find("batch 64:"), std::string::npos) << *w4a16;
  // A GPU slower at batch 1 as "the H20": the claim fails.
  std::swap(h20_as_, h100_as_);
  EXPECT_EQ(find("h20_decode").verdict, Verdict::kDoesNotHold);
  // One faster at every batch: it holds, on time per output token alone.
  const GpuCostModel h200_decode(V41SIM_SOURCE_DIR, gpu_path("h200"), true);
  h20_as_ = &h200_decode;
  const Claim faster = find("h20_decode");
  EXPECT_EQ(faster.verdict, Verdict::kHoldsOnlyIf);
  EXPECT_EQ(faster.condition, "judged on time per output token alone (no public H20 price)");
}

TEST_F(ClaimsTest, PersistentKvNamesTheWindowCheckpointItNeeds) {
  // V4.1 persists 890 B/token; V4-Flash 3514.25 of global KV plus its window
  // state (43 layers x 128 tokens x 584 B = 3.21 MB) kept every P tokens.
  // 8 x 890 = 7120 B/token needs P = 3,214,336 / (7120 - 3514.25) = 891.
  const Claim c = find("persistent_kv_eighth");
  ASSERT_EQ(c.verdict, Verdict::kHoldsOnlyIf);
  EXPECT_NE(c.condition.find("about every 891 tokens"), std::string::npos) << c.condition;
  // Every token's window entries: (3514.25 + 43 x 584) / 890 = 32.2; none: 3.95.
  EXPECT_NE(c.condition.find("gives 1/32.2, keeping none 1/3.95"), std::string::npos) << c.condition;
  // A V4-Flash whose window entries are so small that keeping all of them
  // stays under 8x: the claim cannot hold.
  CacheEntryFormat small = v4_.spec.cache_formats.at(v4_.spec.attention.window_cache);
  small.name = "small_window";
  small.bytes = 50;
  v4_.spec.cache_formats[small.name] = small;
  v4_.spec.attention.window_cache = small.name;
  v4_ = analyze_model(v4_.spec);
  EXPECT_EQ(find("persistent_kv_eighth").verdict, Verdict::kDoesNotHold);
}

TEST_F(ClaimsTest, HoldsOnlyIfNamesTheAssumption) {
  const Claim c = find("h200_sessions");
  EXPECT_NE(verdict_text(c).find("no weights"), std::string::npos);
  EXPECT_GE(c.findings.size(), 3u);
}

// The sessions the node holds with the index keys stored as the model file's
// other format says (the FP8 key engines store on Hopper): the fit of the
// model with that key, fewer than with its own FP4 one, the format's source
// quoted; a model file that defines no other index key adds no finding.
TEST_F(ClaimsTest, H200SessionsWithTheEnginesIndexKeys) {
  ModelSpec spec = v41_.spec;
  spec.attention.indexer->key_cache = "index_key_fp8";
  FitRequest r;
  r.gpus = 8;
  r.ep = 8;
  r.context_tokens = 1 << 20;
  r.weights = spec.weights;
  r.dense_placement = DensePlacement::kReplicated;
  r.reserve_fraction = default_reserve_fraction();
  const int64_t fp8_keys = fit_memory(analyze_model(spec), h200_, r).sessions;
  r.weights = v41_.spec.weights;
  EXPECT_LT(fp8_keys, fit_memory(v41_, h200_, r).sessions);
  const auto keyed = [](const Claim& c, const std::string& model) {
    return std::count_if(c.findings.begin(), c.findings.end(), [&](const std::string& f) {
      return f.starts_with(model + " storing its index keys as index_key_fp8");
    });
  };
  const Claim c = find("h200_sessions");
  ASSERT_EQ(keyed(c, v41_.spec.name), 1) << ::testing::PrintToString(c.findings);
  const auto finding = std::find_if(c.findings.begin(), c.findings.end(), [&](const std::string& f) {
    return f.starts_with(v41_.spec.name + " storing");
  });
  EXPECT_NE(finding->find(fmt::format("1050 B/token, {} sessions of 2^20 tokens", fp8_keys)),
            std::string::npos)
      << *finding;
  EXPECT_NE(finding->find(v41_.spec.cache("index_key_fp8").source), std::string::npos) << *finding;
  EXPECT_EQ(keyed(c, v4_.spec.name), 1);
  v41_.spec.cache_formats.erase("index_key_fp8");
  EXPECT_EQ(keyed(find("h200_sessions"), v41_.spec.name), 0);
}

}  // namespace
}  // namespace v41sim

namespace v41sim {
namespace {

// The EP claim sets a node's group against one twice its size over the
// network, and against one over the rack's whole NVLink domain: each
// comparison is a finding, and the verdict names what each showed.
TEST_F(ClaimsTest, EpGroupSizeComparesAcrossNodesAndWithinTheRack) {
  const Claim c = find("ep_group_size");
  ASSERT_EQ(c.findings.size(), 3u);
  EXPECT_NE(c.findings[1].find("EP 8 / EP 16 over 2 NVLink domains"), std::string::npos) << c.findings[1];
  EXPECT_NE(c.findings[2].find("EP 8 / EP 72 (48 replicas)"), std::string::npos) << c.findings[2];
  ASSERT_EQ(c.verdict, Verdict::kHoldsOnlyIf) << c.condition;
  EXPECT_NE(c.condition.find("on H200, EP 16 over 2 NVLink domains is"), std::string::npos) << c.condition;
  EXPECT_NE(c.condition.find("on GB200 NVL72, EP 72 (48 replicas) is"), std::string::npos) << c.condition;
}

// A "rack" whose NVLink domain is no larger than a node's has no larger group
// within it: the claim is judged across nodes alone, and says why.
TEST_F(ClaimsTest, EpGroupSizeWithoutALargerDomainJudgesAcrossNodesAlone) {
  rack_as_ = &h200_decode_;
  const Claim c = find("ep_group_size");
  ASSERT_EQ(c.findings.size(), 3u);
  EXPECT_NE(c.findings[2].find("no larger group within it to compare"), std::string::npos) << c.findings[2];
  EXPECT_EQ(c.condition.find("GB200"), std::string::npos) << c.condition;
}

// A domain past what the routed experts deal over is refused at its line.
TEST_F(ClaimsTest, EpGroupSizeRefusesADomainTheExpertsCannotFill) {
  std::ifstream in(gpu_path("gb200_nvl72"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = "nvlink_domain_gpus: {value: 72,";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "nvlink_domain_gpus: {value: 800,");
  const auto path = std::filesystem::temp_directory_path() / "v41sim_claims_rack_800.yaml";
  std::ofstream(path) << text;
  const GpuCostModel wide(V41SIM_SOURCE_DIR, path.string(), true);
  rack_as_ = &wide;
  try {
    find("ep_group_size");
    ADD_FAILURE() << "a domain of 800 GPUs was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "nvlink_domain_gpus");
    EXPECT_NE(std::string(e.what()).find("expected at most 768 GPUs"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace v41sim
