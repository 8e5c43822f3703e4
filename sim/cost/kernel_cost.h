// KernelCostModel: the cycle-approximate time of one kernel on one GPU.
//
// Not a bare roofline. A kernel is cut into CTA tiles (tile shape per kernel
// class; small GEMMs split their K dimension to fill the SMs), the tiles are
// dealt in waves over the SMs, and each tile takes the longer of its FLOPs on
// one SM's share of the tensor (or vector) rate and its bytes on its share of
// HBM bandwidth: the share grows when few tiles run, up to what one SM can
// draw. So a 133-tile GEMM on 132 SMs takes two waves, and a decode GEMM with
// four tiles cannot use the whole memory system. Add the launch overhead (or
// CUDA-graph replay) and the kernel's bound is whichever term dominated.
// Transfers (EP all-to-all, host copies) are timed on their links instead.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "sim/cost/cost_params.h"
#include "sim/graph/kernel.h"
#include "sim/hw/gpu_profile.h"

namespace v41sim {

enum class Bound { kCompute, kMemory, kLaunch, kTail, kLink };
std::string_view bound_name(Bound bound);

struct KernelTiming {
  double time_us = 0;      // wall time on its stream, overhead included
  double busy_us = 0;      // tiles (or transfer) only
  double overhead_us = 0;  // launch or graph replay
  double roofline_us = 0;  // ideal time with perfect division over the SMs
  int64_t tiles = 0;
  int64_t waves = 0;
  Bound bound = Bound::kMemory;
  bool math_fallback = false;  // FP4 math ran at the FP8 rate (no FP4 tensor cores)
};

class KernelCostModel {
 public:
  KernelCostModel(const GpuProfile& gpu, CostParams params, bool cuda_graph);

  // Same kernel, same answer; repeated shapes are served from a cache.
  KernelTiming time(const Kernel& kernel) const;
  const CostParams& params() const { return params_; }
  const GpuProfile& gpu() const { return gpu_; }
  double sm_count() const { return sms_; }

 private:
  KernelTiming compute_kernel(const Kernel& kernel) const;
  KernelTiming transfer(const Kernel& kernel) const;
  double tensor_rate(MathType math, bool* fallback) const;

  const GpuProfile& gpu_;
  CostParams params_;
  bool cuda_graph_;
  double sms_;
  double hbm_bytes_per_s_;
  double l2_bytes_;
  // Everything the timing depends on, compared exactly (a hash alone could collide).
  struct CacheKey {
    std::array<uint64_t, 12> fields;
    bool operator==(const CacheKey&) const = default;
  };
  struct CacheKeyHash {
    std::size_t operator()(const CacheKey& key) const;
  };
  static CacheKey key_of(const Kernel& kernel);
  mutable std::unordered_map<CacheKey, KernelTiming, CacheKeyHash> cache_;
};

}  // namespace v41sim
