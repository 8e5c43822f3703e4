#include "sim/cost/gpu_cost_model.h"

#include <filesystem>

#include "sim/cost/cost_params.h"
#include "sim/hw/gpu_profile_loader.h"

namespace v41sim {

GpuCostModel::GpuCostModel(const std::string& data_dir, const std::string& gpu_file, bool cuda_graph,
                           bool priors_only)
    : gpu_(load_gpu_profile_file(gpu_file)),
      cost_(
          gpu_,
          load_calibration_for(data_dir, gpu_, std::filesystem::path(gpu_file).stem().string(), priors_only),
          cuda_graph) {}

std::vector<std::string> GpuCostModel::files_read(const std::string& data_dir) const {
  namespace fs = std::filesystem;
  const CostParams& params = cost_.params();
  std::vector<std::string> files{gpu_.file, (fs::path(data_dir) / params.file).string()};
  for (const std::string& stem : {params.extrapolated_from, params.efficiencies_measured_on}) {
    const fs::path profile = fs::path(data_dir) / "hw_profiles" / (stem + ".yaml");
    if (!stem.empty() && fs::exists(profile)) files.push_back(profile.string());
  }
  return files;
}

}  // namespace v41sim
