// An engine's step log (step-log --log): a malformed one is refused with
// file, line and column, and what the column takes; rows the model cannot
// run are refused when they are timed, at their line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/common/input_error.h"
#include "sim/validation/step_log.h"
#include "sim/validation/step_log_comparison.h"
#include "tests/step_test_support.h"

namespace v41sim {
namespace {

namespace fs = std::filesystem;

struct BadLog {
  std::string text;
  int line;
  std::string field;
  std::string says;
};

TEST(BadStepLog, MalformedFileIsRefusedWithWhereAndWhat) {
  const fs::path file = fs::temp_directory_path() / "v41sim_bad_step_log.csv";
  const std::string header = "phase,batch,context,new_tokens,drafts\n";
  const std::vector<BadLog> cases = {
      {"phase,batch,context,new_tokens\n", 1, "drafts", "missing column"},
      {header.substr(0, header.size() - 1) + ",speed\n", 1, "speed", "unknown column"},
      {"phase,batch,phase,context,new_tokens,drafts\n", 1, "phase", "column given twice"},
      {header + "verify,1,8,0,0\n", 2, "phase", "expected prefill, decode or mixed"},
      {header + "mixed,1,8,0,0\n", 2, "phase", "a mixed row needs the columns chunk_prompts"},
      {"phase,batch,context,new_tokens,drafts,chunk_prompts,chunk_tokens,chunk_context\ndecode,1,8,0,0,2,0,"
       "0\n",
       2, "chunk_prompts", "only a mixed row carries prompt chunks"},
      {"phase,batch,context,new_tokens,drafts,chunk_prompts,chunk_tokens,chunk_context\nmixed,1,8,0,0,0,8,"
       "8\n",
       2, "chunk_prompts", "[1, 16777216]"},
      {"phase,batch,context,new_tokens,drafts,chunk_prompts,chunk_tokens,chunk_context\nmixed,1,8,0,0,1,9,"
       "8\n",
       2, "chunk_tokens", "[1, 8]"},
      {"phase,batch,context,new_tokens,drafts,chunk_prompts,chunk_tokens,chunk_context,continuing\n"
       "mixed,1,8,0,0,1,8,8,2\n",
       2, "continuing", "[0, 1]"},
      {header + "decode,0,8,0,0\n", 2, "batch", "expected a whole number in [1, 16777216]"},
      {header + "decode,1.5,8,0,0\n", 2, "batch", "whole number"},
      {header + "decode,0x10,8,0,0\n", 2, "batch", "got '0x10'"},
      {header + "decode, 1,8,0,0\n", 2, "batch", "whole number"},
      {header + "decode,1,-8,0,0\n", 2, "context", "whole number"},
      {header + "decode,1,8,4,0\n", 2, "new_tokens", "expected 0 (a decode row"},
      {header + "prefill,1,8,9,0\n", 2, "new_tokens", "[1, 8]"},
      {header + "prefill,1,8,8,2\n", 2, "drafts", "verifies no drafts"},
      {header + "decode,1,8,0,nan\n", 2, "drafts", "whole number"},
      {"phase,batch,context,new_tokens,drafts,continuing\nprefill,2,8,8,0,3\n", 2, "continuing", "[0, 2]"},
      {"phase,batch,context,new_tokens,drafts,continuing\ndecode,2,8,0,0,1\n", 2, "continuing",
       "only prompt chunks continue"},
      {"phase,batch,context,new_tokens,drafts,measured_us\ndecode,1,8,0,0,0\n", 2, "measured_us", "above 0"},
      {"phase,batch,context,new_tokens,drafts,measured_us\ndecode,1,8,0,0,inf\n", 2, "measured_us",
       "a number"},
      {header + "decode,1,8,0\n", 2, "", "expected 5 cells"},
      {header, 0, "", "no steps"},
      {"# nothing but a comment\n", 0, "", "no header line"},
  };
  for (const BadLog& c : cases) {
    SCOPED_TRACE(c.text);
    std::ofstream(file) << c.text;
    try {
      load_step_log(file.string());
      FAIL() << "accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().file, file.string());
      EXPECT_EQ(e.where().line, c.line);
      EXPECT_EQ(e.where().field, c.field);
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(load_step_log((fs::temp_directory_path() / "v41sim_no_such_log.csv").string()), InputError);
}

TEST(BadStepLog, RowsTheModelCannotRunAreRefusedAtTheirLine) {
  const fs::path file = fs::temp_directory_path() / "v41sim_bad_step_log_model.csv";
  const testing::GpuUnderTest gpu("h200");
  const std::vector<BadLog> cases = {
      {"decode,1,2000000,0,0,0,0,0\n", 3, "context", "max_context of 1048576"},
      {"decode,1,8192,0,6,0,0,0\n", 3, "drafts", "expected 0 to 5 drafts"},
      {"mixed,1,8192,0,1,1,4096,2000000\n", 3, "chunk_context", "max_context of 1048576"},
  };
  for (const BadLog& c : cases) {
    SCOPED_TRACE(c.text);
    std::ofstream(file) << "phase,batch,context,new_tokens,drafts,chunk_prompts,chunk_tokens,chunk_context\n"
                        << "decode,1,8192,0,1,0,0,0\n"
                        << c.text;
    try {
      compare_step_log(load_step_log(file.string()), testing::analyze("deepseek_v4_1_flash"), StepShape{},
                       gpu.cost, gpu.cost);
      FAIL() << "accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().line, c.line);
      EXPECT_EQ(e.where().field, c.field);
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
    }
  }
  std::ofstream(file) << "phase,batch,context,new_tokens,drafts\ndecode,1,8192,0,1\n";
  EXPECT_THROW(compare_step_log(load_step_log(file.string()), testing::analyze("deepseek_v4_flash"),
                                StepShape{}, gpu.cost, gpu.cost),
               InputError);  // V4-Flash has no draft to verify
}

}  // namespace
}  // namespace v41sim
