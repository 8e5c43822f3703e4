// Calibration: fit the kernel model's free parameters per kernel class to
// measured kernel times, and say how wrong the fitted model is on shapes it
// did not see.
//
// Per class, three continuous parameters: the achieved fraction of the tensor
// (or vector) rate, the achieved fraction of HBM bandwidth, and a fixed
// device-side overhead per kernel; and one discrete one, the tile shape (the
// prior's, or half or twice it per dimension: it sets the wave quantization;
// fitted only with at least 8 training shapes). They are fitted with Eigen's
// Levenberg-Marquardt on the relative error of the predicted kernel time
// (the full tile-and-wave model, so wave quantization is in the fit), on a
// training split: every fourth shape of a class, in a fixed order, is held
// out and only used to report the error.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/cost/cost_params.h"
#include "sim/cost/kernel_cost.h"
#include "sim/hw/gpu_profile.h"
#include "sim/validation/measurement_file.h"

namespace v41sim {

struct ClassFit {
  KernelClass kernel_class = KernelClass::kGemm;
  int train_rows = 0;
  int held_out_rows = 0;
  int64_t tile_m = 0;  // tile shape chosen by the fit (the prior's, or half or twice it per dimension)
  int64_t tile_n = 0;
  double compute_efficiency = 0;
  double memory_efficiency = 0;
  double fixed_overhead_us = 0;
  std::optional<double>
      epilogue_overlap;  // GEMM classes: share of the output write hidden under the main loop
  // Share of the CUDA-core widening hidden under the tensor math, where the
  // rows can show it (some widen narrow operands on this GPU, in varying shares).
  std::optional<double> widening_overlap;
  double train_mape_pct = 0;
  double held_out_mape_pct = 0;   // mean |error|
  double held_out_worst_pct = 0;  // largest |error|
  double held_out_bias_pct = 0;   // mean signed error (+: model slower than measured)
  double band_90_pct = 0;         // 90th percentile of |error| on the held-out shapes (training, if none)
};

// Rows whose kernel name ends in "_baseline" time a correctness-first
// implementation (e.g. on FP32 units where the simulator models tensor cores):
// recorded and reported, never fitted, so they cannot drag a class's
// efficiencies toward a kernel the simulator does not model.
bool is_baseline_row(const Measurement& m);

// The split the fit uses within a class: rows in a fixed order (by name and
// shape), every fourth held out. validate reports the held-out rows.
struct RowSplit {
  std::vector<const Measurement*> train;
  std::vector<const Measurement*> held_out;
};
RowSplit split_rows(std::vector<const Measurement*> rows);

// What a measured row is compared with: the kernel model's device time (no
// launch overhead: the harness times kernels on the device with CUDA events).
double predicted_device_us(const KernelCostModel& model, const Measurement& m);

struct CalibrationResult {
  std::string gpu;
  int baseline_rows = 0;          // measured but not fitted (is_baseline_row)
  std::vector<ClassFit> classes;  // classes with measurements, in class order
  CostParams params;              // the priors with the fitted classes replaced
};

CalibrationResult calibrate(const MeasurementSet& measurements, const GpuProfile& gpu,
                            const CostParams& priors);

// The calibration file: same inputs, same bytes.
std::string calibration_yaml(const CalibrationResult& result, const MeasurementSet& measurements,
                             const CostParams& priors);

}  // namespace v41sim
