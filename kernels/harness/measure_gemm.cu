// GEMMs at V4.1's shapes: the experts of a rank as one launch (our W4A8
// kernel, and cuBLASLt on weights widened to FP8; our W4A16 kernel, the other
// engine choice), and the dense FP8 and BF16 projections of a layer on cuBLASLt.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/checks/device_checks.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/gpu_timer.h"
#include "kernels/common/v41_shapes.h"
#include "kernels/gemm/expert_gemm.h"
#include "kernels/gemm/expert_gemm_w4a16_tiling.h"
#include "kernels/gemm/expert_gemm_w4a8_tiling.h"
#include "kernels/gemm/expert_gemm_w4a8_wgmma_tiling.h"
#include "kernels/harness/device_fill.h"
#include "kernels/harness/dispatched_names.h"
#include "kernels/harness/measure_groups.h"

namespace v41sim::kernels {

// Expert GEMMs at V4.1's shapes, a rank's experts as one launch with uniform
// routing, as the simulator's grouped GEMM counts them (m rows per expert,
// batch = experts; bytes with the weights as FP4). Decode: the 48 local
// experts of EP 8 with a few rows each (4 rows is a batch of 32 per rank:
// 32 x 8 ranks x top-6 / 384 experts); prefill: fewer, fuller groups. Up to
// four complete paths per shape, as an engine would dispatch by shape:
//  - our W4A8 kernel on mma.sync, the FP4 weights read as FP4;
//  - our W4A8 kernel on wgmma (Hopper, 64 rows an expert and more), the
//    same reads, the weights widened in shared memory, in either schedule
//    (every warpgroup in step, or warp-specialized); each only where its
//    check passed on this device;
//  - the weights widened to FP8 in memory, then cuBLASLt's FP8 GEMM, both
//    timed (m a multiple of 16).
// The fastest one's row carries the simulator's kernel name and is fitted;
// the others are recorded as "*_w4a8_baseline", "*_w4a8_wgmma_baseline",
// "*_w4a8_wgmma_ws_baseline" or "*_fp8_widened_baseline".
namespace {

struct TimedPath {
  const char* suffix;  // of its baseline row's name
  TimingStats time;
  std::string tiling;
  std::string name;  // its row's (name_competing_paths)
};

// cuBLASLt on weights widened to FP8 in memory, the widening timed with it;
// none where cuBLASLt has no algorithm for the shape.
std::optional<TimingStats> time_widened_path(const ExpertGemmW4A8& gemm) {
  constexpr int kLargestScaleExponent = kWeightScaleCodeMax - 127;  // the widened path's tensor scale
  const int64_t e = gemm.experts, m = gemm.m, n = gemm.n, k = gemm.k;
  const DeviceBuffer<uint8_t> w8(static_cast<std::size_t>(e * n * k));
  const DeviceBuffer<float> scales(std::vector<float>{std::ldexp(1.0f, kLargestScaleExponent), 1.0f});
  try {
    const GemmPlan plan(GemmOperands::kFp8E4M3, w8.get(), gemm.activations, gemm.out, scales.get(),
                        scales.get() + 1, m, n, k, e);
    const TimingStats t = time_kernel(
        [&](int) {
          widen_expert_weights_to_fp8(gemm.packed_weights, gemm.weight_scales, w8.get(), e * n, k,
                                      kLargestScaleExponent);
          plan.run();
        },
        kWarmup, kRuns);
    CUDA_CHECK(cudaGetLastError());
    return t;
  } catch (const std::runtime_error& refused) {  // cuBLASLt has no algorithm: W4A8 only
    std::printf("  cuBLASLt path skipped: %s\n", refused.what());
    return std::nullopt;
  }
}

// Times every path that serves the shape.
std::vector<TimedPath> time_expert_paths(const ExpertGemmW4A8& gemm, const WgmmaPathsPassed& wgmma) {
  std::vector<TimedPath> paths;
  paths.push_back({"w4a8", time_kernel([&](int) { run_expert_gemm_w4a8(gemm); }, kWarmup, kRuns),
                   std::to_string(w4a8::block_rows(gemm.m)) + "x" + std::to_string(w4a8::kBlockN)});
  CUDA_CHECK(cudaGetLastError());
  const std::string wgmma_tiles =
      std::to_string(w4a8::wgmma_tiles::kTileM) + "x" + std::to_string(w4a8::wgmma_tiles::kTileN);
  struct WgmmaPath {
    const char* suffix;
    WgmmaSchedule schedule;
    bool passed;
  };
  for (const WgmmaPath& path :
       {WgmmaPath{"w4a8_wgmma", WgmmaSchedule::kLockstep, wgmma.lockstep},
        WgmmaPath{"w4a8_wgmma_ws", WgmmaSchedule::kWarpSpecialized, wgmma.warp_specialized}}) {
    if (!path.passed || gemm.m < w4a8::wgmma_tiles::kTileM / 2) continue;
    paths.push_back(
        {path.suffix,
         time_kernel([&](int) { run_expert_gemm_w4a8_wgmma(gemm, path.schedule); }, kWarmup, kRuns),
         wgmma_tiles});
    CUDA_CHECK(cudaGetLastError());
  }
  if (gemm.m % 16 == 0) {
    // The widened path's GEMM is cuBLASLt's, which splits K.
    if (const std::optional<TimingStats> widened = time_widened_path(gemm))
      paths.push_back({"fp8_widened", *widened, "split"});
  }
  return paths;
}

// The expert GEMM's FLOPs and bytes (FP4 weights with their scales, the
// activations at `activation_bytes` a value, the FP32 output), and the row a
// path's time makes of them.
struct ExpertShape {
  int64_t experts, m, n, k;
  double flops() const { return 2.0 * static_cast<double>(experts * m) * static_cast<double>(n * k); }
  double output_bytes() const { return 4.0 * static_cast<double>(experts * m * n); }
  double bytes(int64_t activation_bytes) const {
    return static_cast<double>(experts * n * k / 2 + experts * n * k / kWeightScaleGroup) +
           static_cast<double>(experts * m * k * activation_bytes) + output_bytes();
  }
  Row row(const std::string& kernel, const char* math, int64_t activation_bytes, const TimingStats& t,
          const std::string& tiling) const {
    Row r{kernel,  "grouped_gemm",
          math,    m,
          n,       k,
          experts, 0,
          flops(), bytes(activation_bytes),
          t,       output_bytes(),
          0.0,     static_cast<double>(experts * n * k)};
    r.tiling = tiling;
    return r;
  }
};

void print_expert_row(const RowWriter& w, const Row& row, const char* path) {
  const double tflops = row.flops / row.time.median_us / 1e6;
  std::printf(
      "%s (%s) %lld experts x %lld rows (%lldx%lld): %.1f us, %.0f TFLOP/s (%.0f%% of dense %s), "
      "%.0f GB/s\n",
      row.kernel.c_str(), path, static_cast<long long>(row.batch), static_cast<long long>(row.m),
      static_cast<long long>(row.n), static_cast<long long>(row.k), row.time.median_us, tflops,
      100.0 * tflops / w.ceilings().for_math(row.math), row.math.c_str(),
      row.hbm_bytes / row.time.median_us / 1e3);
}

// Our W4A16 kernel on the same weights with BF16 activations: the W4A16
// engine choice (Marlin's kind). Up to 64 rows an expert (decode's shapes,
// one m-tile, bound by the weights' reads and their widening) its row is
// `<name>_w4a16` and fitted with the grouped class's BF16 rate and FP4-to-BF16
// widening; beyond, `<name>_w4a16_baseline`, recorded and not fitted: its
// 64 x 64 mma.sync tiles are a decode kernel's, and their share of the BF16
// rate would drag the class's compute efficiency (which its W4A8 wgmma rows
// set at prefill's shapes) toward a kernel no engine runs there.
void measure_w4a16(const RowWriter& w, const std::string& name, const ExpertShape& s, const uint8_t* packed,
                   const uint8_t* weight_scales, float* out) {
  const DeviceBuffer<uint16_t> a(static_cast<std::size_t>(s.experts * s.m * s.k));
  fill_bf16(a.get(), s.experts * s.m * s.k, 88);
  const ExpertGemmW4A16 gemm{a.get(), packed, weight_scales, out, s.experts, s.m, s.n, s.k};
  const TimingStats t = time_kernel([&](int) { run_expert_gemm_w4a16(gemm); }, kWarmup, kRuns);
  CUDA_CHECK(cudaGetLastError());
  const std::string tiling = std::to_string(w4a16::block_rows(s.m)) + "x" + std::to_string(w4a16::kBlockN);
  const bool decode_tile = s.m <= w4a16::Rows64::block_m;
  const Row row = s.row(name + (decode_tile ? "_w4a16" : "_w4a16_baseline"), "bf16", 2, t, tiling);
  w.row(row);
  print_expert_row(w, row, "w4a16");
}

}  // namespace

int measure_gemm(const RowWriter& w, bool quick, const WgmmaPathsPassed& wgmma_passed) {
  if (!passes("expert gemm w4a8", check_expert_gemm_w4a8()) || !passes("expert gemm", check_expert_gemm()))
    return 1;
  // The wgmma kernels are two paths of four: where one cannot run or fails
  // its check, the others are still timed. Passed alone, each is checked
  // again here (the same inputs), so no row is timed on a kernel that did not
  // pass in this process.
  WgmmaPathsPassed wgmma_ok;
  wgmma_ok.lockstep = wgmma_passed.lockstep && passes("expert gemm w4a8 wgmma",
                                                      check_expert_gemm_w4a8_wgmma(WgmmaSchedule::kLockstep));
  wgmma_ok.warp_specialized =
      wgmma_passed.warp_specialized && passes("expert gemm w4a8 wgmma (warp-specialized)",
                                              check_expert_gemm_w4a8_wgmma(WgmmaSchedule::kWarpSpecialized));
  // The W4A16 kernel is the other engine choice, not a path of these shapes:
  // where it fails its check, its rows alone are left out.
  const bool w4a16_ok = passes("expert gemm w4a16", check_expert_gemm_w4a16());
  struct Group {
    int64_t experts, rows;
  };
  const std::vector<Group> groups =
      quick ? std::vector<Group>{{48, 16}, {8, 512}}
            : std::vector<Group>{{48, 4},   {48, 8},  {48, 16},  {48, 32}, {48, 64},
                                 {48, 128}, {8, 512}, {8, 2048}, {1, 8192}};
  constexpr uint64_t kScaleSeed = 86;
  struct Shape {
    const char* name;
    int64_t n, k;
  };
  for (const Group& g : groups) {
    for (const Shape& s : {Shape{"expert_gate_up", 2 * kV41ExpertWidth, kV41Hidden},
                           Shape{"expert_down", kV41Hidden, kV41ExpertWidth}}) {
      const int64_t e = g.experts, m = g.rows;
      measure_shape(std::string(s.name) + " " + std::to_string(e) + " x " + std::to_string(m), [&] {
        const DeviceBuffer<uint8_t> packed(static_cast<std::size_t>(e * s.n * s.k / 2)),
            weight_scales(static_cast<std::size_t>(e * s.n * s.k / kWeightScaleGroup)),
            a(static_cast<std::size_t>(e * m * s.k));
        const DeviceBuffer<float> d(static_cast<std::size_t>(e * m * s.n));
        fill_mxfp4_weights(packed.get(), weight_scales.get(), e * s.n * s.k, kScaleSeed);
        fill_e4m3(a.get(), e * m * s.k, 87);
        const ExpertGemmW4A8 gemm{a.get(), packed.get(), weight_scales.get(), d.get(), 1.0f, e, m, s.n, s.k};
        std::vector<TimedPath> paths = time_expert_paths(gemm, wgmma_ok);
        name_competing_paths(s.name, paths);
        const ExpertShape shape{e, m, s.n, s.k};
        for (const TimedPath& path : paths) {
          const Row row = shape.row(path.name, "fp8", 1, path.time, path.tiling);
          w.row(row);
          print_expert_row(w, row, path.suffix);
        }
        if (w4a16_ok) measure_w4a16(w, s.name, shape, packed.get(), weight_scales.get(), d.get());
      });
    }
  }
  return 0;
}

// The dense FP8 projections of a V4.1 layer (the simulator's gemm class, by
// its kernel names), from decode batches to prefill chunks, on cuBLASLt.
// The grouped output projection runs its 8 groups as one strided batch.
int measure_dense_gemm(const RowWriter& w, bool quick) {
  if (!passes("expert gemm (the same cuBLASLt FP8 path)", check_expert_gemm()) ||
      !passes("bf16 gemm", check_bf16_gemm())) {
    return 1;
  }
  struct Shape {
    const char* name;
    int64_t n, k, groups;
    GemmOperands operands;
    int64_t max_tokens;  // the LM head sees a few tokens per sequence, not a prefill chunk
  };
  constexpr auto kFp8 = GemmOperands::kFp8E4M3;
  constexpr auto kBf16 = GemmOperands::kBf16;
  const int64_t heads_out = kV41QueryHeads * kV41HeadDim;
  const std::vector<Shape> shapes{
      {"q_down_proj", kV41QLoraRank, kV41Hidden, 1, kFp8, INT64_MAX},
      {"q_up_proj", heads_out, kV41QLoraRank, 1, kFp8, INT64_MAX},
      {"window_kv_proj", kV41HeadDim, kV41Hidden, 1, kFp8, INT64_MAX},
      {"kv_compress_proj", 2 * kV41HeadDim, kV41Hidden, 1, kFp8, INT64_MAX},  // ratio 2: KV and gate
      {"index_q_proj", kV41IndexHeads * kV41IndexHeadDim, kV41QLoraRank, 1, kFp8, INT64_MAX},
      {"out_group_proj", kV41OutputLoraRank, heads_out / kV41OutputGroups, kV41OutputGroups, kFp8, INT64_MAX},
      {"out_proj", kV41Hidden, kV41OutputGroups * kV41OutputLoraRank, 1, kFp8, INT64_MAX},
      {"shared_gate_up", 2 * kV41ExpertWidth, kV41Hidden, 1, kFp8, INT64_MAX},
      {"shared_down", kV41Hidden, kV41ExpertWidth, 1, kFp8, INT64_MAX},
      {"router", kV41RoutedExperts, kV41Hidden, 1, kBf16, INT64_MAX},
      {"index_head_weights", kV41IndexHeads, kV41Hidden, 1, kBf16, INT64_MAX},
      {"lm_head", kV41Vocab, kV41Hidden, 1, kBf16, 512},
  };
  const std::vector<int64_t> tokens =
      quick ? std::vector<int64_t>{32, 2048} : std::vector<int64_t>{32, 128, 512, 2048, 8192};
  const DeviceBuffer<float> scales(std::vector<float>{1.0f, 1.0f});
  for (const Shape& s : shapes) {
    const bool fp8 = s.operands == kFp8;
    const int64_t element = fp8 ? 1 : 2;
    for (const int64_t m : tokens) {
      if (m > s.max_tokens) continue;
      measure_shape(std::string(s.name) + " m=" + std::to_string(m), [&] {
        const int64_t g = s.groups;
        const DeviceBuffer<uint8_t> weights(static_cast<std::size_t>(g * s.n * s.k * element)),
            a(static_cast<std::size_t>(g * m * s.k * element));
        const DeviceBuffer<float> d(static_cast<std::size_t>(g * m * s.n));
        if (fp8) {
          fill_e4m3(weights.get(), g * s.n * s.k, 82);
          fill_e4m3(a.get(), g * m * s.k, 83);
        } else {
          fill_bf16(reinterpret_cast<uint16_t*>(weights.get()), g * s.n * s.k, 84);
          fill_bf16(reinterpret_cast<uint16_t*>(a.get()), g * m * s.k, 85);
        }
        const GemmPlan plan(s.operands, weights.get(), a.get(), d.get(), fp8 ? scales.get() : nullptr,
                            fp8 ? scales.get() + 1 : nullptr, m, s.n, s.k, g);
        const TimingStats t = time_kernel([&](int) { plan.run(); }, kWarmup, kRuns);
        CUDA_CHECK(cudaGetLastError());
        const double flops =
            2.0 * static_cast<double>(g * m) * static_cast<double>(s.n) * static_cast<double>(s.k);
        const double bytes =
            static_cast<double>(g * (s.n * s.k + m * s.k) * element) + 4.0 * static_cast<double>(g * m * s.n);
        const char* math = fp8 ? "fp8" : "bf16";
        Row row{s.name, "gemm", math,  m,     s.n, s.k,
                g,      0,      flops, bytes, t,   4.0 * static_cast<double>(g * m * s.n)};
        row.tiling = "split";  // cuBLASLt
        w.row(row);
        std::printf(
            "%s %lldx%lldx%lld%s (%s): %.1f us, %.0f TFLOP/s (%.0f%% of dense %s), %.0f GB/s\n", s.name,
            static_cast<long long>(m), static_cast<long long>(s.n), static_cast<long long>(s.k),
            g > 1 ? (" x" + std::to_string(g)).c_str() : "", math, t.median_us, flops / t.median_us / 1e6,
            100.0 * flops / t.median_us / 1e6 / w.ceilings().for_math(math), math, bytes / t.median_us / 1e3);
      });
    }
  }
  return 0;
}

}  // namespace v41sim::kernels
