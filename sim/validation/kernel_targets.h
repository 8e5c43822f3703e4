// The performance targets our ground-truth kernels are held to (the CUDA
// kernels issue), checked against a measured file: the memory-bound kernels'
// share of the device's measured copy bandwidth, the expert GEMM's share of
// the measured dense FP8 rate at prefill shapes, and the fused mHC pass moving
// about half the bytes of the three-kernel form, being faster by a matching
// margin and streaming as a memory-bound kernel (its projection hidden, as the
// simulator assumes). Every figure comes from the file: the rows and the
// ceilings the harness measured on the same GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/validation/measurement_file.h"

namespace v41sim {

struct TargetResult {
  std::string target;    // what is asked, in words
  std::string measure;   // what is compared, e.g. "share of the copy ceiling"
  double threshold = 0;  // the bound the measure must reach (see `at_least`)
  bool at_least = true;  // true: measure >= threshold; false: measure <= threshold
  int rows = 0;          // rows the target applies to (0: not measured)
  double worst = 0;      // the least favourable row's measure
  double best = 0;
  std::string worst_row;  // "kernel m x n x k x batch, context" of the worst row
  // The worst row's roofline: the highest measure its FLOPs per byte allow
  // when the other resource runs at the file's ceiling (sparse decode: the
  // dense BF16 rate, as its math is BF16 on tensor cores; expert GEMM: the
  // copy bandwidth). Below the threshold, the target cannot be met at that
  // shape by any kernel, which says whether a miss is the kernel's or the
  // target's. Absent for targets where one resource alone sets the rate.
  std::optional<double> worst_roofline;
  bool met = false;  // every row meets the threshold (false when no rows)
};

// Throws InputError naming the file and the metadata field when a ceiling the
// targets need is missing.
// `query_heads`: the model's attention heads (a decode row's m is batch x heads).
std::vector<TargetResult> evaluate_kernel_targets(const MeasurementSet& measurements, int64_t query_heads);

}  // namespace v41sim
