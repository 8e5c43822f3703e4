// KernelCostModel: the cycle-approximate time of one kernel on one GPU.
//
// Not a bare roofline. A kernel is cut into CTA tiles (tile shape per kernel
// class; small GEMMs split their K dimension to fill the SMs, or, in a class
// that narrows its tiles as DeepGEMM does, take narrower tiles), the tiles are
// dealt in waves over the SMs, and each tile takes the longer of its FLOPs on
// one SM's share of the tensor (or vector) rate and its bytes on its share of
// HBM bandwidth: the share grows when few tiles run, up to what one SM can
// draw. So a 133-tile GEMM on 132 SMs takes two waves, and a decode GEMM with
// four tiles cannot use the whole memory system. A GEMM tile also waits on
// its load pipeline: its shared-memory stages are refilled once per memory
// latency, which bounds narrow tiles that re-read their activations. Add the launch overhead (or
// CUDA-graph replay) and the kernel's bound is whichever term dominated.
// Narrow operands the tensor cores cannot take as stored (FP8 or FP4 cache
// entries into BF16 math; FP4 weights on Hopper) are widened on the CUDA
// cores first, at the architecture's instruction throughput: that time
// overlaps the tile's tensor math as far as the class says.
// Transfers (EP all-to-all, host copies) are timed on their links instead.
#pragma once

#include <absl/hash/hash.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "sim/cost/cost_params.h"
#include "sim/graph/kernel.h"
#include "sim/hw/gpu_profile.h"

namespace v41sim {

// kWidening: the CUDA cores widening narrow operands for the tensor cores
// took longer than the tensor math and the memory traffic; kFold: the CUDA
// cores folding the tensor math's accumulators into the output (the
// indexer's ReLU and head weights) did. kLatency: a tile's
// load pipeline (its stages per memory latency) took longer than both.
enum class Bound { kCompute, kMemory, kWidening, kFold, kLatency, kLaunch, kTail, kLink };
std::string_view bound_name(Bound bound);

struct KernelTiming {
  double time_us = 0;      // wall time on its stream, overhead included
  double busy_us = 0;      // tiles (or transfer) only
  double overhead_us = 0;  // launch or graph replay
  double roofline_us = 0;  // ideal time with perfect division over the SMs
  // The terms, each as if alone over the whole GPU (at the class's
  // efficiencies): tensor (or vector) math, HBM traffic, the part of that
  // traffic outside the tiles' main loops, and CUDA-core widening.
  double math_us = 0;
  double memory_us = 0;
  double edge_us = 0;
  double widening_us = 0;
  double fold_us = 0;  // CUDA-core fold of the accumulators (Kernel::folded_values)
  // GEMM tiles' load pipelines: a latency per ring of stages per wave, and
  // the first fill (LoadPipeline); zero where the class models none.
  double pipeline_us = 0;
  int64_t tile_m = 0;  // the tile used (a narrowing class picks it per kernel), clipped to the shape
  int64_t tile_n = 0;
  int64_t tiles = 0;
  int64_t waves = 0;
  Bound bound = Bound::kMemory;
  bool math_fallback = false;  // FP4 math ran at the FP8 rate (no FP4 tensor cores)
  bool widened_ahead = false;  // GEMM: weights widened by a pass of their own first
};

class KernelCostModel {
 public:
  KernelCostModel(const GpuProfile& gpu, CostParams params, bool cuda_graph);

  // Same kernel, same answer; a kernel timed lately is served from the
  // thread's recent kernels (safe to call from several threads at once).
  KernelTiming time(const Kernel& kernel) const;
  // Each kernel's timing, as time() gives it, in their order.
  std::vector<KernelTiming> time(std::span<const Kernel> kernels) const;
  const CostParams& params() const { return params_; }
  const GpuProfile& gpu() const { return gpu_; }
  double sm_count() const { return sms_; }
  // The share of this GPU's SMs a normal-mode EP transfer holds while it runs.
  double normal_transfer_sm_share() const { return params_.links.normal_transfer_sms.value() / sms_; }

 private:
  struct TileShape {
    int64_t m;
    int64_t n;
    // The part of the tile a kernel of this shape fills.
    TileShape over(const KernelShape& s) const { return {std::min(m, s.m), std::min(n, s.n)}; }
  };
  TileShape tile_shape(const Kernel& kernel, const ClassCost& cls) const;
  // Slices of the reduction each tile is cut into to fill the SMs (1: none).
  int64_t split_count(const Kernel& kernel, const ClassCost& cls, TileShape tile, int64_t tiles) const;
  static Bound bound_of(const KernelTiming& timing, bool stream_bound, bool memory_side);
  double pipeline_seconds(const Kernel& kernel, const ClassCost& cls, TileShape tile, int64_t k_slice) const;
  KernelTiming timed(const Kernel& kernel) const;  // computed, not looked up
  KernelTiming compute_kernel(const Kernel& kernel) const;
  // The tile/wave timing with `widen_cycles` of CUDA-core widening spread over the tiles.
  KernelTiming tiled(const Kernel& kernel, TileShape tile, double widen_cycles) const;
  // A GEMM after a pass of its own that widens its weights (`cycles` for one pass).
  KernelTiming widened_ahead(const Kernel& kernel, TileShape tile, double cycles) const;
  KernelTiming transfer(const Kernel& kernel) const;
  double tensor_rate(MathType math, bool* fallback) const;
  // SM cycles, all SMs together, to widen what the kernel's math cannot take
  // as stored, for one pass over its narrow operands.
  double widening_cycles(const Kernel& kernel) const;
  // SM cycles per second one SM spends widening for this class.
  double widening_rate(const ClassCost& cls) const;
  // The share of the CUDA cores' rate a kernel's fold reaches (its class's).
  static double fold_efficiency(const Kernel& kernel, const ClassCost& cls);

  const GpuProfile& gpu_;
  CostParams params_;
  bool cuda_graph_;
  double sms_;
  double hbm_bytes_per_s_;
  double l2_bytes_;
  double sm_cycles_per_s_;  // the SM clock, from the FP32 vector rate
  // Everything the timing depends on, compared exactly (a hash alone could collide).
  struct CacheKey {
    std::array<uint64_t, 18> fields;
    bool operator==(const CacheKey&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const CacheKey& key) {
      return H::combine_contiguous(std::move(h), key.fields.data(), key.fields.size());
    }
  };
  static CacheKey key_of(const Kernel& kernel);
  // A thread's recently timed kernels (kernel_cost.cpp).
  struct RecentKernels;
  static RecentKernels& recent_kernels();
  static uint64_t new_serial();
  // Names this model in the threads' recent kernels (an address could be reused).
  uint64_t serial_ = new_serial();
};

}  // namespace v41sim
