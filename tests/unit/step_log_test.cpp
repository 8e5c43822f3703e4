// An engine's step log: read as written (any column order, CRLF, a byte
// order mark, comments), each step timed as the step graph times it, and the
// errors against the logged times summarized by phase.
#include "sim/validation/step_log.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "sim/cost/draft_choice.h"
#include "sim/cost/error_band.h"
#include "sim/validation/step_log_comparison.h"
#include "tests/step_test_support.h"

namespace v41sim {
namespace {

using testing::analyze;
using testing::GpuUnderTest;
using testing::shape;
using testing::timed;

std::string log_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("v41sim_step_log_" + name + ".csv");
  std::ofstream(path) << text;
  return path.string();
}

TEST(StepLog, ReadsColumnsInAnyOrderWithCrlfBomAndComments) {
  const StepLog log = load_step_log(log_file(
      "read",
      "\xEF\xBB\xBF# an engine's steps\r\nmeasured_us,drafts,new_tokens,context,batch,phase,continuing\r\n"
      "\r\n21000.5,3,0,65536,16,decode,0\r\n# a chunk of two prompts, one to go on\r\n"
      "400000,0,4096,16384,2,prefill,1\r\n"));
  ASSERT_EQ(log.steps.size(), 2u);
  EXPECT_TRUE(log.measured);
  const LoggedStep& d = log.steps[0];
  EXPECT_EQ(d.line, 4);
  EXPECT_EQ(d.kind, LoggedKind::kDecode);
  EXPECT_EQ(d.batch, 16);
  EXPECT_EQ(d.context, 65536);
  EXPECT_EQ(d.drafts, 3);
  EXPECT_DOUBLE_EQ(*d.measured_us, 21000.5);
  const LoggedStep& p = log.steps[1];
  EXPECT_EQ(p.line, 6);
  EXPECT_EQ(p.kind, LoggedKind::kPrefill);
  EXPECT_EQ(p.new_tokens, 4096);
  EXPECT_EQ(p.continuing, 1);
  const StepLog bare =
      load_step_log(log_file("bare", "phase,batch,context,new_tokens,drafts\ndecode,1,8,0,0\n"));
  EXPECT_FALSE(bare.measured);
  EXPECT_FALSE(bare.steps[0].measured_us.has_value());
  EXPECT_EQ(bare.steps[0].continuing, 0);
}

// Each row is the step a `step` command with its shape would time: decode
// verifying the row's drafts on the graph-replayed model, prefill launched.
TEST(StepLog, EachStepIsTimedAsTheStepGraphTimesIt) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  const GpuUnderTest replayed("h200", true);
  const GpuUnderTest launched("h200", false);
  const StepLog log = load_step_log(log_file("timed",
                                             "phase,batch,context,new_tokens,drafts,continuing\n"
                                             "decode,32,131072,0,5,0\ndecode,4,8192,0,0,0\n"
                                             "prefill,2,16384,4096,0,1\n"));
  StepShape base;
  base.ep = 8;
  const StepLogComparison c = compare_step_log(log, m, base, launched.cost, replayed.cost);
  ASSERT_EQ(c.steps.size(), 3u);
  EXPECT_DOUBLE_EQ(c.steps[0].predicted_us,
                   timed(m, replayed.cost, verifying(shape(Phase::kDecode, 32, 131072), 5)).total_us);
  EXPECT_DOUBLE_EQ(c.steps[1].predicted_us,
                   timed(m, replayed.cost, verifying(shape(Phase::kDecode, 4, 8192), 0)).total_us);
  StepShape prefill = shape(Phase::kPrefill, 2, 16384);
  prefill.new_tokens = 4096;
  prefill.continuing = 1;
  EXPECT_DOUBLE_EQ(c.steps[2].predicted_us, timed(m, launched.cost, prefill).total_us);
  // Verifying drafts adds rows (and the draft stages): the step is longer.
  EXPECT_GT(c.steps[0].predicted_us,
            timed(m, replayed.cost, verifying(shape(Phase::kDecode, 32, 131072), 0)).total_us);
  ASSERT_EQ(c.phases.size(), 2u);
  EXPECT_EQ(c.phases[0].kind, LoggedKind::kPrefill);
  EXPECT_EQ(c.phases[1].steps, 2);
  EXPECT_DOUBLE_EQ(c.phases[1].predicted_us, c.steps[0].predicted_us + c.steps[1].predicted_us);
  EXPECT_EQ(c.phases[1].errors.count, 0);  // no times logged
}

