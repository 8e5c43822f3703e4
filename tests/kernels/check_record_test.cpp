// The record a --checks run leaves for the sweep after it: what is written
// reads back the same, failures keep what differed on one line, and a line
// cut off or of another form counts as a check not run.
#include "kernels/harness/check_record.h"

#include <gtest/gtest.h>

namespace v41sim::kernels {
namespace {

TEST(CheckRecord, ReadsBackWhatWasWritten) {
  const std::string text = check_record_line("wgmma_layouts", {true, ""}) +
                           check_record_line("sparse_decode_wgmma", {false, "timed out after 60 s"}) +
                           check_record_line("indexer_wgmma", {false, "3 of 10 off\n\tfirst at 7"});
  const auto outcomes = parse_check_record(text);
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_TRUE(outcomes.at("wgmma_layouts").ok);
  EXPECT_FALSE(outcomes.at("sparse_decode_wgmma").ok);
  EXPECT_EQ(outcomes.at("sparse_decode_wgmma").detail, "timed out after 60 s");
  EXPECT_EQ(outcomes.at("indexer_wgmma").detail, "3 of 10 off  first at 7");
}

TEST(CheckRecord, SkipsLinesOfAnotherForm) {
  const auto outcomes = parse_check_record(
      "expert_gemm\tPASS\nexpert_gemm_w4a8\tPA\nmhc\tPASSED\n\tFAIL\tno name\nno tab at all\ntopk\tFAIL");
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_TRUE(outcomes.at("expert_gemm").ok);
  EXPECT_FALSE(outcomes.at("topk").ok);
  EXPECT_EQ(outcomes.at("topk").detail, "");
}

}  // namespace
}  // namespace v41sim::kernels
