// The validation table: a figure outside its tolerance says what the model
// lacks there, from its reference's model_lacks, or that nothing explains it.
#include "sim/report/validation_view.h"

#include <gtest/gtest.h>

namespace v41sim {
namespace {

ValidationRow row(const std::string& name, double error_pct, const std::string& model_lacks) {
  ValidationRow r;
  r.reference.name = name;
  r.reference.gpu = "h800";
  r.reference.metric = "us";
  r.reference.probe_kind = "gemm";
  r.reference.value = 100;
  r.reference.tolerance_pct = 10;
  r.reference.model_lacks = model_lacks;
  r.predicted = 100 + error_pct;
  r.error_pct = error_pct;
  r.within_tolerance = std::abs(error_pct) <= 10;
  return r;
}

TEST(ValidationTable, MissesSayWhatTheModelLacks) {
  const std::string text =
      validation_table({row("hit", 3, "a gap that does not show here"),
                        row("explained miss", -14, "a second GEMM family"), row("unexplained miss", 12, "")})
          .to_text();
  EXPECT_NE(text.find("a second GEMM family"), std::string::npos) << text;
  EXPECT_NE(text.find("not explained"), std::string::npos) << text;
  EXPECT_EQ(text.find("a gap that does not show here"), std::string::npos) << text;
  EXPECT_NE(text.find("1 of 3 within tolerance; misses: 1 with what the model lacks there, 1 not explained"),
            std::string::npos)
      << text;
  const auto json = validation_json({row("explained miss", -14, "a second GEMM family")});
  EXPECT_EQ(json["references"][0]["model_lacks"], "a second GEMM family");
}

}  // namespace
}  // namespace v41sim
