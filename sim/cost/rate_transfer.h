// Carrying a compute efficiency to a GPU of the same architecture whose tensor
// cores run at another rate per SM. The H20 is a GH100 with its tensor rate
// capped by firmware to about a quarter of an H800's per SM; a GEMM that
// reaches 72% of an H800's peak reaches far more of the H20's, because the
// part of its time that is not tensor-core work (loads, synchronisation,
// epilogue, tails) is per-SM work the cap does not slow.
//
// Model (named assumption, defaults.yaml `transfer:`): a kernel's time is its
// tensor-core time plus other per-SM time, not overlapped. With efficiency
// e on the reference GPU and c = this GPU's per-SM tensor rate / the
// reference's, the other time is (1/e - 1) tensor-times on the reference, so
// here e' = 1 / (1 + c (1/e - 1)). c = 1 (H100, H200, H800) leaves e as is.
#pragma once

#include <optional>
#include <string>

#include "sim/graph/kernel.h"
#include "sim/hw/gpu_profile.h"

namespace v41sim {

struct PerSmRateRatio {
  std::string reference_gpu;  // the GPU the efficiencies were measured on
  double fp8 = 1.0;           // this GPU's dense FP8 rate per SM over the reference's
  double bf16 = 1.0;
  double for_math(MathType math) const;  // FP4 on Hopper runs at the FP8 rate; FP32 units are not capped: 1
};

// nullopt where the rule does not apply: another architecture (its own
// transfer band covers it), or the same per-SM rates.
std::optional<PerSmRateRatio> per_sm_rate_ratio(const GpuProfile& gpu, const GpuProfile& reference,
                                                const std::string& reference_stem);

double transfer_compute_efficiency(double efficiency, double per_sm_rate_ratio);

}  // namespace v41sim
