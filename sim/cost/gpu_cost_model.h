// GpuCostModel: a GPU profile and the kernel cost model that refers to it,
// loaded together (with that GPU's calibration file, or the priors).
#pragma once

#include <string>
#include <vector>

#include "sim/cost/kernel_cost.h"
#include "sim/hw/gpu_profile.h"

namespace v41sim {

class GpuCostModel {
 public:
  // priors_only: the published priors, whatever calibrations exist (load_calibration_for).
  GpuCostModel(const std::string& data_dir, const std::string& gpu_file, bool cuda_graph,
               bool priors_only = false);
  GpuCostModel(const GpuCostModel&) = delete;
  GpuCostModel& operator=(const GpuCostModel&) = delete;

  const GpuProfile& gpu() const { return gpu_; }
  const KernelCostModel& cost() const { return cost_; }
  // The files it was loaded from: the GPU profile, its calibration and the
  // profile of the GPU that calibration was measured or published on.
  std::vector<std::string> files_read(const std::string& data_dir) const;

 private:
  GpuProfile gpu_;
  KernelCostModel cost_;  // holds a reference to gpu_, declared after it
};

}  // namespace v41sim
