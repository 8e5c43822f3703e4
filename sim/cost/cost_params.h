// CostParams: the free parameters of the kernel cost model, per kernel class
// (tile shape, achieved fractions of the tensor rate and of HBM bandwidth) and
// per link, each a SourcedValue. Read from validation/calibration/<gpu>.yaml
// when that GPU has been calibrated, else from the published priors in
// validation/calibration/defaults.yaml, and labelled accordingly.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "sim/common/sourced_value.h"
#include "sim/cost/rate_transfer.h"
#include "sim/graph/kernel.h"
#include "sim/hw/gpu_profile.h"

namespace v41sim {

// A class that fills the SMs by narrowing its tiles rather than splitting the
// reduction (DeepGEMM): rows tile_m_min where the GEMM has no more, else
// tile_m; columns from tile_n_min to tile_n in steps of tile_n_step, the
// fewest waves first, then the fullest last wave, then the narrowest.
struct TileNarrowing {
  int64_t tile_m_min = 1;
  int64_t tile_n_min = 1;
  int64_t tile_n_step = 1;
};

// A GEMM tile streams its operands through a ring of shared-memory stages:
// each holds k_block_bytes of every row-operand row (and as many K values of
// every weight row) and is refilled a memory latency after it is freed, so one
// SM draws at most the bytes of its stages per latency (Little's law), and the
// first stage arrives a latency after the kernel starts.
struct LoadPipeline {
  int64_t stages = 1;
  int64_t shared_memory_bytes = 1;  // what the stages may use at most
  int64_t k_block_bytes = 1;
  // A tile whose columns straddle two weight-scale blocks of scale_block_n
  // columns (block N does not divide it) keeps more scales per stage and
  // runs straddling_stages instead.
  int64_t scale_block_n = 1;
  int64_t straddling_stages = 1;
};

// The tile of a weight-only (W4A16) kernel, as Marlin's: activation rows up
// to m (its M blocks cover an expert's rows), n weight columns, never
// narrowed or split, its narrow weights widened in every M tile.
struct WeightOnlyTile {
  int64_t m = 1;
  int64_t n = 1;
};

struct ClassCost {
  int64_t tile_m = 1;
  int64_t tile_n = 1;
  int64_t split_min = 1;                           // smallest slice of the reduction dimension per split
  std::optional<TileNarrowing> narrowing;          // absent: split to fill the SMs
  std::optional<WeightOnlyTile> weight_only_tile;  // a class whose GEMMs W4A16 engines run (grouped)
  std::optional<LoadPipeline> pipeline;            // absent: bandwidth shares alone
  SourcedValue compute_efficiency;
  SourcedValue memory_efficiency;
  // Device-side start-up cost of one kernel (prologue, tail of the last wave's
  // epilogue), on top of launch or graph replay; fitted from measurements.
  std::optional<SourcedValue> fixed_overhead_us;
  // Share of a GEMM epilogue's output write hidden under the main loop (a
  // persistent kernel storing one tile while computing the next); absent: all.
  // Fitted with the efficiencies where the priors give a class one.
  std::optional<SourcedValue> epilogue_overlap;
  // Share of the CUDA-core widening of narrow operands (NarrowValues) hidden
  // under the tensor math: 1 takes the longer of the two, 0 their sum (the
  // warps that widen a tile also wait for it before their MMAs); absent: 1.
  std::optional<SourcedValue> widening_overlap;
  // Share of the CUDA cores' compare rate a kernel's fold of its accumulators
  // (Kernel::folded_values) reaches: required of the classes whose kernels
  // fold (the indexer); the widening runs at the compute efficiency instead.
  std::optional<SourcedValue> fold_efficiency;
  // How a tile combines its math and its loads: absent, the longer of the
  // two; p, their p-norm (kernel_cost.cpp balanced()). At least 1.
  std::optional<SourcedValue> balance_exponent;
  // 90th percentile of |relative error| on the held-out shapes of a fitted
  // class (percent); for a class no measurement calibrated, the priors' error
  // on published figures (published_bands.h) where enough exist; else absent.
  std::optional<SourcedValue> error_band_pct;
  // The band is the priors' error on published figures, already widened for
  // this GPU (published_bands.h), not a fit to our measurements.
  bool error_band_from_published = false;
};

// How far a calibration carries to a GPU that was not measured: its class
// bands widen by these (named assumptions in defaults.yaml).
struct TransferRule {
  SourcedValue same_architecture_extra_pct;   // e.g. H200 -> H20
  SourcedValue cross_architecture_extra_pct;  // e.g. Hopper -> Blackwell
};

enum class Extrapolation { kNone, kSameArchitecture, kCrossArchitecture };

// What widening a narrow value on the CUDA cores costs, in SM cycles per
// value: FP8 -> BF16 as published; the FP4 widenings from our kernels'
// instruction counts over the architecture's instruction throughputs. The SM
// clock is the FP32 vector rate over 2 FLOPs x fp32_lanes_per_sm.
struct WideningCost {
  SourcedValue fp32_lanes_per_sm;
  SourcedValue integer_ops_per_clock;    // 32-bit integer / logic / byte-permute instructions per SM
  SourcedValue bf16x2_ops_per_clock;     // BF16x2 multiply instructions per SM
  SourcedValue fp8_to_bf16_cycles;       // e4m3 -> BF16, block scale applied
  SourcedValue fp4_to_fp8_integer_ops;   // per 4 values, e2m1 -> e4m3 for FP8 tensor math
  SourcedValue fp4_to_bf16_integer_ops;  // per 4 values, e2m1 -> BF16 ...
  SourcedValue fp4_to_bf16_multiplies;   // ... and its BF16x2 scale multiplies per 4 values
  SourcedValue compare_ops_per_clock;    // FP32 compare / min / max instructions per SM

