// The published bands file (validation/calibration/published_bands.yaml):
// a malformed one is refused with file, line and field, never half-read.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/common/input_error.h"
#include "sim/cost/published_bands.h"

namespace v41sim {
namespace {

namespace fs = std::filesystem;

TEST(BadPublishedBands, MalformedFileIsRefusedWithWhereAndWhat) {
  const fs::path file = fs::temp_directory_path() / "v41sim_bad_published_bands.yaml";
  const std::string head =
      "source: \"test\"\nmeasured_on: h800\narchitecture: hopper\nmin_references: 5\ninputs: []\nclasses:\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"  tensor_magic: {band_90_pct: 1, references: 6, set_priors: 1}\n", "unknown kernel class"},
      {"  gemm: {band_90_pct: 1, references: 3, set_priors: 1}\n", "at least min_references"},
      {"  gemm: {band_90_pct: 1, references: 6, set_priors: 7}\n", "at most references"},
      {"  gemm: {band_90_pct: -1, references: 6, set_priors: 1}\n", "band_90_pct"},
      {"  gemm: {band_90_pct: 1, references: 6}\n", "set_priors"},
  };
  for (const auto& [line, expected] : cases) {
    SCOPED_TRACE(line);
    std::ofstream(file) << head << line;
    try {
      load_published_bands_file(file.string());
      FAIL() << "accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().file, file.string());
      EXPECT_EQ(e.where().line, 7);
      EXPECT_NE((e.where().field + " " + e.what()).find(expected), std::string::npos)
          << e.where().field << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace v41sim
