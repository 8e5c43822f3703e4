// Calibrating the committed measurements reproduces the committed calibration
// files byte for byte: nobody edited a fitted file, and the fit is
// deterministic. Skips (visibly) until a GPU session has committed any
// measurements under validation/measurements/<gpu>/.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/cost/cost_params.h"
#include "sim/hw/gpu_profile_loader.h"
#include "sim/validation/calibration_fit.h"
#include "sim/validation/measurement_file.h"

namespace v41sim {
namespace {

namespace fs = std::filesystem;

TEST(CommittedCalibration, RecalibratingTheMeasurementsGivesTheSameFiles) {
  const fs::path root(V41SIM_SOURCE_DIR);
  const fs::path measurements = root / "validation" / "measurements";
  const CostParams priors =
      load_cost_params_file((root / "validation" / "calibration" / "defaults.yaml").string());
  int checked = 0;
  for (const std::string& dir : measured_gpu_dirs(root.string())) {
    const std::string gpu_stem = fs::path(dir).filename().string();
    SCOPED_TRACE(gpu_stem);
    const fs::path committed = root / "validation" / "calibration" / (gpu_stem + ".yaml");
    ASSERT_TRUE(fs::exists(committed))
        << "measurements without a calibration: run v41sim calibrate --measurements " << dir;
    const MeasurementSet set = load_measurements(dir);
    const GpuProfile gpu = load_gpu_profile_file((root / "hw_profiles" / (gpu_stem + ".yaml")).string());
    require_measured_on(set, gpu_stem, gpu);  // the folder's profile is the GPU they came from
    std::stringstream text;
    text << std::ifstream(committed).rdbuf();
    EXPECT_EQ(calibration_yaml(calibrate(set, gpu, priors), set, priors), text.str());
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no measurements committed yet under " << measurements.string();
}

}  // namespace
}  // namespace v41sim