// A mixed row is the decode step carrying its prompt chunks, launched, as
// `step --prompt-chunks` times it; its chunk columns read as the step's flags.
TEST(StepLog, AMixedRowIsTheDecodeStepCarryingItsChunks) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  const GpuUnderTest replayed("h200", true);
  const GpuUnderTest launched("h200", false);
  const StepLog log = load_step_log(
      log_file("mixed",
               "phase,batch,context,new_tokens,drafts,continuing,chunk_prompts,chunk_tokens,chunk_context\n"
               "mixed,16,65536,0,2,1,2,4096,16384\ndecode,16,65536,0,2,0,0,0,0\n"));
  ASSERT_EQ(log.steps.size(), 2u);
  const LoggedStep& row = log.steps[0];
  EXPECT_EQ(row.kind, LoggedKind::kMixed);
  EXPECT_EQ(row.chunk_prompts, 2);
  EXPECT_EQ(row.chunk_tokens, 4096);
  EXPECT_EQ(row.chunk_context, 16384);
  EXPECT_EQ(row.continuing, 1);
  StepShape base;
  const StepLogComparison c = compare_step_log(log, m, base, launched.cost, replayed.cost);
  StepShape mixed = verifying(shape(Phase::kDecode, 16, 65536), 2);
  mixed.mixed_prefill = {2, 4096, 16384, 1};
  EXPECT_DOUBLE_EQ(c.steps[0].predicted_us, timed(m, launched.cost, mixed).total_us);
  EXPECT_GT(c.steps[0].predicted_us, c.steps[1].predicted_us);  // the chunks' work on top
  ASSERT_EQ(c.phases.size(), 2u);
  EXPECT_EQ(c.phases[1].kind, LoggedKind::kMixed);
  EXPECT_STREQ(logged_kind_name(c.phases[1].kind), "mixed");
}

// Logged times a known factor from the model's give that error on every
// step, a correlation of 1; times running against the model's, a negative one.
TEST(StepLog, ErrorsAgainstLoggedTimesAreSummarizedByPhase) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  const GpuUnderTest gpu("h200");
  const std::string rows[] = {"decode,1,8192,0,0", "decode,16,65536,0,2", "decode,64,131072,0,5"};
  std::string plain = "phase,batch,context,new_tokens,drafts\n";
  for (const std::string& row : rows) plain += row + "\n";
  StepShape base;
  const StepLogComparison first =
      compare_step_log(load_step_log(log_file("plain", plain)), m, base, gpu.cost, gpu.cost);
  std::string slower = "phase,batch,context,new_tokens,drafts,measured_us\n";
  std::string reversed = slower;
  for (std::size_t i = 0; i < 3; ++i) {
    slower += rows[i] + "," + std::to_string(first.steps[i].predicted_us * 1.25) + "\n";
    reversed += rows[i] + "," + std::to_string(first.steps[2 - i].predicted_us) + "\n";
  }
  const StepLogComparison c =
      compare_step_log(load_step_log(log_file("slower", slower)), m, base, gpu.cost, gpu.cost);
  const PhaseComparison& decode = c.phases.at(0);
  EXPECT_EQ(decode.errors.count, 3);
  EXPECT_NEAR(decode.errors.bias_pct, -20.0, 1e-4);  // 1 / 1.25 - 1
  EXPECT_NEAR(decode.errors.mape_pct, 20.0, 1e-4);
  EXPECT_NEAR(decode.errors.worst_pct, 20.0, 1e-4);
  EXPECT_NEAR(decode.pearson_r, 1.0, 1e-9);
  EXPECT_NEAR(decode.measured_us, 1.25 * decode.predicted_us, 1e-3 * decode.predicted_us);
  // Each step carries `step`'s band; 25% off is outside every one of them (the
  // priors' bands are near 15%), 1% off inside.
  for (const TimedStep& t : c.steps) {
    EXPECT_DOUBLE_EQ(t.band.pct, step_error_band(timed(m, gpu.cost, t.shape), gpu.cost.params()).pct);
    EXPECT_GT(t.band.pct, 1.0);
    EXPECT_LT(t.band.pct, 25.0);
  }
  EXPECT_GT(decode.band.pct, 0);
  EXPECT_EQ(decode.within_band_share, 0.0);
  std::string close = "phase,batch,context,new_tokens,drafts,measured_us\n";
  for (std::size_t i = 0; i < 3; ++i)
    close += rows[i] + "," + std::to_string(first.steps[i].predicted_us * 1.01) + "\n";
  const StepLogComparison near =
      compare_step_log(load_step_log(log_file("close", close)), m, base, gpu.cost, gpu.cost);
  EXPECT_EQ(near.phases.at(0).within_band_share, 1.0);
  const StepLogComparison against =
      compare_step_log(load_step_log(log_file("reversed", reversed)), m, base, gpu.cost, gpu.cost);
  EXPECT_LT(against.phases.at(0).pearson_r, 0);
}

}  // namespace
}  // namespace v41sim
