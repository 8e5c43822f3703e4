// How many drafts a decode step verifies: the count with the most expected
// tokens per second, chosen alike by serving runs and standalone steps.
#include "sim/cost/draft_choice.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/serving/step_time_cache.h"
#include "tests/step_test_support.h"

namespace v41sim {
namespace {

ModelSpec drafting(std::optional<double> acceptance, int64_t block_size = 5) {
  ModelSpec m;
  m.draft = DraftSpec{};
  m.draft->block_size = block_size;
  m.draft->acceptance = SourcedValue(acceptance, Provenance{ProvenanceKind::kAssumed, "test"});
  return m;
}

// 1 + p + ... + p^k: the verifier's own token and each draft accepted with
// every one before it.
double tokens(double p, int64_t k) {
  double sum = 0;
  for (int64_t j = 0; j <= k; ++j) sum += std::pow(p, static_cast<double>(j));
  return sum;
}

TEST(DraftChoice, PicksTheCountWithTheMostTokensPerSecond) {
  const ModelSpec m = drafting(0.8);
  const auto step_us = [](int64_t k) { return 10.0 + 3.0 * static_cast<double>(k); };
  int64_t best = 0;
  for (int64_t k = 1; k <= 5; ++k) {
    if (tokens(0.8, k) / step_us(k) > tokens(0.8, best) / step_us(best)) best = k;
  }
  ASSERT_EQ(best, 3) << "the fixture's curve peaks inside the block";
  const DraftChoice choice = best_draft_count(m, true, step_us);
  EXPECT_EQ(choice.drafts, best);
  EXPECT_NEAR(choice.tokens_per_sequence, tokens(0.8, best), 1e-12);
  // Steps that grow no longer with drafts: the whole block; as fast as the tokens they bring: none.
  EXPECT_EQ(best_draft_count(m, true, [](int64_t) { return 10.0; }).drafts, 5);
  EXPECT_EQ(best_draft_count(m, true, [](int64_t k) { return expected_tokens_per_step(0.8, k); }).drafts, 0);
  // Nothing to verify: speculation off, no draft, or no known acceptance.
  EXPECT_EQ(best_draft_count(m, false, step_us).drafts, 0);
  EXPECT_EQ(best_draft_count(ModelSpec{}, true, step_us).drafts, 0);
  EXPECT_EQ(best_draft_count(drafting(std::nullopt), true, step_us).drafts, 0);
  EXPECT_EQ(draft_count(m, 2).tokens_per_sequence, expected_tokens_per_step(0.8, 2));
  EXPECT_DOUBLE_EQ(draft_count(m, 0).tokens_per_sequence, 1.0);
}

// `step` and the report time a decode step as a serving run would: its
// batch and context verifying the drafts the step cache picks for them.
TEST(DraftChoice, AStandaloneStepVerifiesWhatAServingRunChooses) {
  const ModelAnalysis model = testing::analyze("deepseek_v4_1_flash");
  const testing::GpuUnderTest h200("h200");
  StepShape decode = testing::shape(Phase::kDecode, 32, 131072);
  decode.ep_per_node = h200.model.gpu().nvlink_domain();
  const SpeculativeStep served = as_served(model, decode, h200.cost);
  StepTimeCache cache(model, h200.cost, h200.cost, testing::shape(Phase::kPrefill, 1, 8192), decode, false,
                      false);
  const StepTimeCache::DecodeStep step = cache.decode_step(32, 131072);
  ASSERT_GT(served.choice.drafts, 0) << "V4.1 at batch 32 verifies drafts";
  EXPECT_EQ(served.choice.drafts, step.drafts);
  EXPECT_DOUBLE_EQ(served.choice.tokens_per_sequence, step.tokens_per_sequence);
  EXPECT_EQ(served.shape.decode_tokens_per_sequence, 1 + step.drafts);
  EXPECT_TRUE(served.shape.include_draft);
  EXPECT_NEAR(testing::timed(model, h200.cost, served.shape).total_us, step.us, 1e-6 * step.us);
  // A step carrying prompt chunks verifies what its plain step would.
  StepShape mixed = decode;
  mixed.mixed_prefill = {2, 4096, 8192, 0};
  EXPECT_EQ(as_served(model, mixed, h200.cost).choice.drafts, served.choice.drafts);
  EXPECT_EQ(as_served(model, mixed, h200.cost).shape.mixed_prefill.batch, 2);
  // Speculation off: nothing verified, no draft stage.
  decode.include_draft = false;
  const SpeculativeStep plain = as_served(model, decode, h200.cost);
  EXPECT_EQ(plain.choice.drafts, 0);
  EXPECT_FALSE(plain.shape.include_draft);
  // A prefill step has nothing to verify: it is timed as it is.
  const SpeculativeStep prefill = as_served(model, testing::shape(Phase::kPrefill, 1, 8192), h200.cost);
  EXPECT_EQ(prefill.choice.drafts, 0);
  EXPECT_EQ(prefill.shape.phase, Phase::kPrefill);
}

}  // namespace
}  // namespace v41sim