  double fp4_to_fp8_cycles() const {
    return fp4_to_fp8_integer_ops.value() / 4.0 / integer_ops_per_clock.value();
  }
  // A folded value's max runs at the compare rate; its multiply-add goes to
  // the FMA pipe, at twice that rate, beside it.
  double fold_cycles() const { return 1.0 / compare_ops_per_clock.value(); }
  double fp4_to_bf16_cycles() const {
    return (fp4_to_bf16_integer_ops.value() / integer_ops_per_clock.value() +
            fp4_to_bf16_multiplies.value() / bf16x2_ops_per_clock.value()) /
           4.0;
  }
};

struct LinkCost {
  SourcedValue nvlink_efficiency;

  SourcedValue nic_efficiency;
  SourcedValue host_link_efficiency;
  SourcedValue all_to_all_latency_intra_us;
  SourcedValue all_to_all_latency_inter_us;
  SourcedValue all_to_all_latency_low_latency_us;  // decode's low-latency EP kernels, any span
  SourcedValue host_copy_latency_us;
  SourcedValue normal_transfer_sms;  // SMs a normal-mode EP transfer holds while it runs
};

// The model's throughput on what serving engines published (whole forward
// steps, or whole serving benchmarks) over the engines' own, percent
// (positive: the model is faster than they ran).
struct ThroughputErrors {
  int references = 0;
  double least_pct = 0;
  double most_pct = 0;
};

struct CostParams {
  std::string file;
  std::string status;  // "uncalibrated" or "calibrated"
  std::string source;
  double held_out_mape_pct = -1;  // calibrated files: the worst class's held-out MAPE
  // The GPU this file was calibrated on (or, for the priors, published on) when it is not this one.
  std::string extrapolated_from;
  Extrapolation extrapolation = Extrapolation::kNone;
  // The GPU the priors' efficiencies were published on (defaults.yaml), and where that field is.
  std::string efficiencies_measured_on;
  InputLocation efficiencies_measured_on_at;
  // Set where the efficiencies come from a GPU of this architecture with other
  // per-SM tensor rates (rate_transfer.h): compute efficiencies are carried over.
  std::optional<PerSmRateRatio> per_sm_rate_ratio;
  // How the priors did on whole forward steps that serving engines published
  // (published_bands.h); set on the priors alone, which those steps tested.
  std::optional<ThroughputErrors> whole_steps;
  // And on whole serving benchmarks (probe kind serving, throughput figures).
  std::optional<ThroughputErrors> serving_benchmarks;
  TransferRule transfer;
  SourcedValue launch_overhead_us;
  SourcedValue graph_replay_overhead_us;
  SourcedValue sm_bandwidth_multiple;
  SourcedValue l2_bandwidth_multiple;  // L2 read bandwidth over HBM bandwidth
  SourcedValue l2_resident_fraction;   // share of L2 a re-read working set may occupy and still hit
  SourcedValue memory_latency_us;      // a load's round trip under load (LoadPipeline)
  bool split_to_fill_sms = true;
  WideningCost widening;
  LinkCost links;
  std::array<ClassCost, kKernelClassCount> classes;

  const ClassCost& of(KernelClass kernel_class) const {
    return classes[static_cast<std::size_t>(kernel_class)];
  }
  // The class's achieved fraction of the tensor (or vector) rate for `math` on this GPU.
  double compute_efficiency(KernelClass kernel_class, MathType math) const;
  std::string label() const;  // "uncalibrated (validation/calibration/defaults.yaml)"
  // The class's error band at 90% (percent) on this GPU, the transfer's
  // widening included; nullopt where the class has none.
  std::optional<double> error_band_pct(KernelClass kernel_class) const;
};

CostParams load_cost_params_file(const std::string& path);

// Which calibration a GPU uses: its own file; else a calibrated GPU of the
// same architecture (first by name; "extrapolated from" it); else a calibrated
// GPU of another architecture (first by name, with the wider cross-architecture
// band); else the priors.
struct CalibrationChoice {
  std::string path;
  std::string extrapolated_from;  // hw_profiles stem of the calibrated GPU, or ""
  Extrapolation extrapolation = Extrapolation::kNone;
};
CalibrationChoice choose_calibration(const std::string& data_dir, const std::string& gpu_stem,
                                     const std::string& architecture);
CostParams load_calibration(const CalibrationChoice& choice);

// The calibration a GPU uses (choose_calibration, load_calibration), with its
// compute efficiencies carried over by per-SM tensor rate where they were
// measured on another GPU of the same architecture (the priors' reference GPU,
// or the GPU a calibration is extrapolated from).
// Classes it leaves without a band get the priors' published band
// (published_bands.h) where the data directory has that file. With
// priors_only, the priors are used whatever calibrations exist (as the
// published bands are derived).
CostParams load_calibration_for(const std::string& data_dir, const GpuProfile& gpu,
                                const std::string& gpu_stem, bool priors_only = false);

}  // namespace v41sim
