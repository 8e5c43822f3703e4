#include "sim/report/claims.h"

#include <gtest/gtest.h>

#include "sim/capacity/memory_fit.h"
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

  Claim find(const std::string& id) {
    for (const Claim& c : check_claims({v41_, v4_, h100_, h200_, default_reserve_fraction()})) {
      if (c.id == id) return c;
    }
    ADD_FAILURE() << "no claim " << id;
    return {};
  }
};

TEST_F(ClaimsTest, Verdicts) {
  EXPECT_EQ(find("kv_bytes_per_token").verdict, Verdict::kHolds);
  EXPECT_EQ(find("session_1m_bytes").verdict, Verdict::kHolds);
  EXPECT_EQ(find("h200_sessions").verdict, Verdict::kHoldsOnlyIf);
  EXPECT_EQ(find("h100_ep8_weights").verdict, Verdict::kHoldsOnlyIf);
  EXPECT_EQ(find("active_params").verdict, Verdict::kHolds);
}

TEST_F(ClaimsTest, AVerdictFollowsTheModelFile) {
  // Store the main KV in FP8 instead of MXFP4: the 890 B/token claim must fail.
  v41_.spec.cache_formats["main_kv_mxfp4"].bytes = 528;
  v41_ = analyze_model(v41_.spec);
  EXPECT_EQ(find("kv_bytes_per_token").verdict, Verdict::kDoesNotHold);
}

TEST_F(ClaimsTest, HoldsOnlyIfNamesTheAssumption) {
  const Claim c = find("h200_sessions");
  EXPECT_NE(verdict_text(c).find("no weights"), std::string::npos);
  EXPECT_GE(c.findings.size(), 3u);
}

}  // namespace
}  // namespace v41sim
