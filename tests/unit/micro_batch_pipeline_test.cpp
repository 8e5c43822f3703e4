// Two micro-batches laid out on the compute stream and the links, their
// kernels' order kept: layouts worked by hand.
#include "sim/cost/micro_batch_pipeline.h"

#include <gtest/gtest.h>

#include <vector>

namespace v41sim {
namespace {

TrackSegment compute(double us) { return {false, us, 0}; }
TrackSegment transfer(double us, bool holds_sms = false) { return {true, us, holds_sms ? us : 0}; }

// Attention (5), dispatch (3), experts (6), combine (7), in each of two
// micro-batches: by hand, A computes 0-5; A's dispatch 5-8 while B computes
// 5-10; A's experts 10-16 while B's dispatch runs 10-13; B's experts 16-22
// while A's combine runs 16-23; B's combine 23-30. Not the perfect-overlap
// bound max(2 x 11, 2 x 10) = 22, nor the serial 42.
TEST(MicroBatchPipeline, TwoMicroBatchesTakeTurnsAsTheirKernelsAllow) {
  const std::vector<TrackSegment> layer{compute(5), transfer(3), compute(6), transfer(7)};
  const PipelineLayout out = lay_out_micro_batches({{&layer, &layer}}, 0.0);
  EXPECT_DOUBLE_EQ(out.end_us, 30);
  ASSERT_EQ(out.spans[0].size(), 1u);
  const std::vector<std::pair<double, double>> expected{{0, 5}, {5, 8}, {10, 16}, {16, 23}};
  ASSERT_EQ(out.spans[0][0].size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_DOUBLE_EQ(out.spans[0][0][i].start_us, expected[i].first) << i;
    EXPECT_DOUBLE_EQ(out.spans[0][0][i].end_us, expected[i].second) << i;
  }
  // B's: 5-10, 10-13, 16-22, 23-30.
  const std::vector<std::pair<double, double>> second{{5, 10}, {10, 13}, {16, 22}, {23, 30}};
  ASSERT_EQ(out.spans[1][0].size(), second.size());
  for (std::size_t i = 0; i < second.size(); ++i) {
    EXPECT_DOUBLE_EQ(out.spans[1][0][i].start_us, second[i].first) << i;
    EXPECT_DOUBLE_EQ(out.spans[1][0][i].end_us, second[i].second) << i;
  }
  // One micro-batch alone: its chain end to end.
  EXPECT_DOUBLE_EQ(lay_out_micro_batches({{&layer, nullptr}}, 0.5).end_us, 21);
}

// B's attention (4) starts at 4 beside A's dispatch (4), which holds half the
// SMs: B computes at half rate until 8 (2 of its 4 done), then alone until 10;
// B's dispatch 10-14. A transfer that holds none leaves B 4-8 and ends at 12.
TEST(MicroBatchPipeline, ComputeBesideANormalTransferRunsOnTheSmsItLeaves) {
  const std::vector<TrackSegment> holding{compute(4), transfer(4, true)};
  EXPECT_DOUBLE_EQ(lay_out_micro_batches({{&holding, &holding}}, 0.5).end_us, 14);
  const std::vector<TrackSegment> free{compute(4), transfer(4, false)};
  EXPECT_DOUBLE_EQ(lay_out_micro_batches({{&free, &free}}, 0.5).end_us, 12);
}

// Layer 0 in both micro-batches (compute 2, transfer 2), layer 1 (compute 3)
// in the first only: A 0-2, 2-4 (links), B 2-4, 4-6 (links); A's layer 1
// waits for its transfer, 4-7. Layer 0 is done at 6, layer 1 at 7.
TEST(MicroBatchPipeline, ASecondMicroBatchMaySkipALayer) {
  const std::vector<TrackSegment> moe{compute(2), transfer(2)};
  const std::vector<TrackSegment> head{compute(3)};
  const PipelineLayout out = lay_out_micro_batches({{&moe, &moe}, {&head, nullptr}}, 0.0);
  ASSERT_EQ(out.layer_end_us.size(), 2u);
  EXPECT_DOUBLE_EQ(out.layer_end_us[0], 6);
  EXPECT_DOUBLE_EQ(out.layer_end_us[1], 7);
  EXPECT_DOUBLE_EQ(out.spans[0][1][0].start_us, 4);
  EXPECT_DOUBLE_EQ(out.end_us, 7);
}

// A layer with no kernels on either track ends with the layer before it.
TEST(MicroBatchPipeline, AnEmptyLayerEndsWithTheOneBefore) {
  const std::vector<TrackSegment> some{compute(1), transfer(2)};
  const std::vector<TrackSegment> none;
  const PipelineLayout out = lay_out_micro_batches({{&some, &some}, {&none, &none}}, 0.0);
  EXPECT_DOUBLE_EQ(out.layer_end_us[1], out.layer_end_us[0]);
  EXPECT_DOUBLE_EQ(out.end_us, 5);  // A 0-1, 1-3; B 1-2, 3-5
}

}  // namespace
}  // namespace v41sim
