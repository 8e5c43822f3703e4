// The harness names a shape's rows as an engine would dispatch it: the
// fastest complete path carries the simulator's kernel name, the others are
// baselines (kernels/harness/dispatched_names.h).
#include "kernels/harness/dispatched_names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace v41sim::kernels {
namespace {

TEST(DispatchedNames, TheFastestPathCarriesTheKernelsName) {
  const std::vector<std::string> names =
      dispatched_names("expert_gate_up", {{"w4a8", 30.0}, {"w4a8_wgmma", 12.5}, {"fp8_widened", 14.0}});
  EXPECT_EQ(names, (std::vector<std::string>{"expert_gate_up_w4a8_baseline", "expert_gate_up",
                                             "expert_gate_up_fp8_widened_baseline"}));
}

TEST(DispatchedNames, ATieGoesToTheEarlierPathAndOnePathIsTheKernel) {
  EXPECT_EQ(dispatched_names("indexer_logits", {{"bf16_mma", 5.0}, {"fp8_wgmma", 5.0}}),
            (std::vector<std::string>{"indexer_logits", "indexer_logits_fp8_wgmma_baseline"}));
  EXPECT_EQ(dispatched_names("indexer_logits", {{"fp8_wgmma", 7.0}}),
            (std::vector<std::string>{"indexer_logits"}));
  EXPECT_TRUE(dispatched_names("indexer_logits", {}).empty());
}

// Rows named in place: a fixed-name baseline between the competing paths
// keeps its name whatever its time; the competing paths are named as above.
TEST(DispatchedNames, FixedNamesStandAsTheCompetingPathsAreNamed) {
  struct Time {
    double median_us;
  };
  struct Path {
    std::string name;
    const char* suffix;
    Time time;
  };
  std::vector<Path> paths{
      {"", "bf16_mma", {9.0}}, {"attention_fp32_baseline", nullptr, {1.0}}, {"", "bf16_wgmma", {4.0}}};
  name_competing_paths("attention", paths);
  EXPECT_EQ(paths[0].name, "attention_bf16_mma_baseline");
  EXPECT_EQ(paths[1].name, "attention_fp32_baseline");
  EXPECT_EQ(paths[2].name, "attention");
}

}  // namespace
}  // namespace v41sim::kernels
