// The cycle-approximate kernel model: waves, bounds, and the behaviour the
// kernel-model issue asks for, on every bundled GPU.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "sim/graph/ffn_block.h"
#include "sim/graph/kernel_factory.h"
#include "sim/graph/step_graph.h"
#include "sim/report/step_view.h"
#include "tests/step_test_support.h"

namespace v41sim {
namespace {

using testing::analyze;
using testing::GpuUnderTest;
using testing::shape;
using testing::timed;

const char* const kAllGpus[] = {"h20", "h100_sxm", "h800", "h200", "b200", "gb200_nvl72"};

Kernel compute_heavy_gemm(int64_t tiles) {
  Kernel k;
  k.name = "synthetic";
  k.kernel_class = KernelClass::kGemm;
  k.math = MathType::kFp8;
  k.shape = {128 * tiles, 128, 128, 1};  // one 128x128 tile per 128 rows
  k.flops = 1e9 * static_cast<double>(tiles);
  k.hbm_bytes = 1e3 * static_cast<double>(tiles);
  return k;
}

TEST(KernelCost, OneTileMoreThanTheSmsCostsASecondWave) {
  for (const char* stem : kAllGpus) {
    GpuUnderTest g(stem);
    const auto sms = static_cast<int64_t>(g.cost.sm_count());
    const KernelTiming full = g.cost.time(compute_heavy_gemm(sms));
    const KernelTiming over = g.cost.time(compute_heavy_gemm(sms + 1));
    EXPECT_EQ(full.waves, 1) << stem;
    EXPECT_EQ(over.waves, 2) << stem;
    EXPECT_NEAR(over.busy_us / full.busy_us, 2.0, 0.05) << stem;
    EXPECT_EQ(full.bound, Bound::kCompute) << stem;
    EXPECT_EQ(over.bound, Bound::kTail) << stem;
  }
}

// A GEMM tile writes its output after its main loop where the kernel does not
// hide the write (the priors' epilogue_overlap): a small-K GEMM then takes its
// main loop plus the output at the class's bandwidth, not the longer of the two.
TEST(KernelCost, GemmOutputWriteFollowsTheMainLoop) {
  GpuUnderTest g("h800", /*cuda_graph=*/false);
  const ClassCost& gemm = g.cost.params().of(KernelClass::kGemm);
  ASSERT_TRUE(gemm.epilogue_overlap.has_value());
  std::vector<Kernel> kernels;
  const BlockScaledFormat fp8{ElementFormat::kFp8E4M3, std::nullopt, 0};
  Kernel with_output = KernelFactory(kernels).gemm("gemm", 4096, 32768, 512, fp8, MathType::kFp8);
  Kernel hidden = with_output;
  hidden.epilogue_bytes = 0;
  const double serial = with_output.epilogue_bytes * (1.0 - gemm.epilogue_overlap->value());
  const double bandwidth = g.cost.gpu().hbm_bytes_per_s.value() * gemm.memory_efficiency.value();
  const double extra_us = g.cost.time(with_output).busy_us - g.cost.time(hidden).busy_us;
  EXPECT_GT(extra_us, 0.5 * serial / bandwidth * 1e6);  // the write is not hidden
  EXPECT_NEAR(extra_us, serial / bandwidth * 1e6, 0.3 * serial / bandwidth * 1e6);
}

// A decode GEMM that splits K to fill the SMs (a BF16 one: cuBLAS splits,
// DeepGEMM's FP8 kernels narrow their tiles instead) writes one partial output
// per slice: its output costs the slices' writes, not one.
TEST(KernelCost, SplitKSlicesEachWriteTheirOutput) {
  GpuUnderTest g("h800", /*cuda_graph=*/false);
  std::vector<Kernel> kernels;
  const BlockScaledFormat bf16{ElementFormat::kBf16, std::nullopt, 0};
  Kernel split = KernelFactory(kernels).gemm("gemm", 64, 2112, 7168, bf16, MathType::kBf16);
  Kernel no_output = split;
  no_output.hbm_bytes -= split.epilogue_bytes;
  no_output.epilogue_bytes = 0;
  const KernelTiming t = g.cost.time(split);
  const int64_t slices = t.tiles / ((2112 + 127) / 128);  // 17 tiles of 128 columns, split
  ASSERT_GT(slices, 1);
  const ClassCost& gemm = g.cost.params().of(KernelClass::kGemm);
  const double bandwidth = g.cost.gpu().hbm_bytes_per_s.value() * gemm.memory_efficiency.value();
  const double extra_us = t.busy_us - g.cost.time(no_output).busy_us;
  EXPECT_GT(extra_us, 0.9 * static_cast<double>(slices) * split.epilogue_bytes / bandwidth * 1e6);
}

// FP8 GEMMs take DeepGEMM's tiles: block N narrowed to fill the SMs in the
// fewest waves, K never split; a BF16 GEMM of the same shape splits K.
TEST(KernelCost, Fp8GemmsNarrowTheirTilesInsteadOfSplittingK) {
  GpuUnderTest g("h800");
  std::vector<Kernel> kernels;
  KernelFactory f(kernels);
  const BlockScaledFormat fp8{ElementFormat::kFp8E4M3, std::nullopt, 0};
  const BlockScaledFormat bf16{ElementFormat::kBf16, std::nullopt, 0};
  const KernelTiming narrow = g.cost.time(f.gemm("a", 64, 2112, 7168, fp8, MathType::kFp8));
  EXPECT_EQ(narrow.tile_m, 64);
  EXPECT_EQ(narrow.tile_n, 16);  // 2112 / 16 = 132 tiles: one full wave
  EXPECT_EQ(narrow.tiles, 132);
  const KernelTiming wider = g.cost.time(f.gemm("b", 128, 7168, 2048, fp8, MathType::kFp8));
  EXPECT_EQ(wider.tile_m, 128);
  EXPECT_EQ(wider.tile_n, 56);  // the narrowest tile that takes one wave: 128 tiles
  EXPECT_EQ(wider.tiles, 128);
  // 56 columns straddle two 128-column weight-scale blocks: 6 stages, not 8,
  // for its 16 K blocks, plus the first fill.
  const double latency_us = g.cost.params().memory_latency_us.value();
  EXPECT_NEAR(wider.pipeline_us, (16.0 / 6.0 + 1.0) * latency_us, 1e-9);
  const KernelTiming split = g.cost.time(f.gemm("c", 64, 2112, 7168, bf16, MathType::kBf16));
  EXPECT_EQ(split.tile_n, 128);
  EXPECT_GT(split.tiles, 17);  // 17 column tiles, each split along K
  // A measured row says how its kernel tiled: cuBLASLt splits K, our own kernels run fixed tiles.
  Kernel cublas = f.gemm("d", 64, 2112, 7168, fp8, MathType::kFp8);
  cublas.tiling = {Tiling::Rule::kSplit, 0, 0};
  EXPECT_EQ(g.cost.time(cublas).tiles, split.tiles);
  Kernel own = cublas;
  own.tiling = {Tiling::Rule::kFixed, 16, 64};
  const KernelTiming fixed = g.cost.time(own);
  EXPECT_EQ(fixed.tile_m, 16);
  EXPECT_EQ(fixed.tiles, 4 * 33);  // 64 / 16 rows x 2112 / 64 columns, never split
}

// A narrow tile streams more operand bytes than its share of HBM traffic:
// its pipeline refills its stages once per memory latency (Little's law), so
// the 64x2112x7168 decode GEMM takes 56 K blocks / 8 stages = 7 latencies,
// plus the first fill.
TEST(KernelCost, NarrowTilesWaitOnTheirLoadPipeline) {
  GpuUnderTest g("h800");
  std::vector<Kernel> kernels;
  const BlockScaledFormat fp8{ElementFormat::kFp8E4M3, std::nullopt, 0};
  const Kernel k = KernelFactory(kernels).gemm("a", 64, 2112, 7168, fp8, MathType::kFp8);
  const KernelTiming t = g.cost.time(k);
  const double latency_us = g.cost.params().memory_latency_us.value();
  EXPECT_EQ(t.bound, Bound::kLatency);
  EXPECT_NEAR(t.pipeline_us, 8.0 * latency_us, 1e-9);
  EXPECT_GE(t.busy_us, 8.0 * latency_us);
  EXPECT_LT(t.busy_us, 8.0 * latency_us + t.edge_us + 1.0);
  // Without the pipeline term the same tiles would stream at their HBM share.
  CostParams no_pipeline = g.cost.params();
  no_pipeline.classes[static_cast<std::size_t>(KernelClass::kGemm)].pipeline.reset();
  const KernelCostModel unbounded(g.cost.gpu(), no_pipeline, true);
  EXPECT_LT(unbounded.time(k).busy_us, 0.7 * t.busy_us);
  EXPECT_EQ(unbounded.time(k).pipeline_us, 0.0);
}

// Near the balance point a GEMM tile stalls on its loads and then on its
// math: the p-norm of the two adds to the longer (up to 2^(1/p) when equal),
// while a tile far from balance keeps the longer of the two.
TEST(KernelCost, BalancedTilesTakeLongerThanTheLongerTerm) {
  GpuUnderTest g("h800");
  std::vector<Kernel> kernels;
  const BlockScaledFormat fp8{ElementFormat::kFp8E4M3, std::nullopt, 0};
  // DeepGEMM's masked 4 x 256-row groups, 4096 x 7168: weights and math within 15%.
  const Kernel near = KernelFactory(kernels).grouped_gemm("near", 1024, 4, 4096, 7168, fp8);
  const Kernel far = compute_heavy_gemm(static_cast<int64_t>(g.cost.sm_count()));
  CostParams longer = g.cost.params();
  for (ClassCost& c : longer.classes) c.balance_exponent.reset();
  const KernelCostModel max_model(g.cost.gpu(), longer, true);
  const double p = g.cost.params().of(KernelClass::kGroupedGemm).balance_exponent->value();
  const double ratio = g.cost.time(near).busy_us / max_model.time(near).busy_us;
  EXPECT_GT(ratio, 1.1);
  EXPECT_LE(ratio, std::pow(2.0, 1.0 / p) + 1e-9);
  EXPECT_NEAR(g.cost.time(far).busy_us / max_model.time(far).busy_us, 1.0, 1e-3);
}

TEST(KernelCost, StreamingKernelReachesTheMemoryEfficiency) {
  GpuUnderTest g("h200");
  Kernel k;
  k.kernel_class = KernelClass::kElementwise;
  k.shape = {1 << 20, 4096, 1, 1};
  k.hbm_bytes = 8e9;
  const KernelTiming t = g.cost.time(k);
  const double expected_us =
      8e9 / (4.8e12 * g.cost.params().of(KernelClass::kElementwise).memory_efficiency.value()) * 1e6;
  EXPECT_NEAR(t.busy_us / expected_us, 1.0, 0.01);
  EXPECT_EQ(t.bound, Bound::kMemory);
}

TEST(KernelCost, TinyKernelIsLaunchBound) {
  GpuUnderTest g("h100_sxm", /*cuda_graph=*/false);
  Kernel k;
  k.kernel_class = KernelClass::kElementwise;
  k.hbm_bytes = 4096;
  const KernelTiming t = g.cost.time(k);
  EXPECT_EQ(t.bound, Bound::kLaunch);
  EXPECT_DOUBLE_EQ(t.overhead_us, g.cost.params().launch_overhead_us.value());
}

// An indexer-like kernel with FP4 math.
Kernel fp4_indexer(double flops) {
  Kernel k;
  k.kernel_class = KernelClass::kIndexer;
  k.math = MathType::kFp4;
  k.shape = {64, 65536, 4096, 1};
  k.flops = flops;
  k.hbm_bytes = 1e6;
  return k;
}

TEST(KernelCost, Fp4MathFallsBackToFp8OnHopperOnly) {
  const Kernel k = fp4_indexer(1e12);
  EXPECT_TRUE(GpuUnderTest("h200").cost.time(k).math_fallback);
  EXPECT_FALSE(GpuUnderTest("b200").cost.time(k).math_fallback);
}

// An attention-like kernel on every SM, with `fp8_values` FP8 entries widened into BF16 math.
Kernel widening_kernel(const KernelCostModel& cost, double flops, double fp8_values) {
  Kernel k;
  k.name = "synthetic_attention";
  k.kernel_class = KernelClass::kAttention;
  k.math = MathType::kBf16;
  const ClassCost& cls = cost.params().of(KernelClass::kAttention);
  k.shape = {cls.tile_m * static_cast<int64_t>(cost.sm_count()), cls.tile_n, 1088, 1};  // one wave
  k.flops = flops;
  k.hbm_bytes = 1e3;
  k.narrow.fp8 = fp8_values;
  return k;
}

// The widening of FP8 values into BF16 math costs fp8_to_bf16 SM cycles per
// value at the SM clock the FP32 rate implies (128 lanes x 2 FLOPs), at the
// class's efficiency; with no overlap it adds to the tensor math, with full
// overlap the longer of the two sets the time.
TEST(KernelCost, WideningAddsToTheMathOrHidesUnderIt) {
  GpuUnderTest g("h800", /*cuda_graph=*/false);
  const CostParams& priors = g.cost.params();
  const double eff = priors.of(KernelClass::kAttention).compute_efficiency.value();
  const double clock = 67e12 / (2.0 * 128.0 * 132.0);  // H800: 67 TF FP32 over 132 SMs
  const double values = 1e9;
  const double widen_us = values * priors.widening.fp8_to_bf16_cycles.value() / (clock * eff * 132.0) * 1e6;
  const double math_flops = 0.5 * widen_us * 1e-6 * 989e12 * eff;  // tensor math takes half as long

  CostParams serial = priors, hidden = priors;
  serial.classes[static_cast<std::size_t>(KernelClass::kAttention)].widening_overlap =
      SourcedValue::assumed(0.0, "test");
  hidden.classes[static_cast<std::size_t>(KernelClass::kAttention)].widening_overlap =
      SourcedValue::assumed(1.0, "test");
  const KernelCostModel serial_model(g.cost.gpu(), serial, false), hidden_model(g.cost.gpu(), hidden, false);
  const Kernel plain = widening_kernel(g.cost, math_flops, 0);
  const Kernel narrow = widening_kernel(g.cost, math_flops, values);

  const KernelTiming s = serial_model.time(narrow);
  EXPECT_NEAR(s.widening_us, widen_us, 1e-6 * widen_us);
  EXPECT_NEAR(s.busy_us - serial_model.time(plain).busy_us, widen_us, 0.01 * widen_us);
  EXPECT_EQ(s.bound, Bound::kWidening);
  const KernelTiming h = hidden_model.time(narrow);
  EXPECT_NEAR(h.busy_us, widen_us, 0.01 * widen_us);  // the longer of the two
  EXPECT_EQ(h.bound, Bound::kWidening);
  // Widening shorter than the math hides entirely under full overlap.
  const Kernel light = widening_kernel(g.cost, math_flops, values / 4);
  EXPECT_NEAR(hidden_model.time(light).busy_us, hidden_model.time(plain).busy_us, 1e-9);
  EXPECT_EQ(hidden_model.time(light).bound, Bound::kCompute);
}

// Attention tiles run all keys of their query rows, and split the keys only
// to fill the SMs; what a tile loads before and writes after its main loop
// (query rows in, output out) is not hidden (FlashMLA: top-2048 runs at 410
// TFLOPS, top-32768 at 460), so fewer keys per tile cost more per FLOP.
TEST(KernelCost, AttentionTilesSplitKeysOnlyToFillTheSmsAndPayTheirEdges) {
  GpuUnderTest g("h800", /*cuda_graph=*/false);
  const ClassCost& attention = g.cost.params().of(KernelClass::kAttention);
  ASSERT_TRUE(attention.epilogue_overlap.has_value());
  ASSERT_EQ(attention.epilogue_overlap->value(), 0.0);
  auto kernel = [](int64_t rows, int64_t keys) {
    Kernel k;
    k.kernel_class = KernelClass::kAttention;
    k.math = MathType::kBf16;
    k.shape = {rows, keys, 1088, 1};
    k.flops = 2.0 * static_cast<double>(rows * keys) * 1088;
    k.epilogue_bytes = static_cast<double>(rows) * 1088 * 2;  // Q in, O out
    k.hbm_bytes = static_cast<double>(keys) * 656 * static_cast<double>(rows) / 128 + k.epilogue_bytes;
    return k;
  };
  const auto sms = static_cast<int64_t>(g.cost.sm_count());
  // Two query tiles, many keys: split to fill the SMs.
  const KernelTiming few = g.cost.time(kernel(2 * attention.tile_m, 65536));
  EXPECT_EQ(few.tiles, 2 * (sms / 2));
  // Many query tiles: no split, one tile per query tile.
  const KernelTiming many = g.cost.time(kernel(1024 * attention.tile_m, 2048));
  EXPECT_EQ(many.tiles, 1024);
  // The same FLOPs over fewer keys per tile (16x the tiles) run slower per FLOP.
  const Kernel long_keys = kernel(64 * attention.tile_m, 32768);
  const Kernel short_keys = kernel(1024 * attention.tile_m, 2048);
  ASSERT_DOUBLE_EQ(long_keys.flops, short_keys.flops);
  EXPECT_GT(g.cost.time(short_keys).busy_us, 1.03 * g.cost.time(long_keys).busy_us);
}

// The indexer folds each head's score on the CUDA cores (a max at the compare
// rate, 64 a clock, its multiply-add beside it, at the class's fold
// efficiency): on B200 an FP4 indexer's fold of 32 heads outlasts its tensor
// math (8,192 FLOPs a pair at the FP4 rate), sets the time and names the
// bound; on H800 it hides under the FP8 math; a kernel with nothing to fold is
// timed as before.
TEST(KernelCost, TheIndexersFoldRunsBesideItsTensorMath) {
  Kernel k = fp4_indexer(0);
  k.shape.n = 256 * 148 * 4;  // four full waves of B200's 148 SMs in 64 x 256 tiles
  const double pairs = 64.0 * static_cast<double>(k.shape.n);
  k.flops = 2.0 * 32 * 128 * pairs;
  k.folded_values = 32 * pairs;
  Kernel unfolded = k;
  unfolded.folded_values = 0;
  {
    GpuUnderTest g("b200", /*cuda_graph=*/false);
    const CostParams& p = g.cost.params();
    EXPECT_DOUBLE_EQ(p.widening.fold_cycles(), 1.0 / 64.0);
    ASSERT_TRUE(p.of(KernelClass::kIndexer).fold_efficiency.has_value());
    const double eff = p.of(KernelClass::kIndexer).fold_efficiency->value();
    const double clock = 80e12 / (2.0 * 128.0 * 148.0);  // B200: 80 TF FP32 over 148 SMs
    const double fold_us = k.folded_values / 64.0 / (clock * eff * 148.0) * 1e6;
    const KernelTiming t = g.cost.time(k);
    EXPECT_NEAR(t.fold_us, fold_us, 1e-9 * fold_us);
    EXPECT_GT(t.fold_us, t.math_us);
    EXPECT_EQ(t.bound, Bound::kFold);
    EXPECT_GT(t.busy_us, g.cost.time(unfolded).busy_us * 1.2);
    EXPECT_DOUBLE_EQ(g.cost.time(unfolded).fold_us, 0.0);
  }
  {
    GpuUnderTest g("h800", /*cuda_graph=*/false);
    const KernelTiming t = g.cost.time(k);
    EXPECT_LT(t.fold_us + t.widening_us, t.math_us);
    EXPECT_EQ(t.bound, g.cost.time(unfolded).bound);
    EXPECT_DOUBLE_EQ(t.busy_us, g.cost.time(unfolded).busy_us);
  }
}

// The FP4 widening costs are the kernels' instruction counts per 4 values
// over the instruction throughputs: 5 integer ops at 64 per clock is 5/256
// cycles per value; 8 integer ops and 2 BF16x2 multiplies at 128, (8/64 + 2/128) / 4.
TEST(KernelCost, Fp4WideningCyclesComeFromInstructionCounts) {
  WideningCost w;
  w.integer_ops_per_clock = SourcedValue::assumed(64, "test");
  w.bf16x2_ops_per_clock = SourcedValue::assumed(128, "test");
  w.fp4_to_fp8_integer_ops = SourcedValue::assumed(5, "test");
  w.fp4_to_bf16_integer_ops = SourcedValue::assumed(8, "test");
  w.fp4_to_bf16_multiplies = SourcedValue::assumed(2, "test");
  EXPECT_DOUBLE_EQ(w.fp4_to_fp8_cycles(), 5.0 / 256.0);
  EXPECT_DOUBLE_EQ(w.fp4_to_bf16_cycles(), (8.0 / 64.0 + 2.0 / 128.0) / 4.0);
}

// FP4 values into FP8 math are widened where the tensor cores have no FP4
// (Hopper) and taken as stored where they do (Blackwell); FP8 into FP8 is free.
TEST(KernelCost, Fp4IsWidenedOnlyWithoutFp4TensorCores) {
  Kernel k = fp4_indexer(1e9);
  k.narrow.fp4 = 1e9;
  EXPECT_GT(GpuUnderTest("h200").cost.time(k).widening_us, 0.0);
  EXPECT_GT(GpuUnderTest("h20").cost.time(k).widening_us, 0.0);
  EXPECT_EQ(GpuUnderTest("b200").cost.time(k).widening_us, 0.0);
  k.math = MathType::kFp8;
  k.narrow = {1e9, 0};
  EXPECT_EQ(GpuUnderTest("h200").cost.time(k).widening_us, 0.0);
}

// A GEMM over FP4 weights on Hopper widens them in every M tile, or once in a
// pass of its own when M spans many tiles: never slower than the first, and
// with one M tile always in the tiles.
TEST(KernelCost, ManyRowTilesWidenTheWeightsOnceAhead) {
  // Widening made four times dearer than the priors' so that, in the tiles,
  // it outlasts the FP8 math it feeds.
  GpuUnderTest priors("h200", /*cuda_graph=*/false);
  CostParams params = priors.cost.params();
  params.widening.fp4_to_fp8_integer_ops =
      SourcedValue::assumed(4.0 * params.widening.fp4_to_fp8_integer_ops.value(), "test");
  const KernelCostModel cost(priors.cost.gpu(), params, false);
  std::vector<Kernel> kernels;
  const BlockScaledFormat mxfp4{ElementFormat::kFp4E2M1, ElementFormat::kE8M0, 32};
  KernelFactory f(kernels);
  const Kernel decode = f.grouped_gemm("experts", 8 * 32, 32, 4096, 5120, mxfp4);
  const Kernel prefill = f.grouped_gemm("experts", 4096 * 32, 32, 4096, 5120, mxfp4);
  EXPECT_DOUBLE_EQ(decode.narrow.fp4, 32.0 * 4096 * 5120);
  const KernelTiming d = cost.time(decode);
  EXPECT_FALSE(d.widened_ahead);
  EXPECT_GT(d.widening_us, 0.0);
  const KernelTiming p = cost.time(prefill);
  EXPECT_TRUE(p.widened_ahead);
  // Ahead: a plain FP8 GEMM reading FP8 weights, plus the pass (a kernel of its own).
  Kernel plain = prefill;
  plain.narrow = {};
  plain.hbm_bytes += prefill.narrow.fp4 * 0.5;
  const KernelTiming fp8 = cost.time(plain);
  EXPECT_NEAR(p.time_us, fp8.time_us + p.widening_us + fp8.overhead_us, 1e-6 * p.time_us);
  // In the tiles, the widening alone (a lower bound of that path) would take longer.
  const ClassCost& grouped = params.of(KernelClass::kGroupedGemm);
  const double m_tiles =
      std::ceil(static_cast<double>(prefill.shape.m) / static_cast<double>(grouped.tile_m));
  const double clock = 67e12 / (2.0 * 128.0 * 132.0);
  const double in_tiles_widening_us = m_tiles * prefill.narrow.fp4 * params.widening.fp4_to_fp8_cycles() /
                                      (clock * grouped.compute_efficiency.value() * 132.0) * 1e6;
  EXPECT_LT(p.time_us, in_tiles_widening_us);
}

// A weight-only W4A16 kernel (Marlin's) takes its class's weight-only tile,
// never narrowed or split, and widens its weights in every M tile: at
// prefill's rows, where the class's own rule would widen them once in a pass
// ahead of a plain BF16 GEMM, it pays the widening once per 64 rows, and at
// decode's few rows it times as the class's rule does (one M tile either
// way). A kernel of fixed tiles (ours, measured) widens in them likewise.
TEST(KernelCost, WeightOnlyKernelsWidenInEveryTileOfTheirOwn) {
  GpuUnderTest h200("h200", /*cuda_graph=*/false);
  const ClassCost& grouped = h200.cost.params().of(KernelClass::kGroupedGemm);
  ASSERT_TRUE(grouped.weight_only_tile);
  const BlockScaledFormat mxfp4{ElementFormat::kFp4E2M1, ElementFormat::kE8M0, 32};
  std::vector<Kernel> kernels;
  KernelFactory f(kernels);
  Kernel prefill = f.grouped_gemm("experts", 4096.0 * 8, 8, 4096, 5120, mxfp4, MathType::kBf16);
  const KernelTiming by_class = h200.cost.time(prefill);
  EXPECT_TRUE(by_class.widened_ahead);
  prefill.tiling.rule = Tiling::Rule::kWeightOnly;
  const KernelTiming weight_only = h200.cost.time(prefill);
  EXPECT_FALSE(weight_only.widened_ahead);
  EXPECT_EQ(weight_only.tile_m, grouped.weight_only_tile->m);
  EXPECT_EQ(weight_only.tile_n, grouped.weight_only_tile->n);
  EXPECT_EQ(weight_only.tiles,
            8 * (4096 / grouped.weight_only_tile->m) * (4096 / grouped.weight_only_tile->n));
  const double m_tiles = 4096.0 / static_cast<double>(grouped.weight_only_tile->m);
  const double clock = 67e12 / (2.0 * 128.0 * 132.0);
  EXPECT_NEAR(weight_only.widening_us,
              m_tiles * prefill.narrow.fp4 * h200.cost.params().widening.fp4_to_bf16_cycles() /
                  (clock * grouped.compute_efficiency.value() * 132.0) * 1e6,
              1e-6 * weight_only.widening_us);
  EXPECT_GT(weight_only.time_us, 1.2 * by_class.time_us);
  Kernel fixed = prefill;
  fixed.tiling = {Tiling::Rule::kFixed, 64, 64};
  EXPECT_FALSE(h200.cost.time(fixed).widened_ahead);
  // Decode: 4 rows an expert, one M tile under either rule.
  Kernel decode = f.grouped_gemm("experts", 4.0 * 48, 48, 4096, 5120, mxfp4, MathType::kBf16);
  const double decode_by_class = h200.cost.time(decode).time_us;
  decode.tiling.rule = Tiling::Rule::kWeightOnly;
  EXPECT_NEAR(h200.cost.time(decode).time_us, decode_by_class, 0.1 * decode_by_class);
}

// Decode's EP transfers go through the low-latency kernels: the same link
// time as the normal kernels' (prefill), and their own fixed cost, the same
// inside a node as across nodes.
TEST(KernelCost, LowLatencyTransfersPayTheirFixedCost) {
  GpuUnderTest g("h800", /*cuda_graph=*/false);
  const LinkCost& links = g.cost.params().links;
  AllToAllShape transfer{128, 8, 7168, 1.0, 8, 8, 1.0, false};
  const Kernel normal = make_all_to_all("dispatch", transfer);
  transfer.low_latency = true;
  const Kernel low_latency = make_all_to_all("dispatch", transfer);
  const double wire_us = normal.link_bytes / 200e9 * 1e6;  // H800: 200 GB/s per direction
  EXPECT_NEAR(g.cost.time(normal).busy_us, wire_us / links.nvlink_efficiency.value(), 1e-9);
  EXPECT_NEAR(g.cost.time(low_latency).busy_us, g.cost.time(normal).busy_us, 1e-9);
  EXPECT_DOUBLE_EQ(g.cost.time(normal).overhead_us, links.all_to_all_latency_intra_us.value());
  EXPECT_DOUBLE_EQ(g.cost.time(low_latency).overhead_us, links.all_to_all_latency_low_latency_us.value());
  transfer.ep = 32;  // across nodes too
  EXPECT_DOUBLE_EQ(g.cost.time(make_all_to_all("dispatch", transfer)).overhead_us,
                   links.all_to_all_latency_low_latency_us.value());

  const StepGraph decode = build_step_graph(analyze("deepseek_v4_1_flash"), shape(Phase::kDecode, 8, 8192));
  const StepGraph prefill = build_step_graph(analyze("deepseek_v4_1_flash"), shape(Phase::kPrefill, 1, 8192));
  StepShape beside_prompts = shape(Phase::kDecode, 8, 8192);  // as the prompt step beside it: normal mode
  beside_prompts.beside_prompts = true;
  const StepGraph beside = build_step_graph(analyze("deepseek_v4_1_flash"), beside_prompts);
  for (const auto& [graph, expected] :
       {std::pair{&decode, true}, std::pair{&prefill, false}, std::pair{&beside, false}}) {
    int transfers = 0;
    for (const LayerKernels& layer : graph->layers) {
      for (const Kernel& k : layer.kernels()) {
        if (k.kernel_class != KernelClass::kAllToAll) continue;
        EXPECT_EQ(k.low_latency, expected) << k.name;
        ++transfers;
      }
    }
    EXPECT_GT(transfers, 0);
  }
}

// A token reaches a node when one of its experts lives there: never from one
// node, (nodes - 1) / nodes with one expert, almost every other node with many.
TEST(AllToAll, RemoteNodesAreCountedOncePerToken) {
  EXPECT_EQ(expected_remote_nodes(1, 256, 8), 0.0);
  EXPECT_NEAR(expected_remote_nodes(4, 256, 1), 3.0 / 4.0, 1e-12);
  EXPECT_NEAR(expected_remote_nodes(2, 4, 2), 1.0 - (2.0 / 4.0) * (1.0 / 3.0), 1e-12);  // by hand
  EXPECT_LT(expected_remote_nodes(4, 256, 8), 3.0);
  EXPECT_GT(expected_remote_nodes(4, 256, 8), expected_remote_nodes(4, 256, 4));
  // The normal kernels send a token once per remote node; the low-latency ones every copy.
  AllToAllShape s{4096, 8, 7168, 1.0, 32, 8, 1.0, false, 256};
  const Kernel normal = make_all_to_all("dispatch", s);
  s.low_latency = true;
  const Kernel per_copy = make_all_to_all("dispatch", s);
  const double token_bytes = 4096.0 * 7168.0;
  EXPECT_NEAR(normal.link_bytes * normal.off_node_fraction, token_bytes * expected_remote_nodes(4, 256, 8),
              1e-6 * token_bytes);
  EXPECT_NEAR(per_copy.link_bytes * per_copy.off_node_fraction, token_bytes * 8.0 * 24.0 / 32.0,
              1e-6 * token_bytes);
  // Inside one node nothing is deduplicated.
  s = {4096, 8, 7168, 1.0, 8, 8, 1.0, false, 256};
  EXPECT_NEAR(make_all_to_all("dispatch", s).link_bytes, token_bytes * 8.0 * 7.0 / 8.0, 1e-6 * token_bytes);
}

TEST(StepCost, SmallBatchDecodeIsMemoryBoundEverywhere) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  for (const char* stem : kAllGpus) {
    GpuUnderTest g(stem);
    const StepTiming t = timed(m, g.cost, shape(Phase::kDecode, 1, 8192));
    EXPECT_LT(time_bound_by(t, Bound::kCompute), 0.05 * t.compute_us) << stem;
    // Memory-side: HBM bandwidth, or the load pipelines' latency (small tiles).
    EXPECT_GT(time_bound_by(t, Bound::kMemory) + time_bound_by(t, Bound::kLatency), 0.5 * t.compute_us)
        << stem;
  }
}

TEST(StepCost, LongPrefillIsComputeBoundOnHopper) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  for (const char* stem : {"h100_sxm", "h200"}) {
    GpuUnderTest g(stem, false);
    const StepTiming t = timed(m, g.cost, shape(Phase::kPrefill, 1, 65536));
    EXPECT_GT(time_bound_by(t, Bound::kCompute), 0.5 * t.compute_us) << stem;
  }
}

TEST(StepCost, PrefillRanksByTensorRate) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  std::map<std::string, double> us;
  for (const char* stem : kAllGpus) {
    GpuUnderTest g(stem, false);
    us[stem] = timed(m, g.cost, shape(Phase::kPrefill, 1, 65536)).compute_us;
  }
  EXPECT_GT(us["h20"], 3.0 * us["h100_sxm"]);  // 296 vs 1979 dense FP8 TFLOPS
  EXPECT_GT(us["h100_sxm"], us["b200"]);
  EXPECT_GE(us["b200"], us["gb200_nvl72"]);
  EXPECT_NEAR(us["h100_sxm"] / us["h200"], 1.0, 0.25);  // same tensor rate, more bandwidth
}

TEST(StepCost, PositiveFiniteAndMonotoneInBatchAndContext) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  GpuUnderTest g("h200");
  for (Phase phase : {Phase::kDecode, Phase::kPrefill}) {
    double previous = 0;
    for (int64_t batch : {1, 4, 16, 64}) {
      const StepTiming t = timed(m, g.cost, shape(phase, batch, 16384));
      for (const LayerTiming& l : t.layers) {
        for (const KernelTiming& k : l.kernels) {
          EXPECT_TRUE(std::isfinite(k.time_us) && k.time_us > 0);
        }
      }
      EXPECT_GT(t.total_us, previous) << "batch " << batch;
      previous = t.total_us;
    }
    previous = 0;
    for (int64_t context : {4096, 32768, 262144, 1048576}) {
      const double total = timed(m, g.cost, shape(phase, 4, context)).total_us;
      EXPECT_GT(total, previous) << "context " << context;
      previous = total;
    }
  }
}

// Per kernel (same layer, same name) time never drops when the batch or the context grows.
TEST(StepCost, EveryKernelIsMonotone) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  GpuUnderTest g("h100_sxm");
  for (Phase phase : {Phase::kDecode, Phase::kPrefill}) {
    const std::vector<StepShape> shapes{shape(phase, 1, 4096), shape(phase, 2, 4096), shape(phase, 2, 65536),
                                        shape(phase, 8, 65536), shape(phase, 8, 524288)};
    std::map<std::string, double> last;
    for (const StepShape& s : shapes) {
      const StepGraph graph = build_step_graph(m, s);
      const StepTiming t = time_step(graph, g.cost);
      for (std::size_t i = 0; i < graph.layers.size(); ++i) {
        for (std::size_t j = 0; j < graph.layers[i].kernels().size(); ++j) {
          const std::string key = std::to_string(i) + "/" + graph.layers[i].kernels()[j].name;
          const double us = t.layers[i].kernels[j].time_us;
          if (last.count(key)) {
            EXPECT_GE(us, last[key] * 0.98) << key << " batch " << s.batch << " ctx " << s.context;
          }
          last[key] = us;
        }
      }
    }
  }
}

// A step times each kind of layer once and hands its timings to the layers
// of that kind: every kernel's timing is still the one the cost model gives it,
// in every layer, both micro-batches' kernels included (an odd batch).
TEST(StepCost, LayersOfOneKindTakeTheTimesTheirKernelsHave) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  GpuUnderTest g("h200");
  StepShape s = shape(Phase::kDecode, 33, 131072);
  s.overlap_communication = true;
  const StepGraph graph = build_step_graph(m, s);
  ASSERT_FALSE(graph.second_layers.empty());
  const StepTiming t = time_step(graph, g.cost);
  ASSERT_EQ(t.layers.size(), graph.layers.size());
  std::set<std::string> modes;
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    modes.insert(graph.layers[i].mode);
    for (std::size_t j = 0; j < graph.layers[i].kernels().size(); ++j) {
      const KernelTiming direct = g.cost.time(graph.layers[i].kernels()[j]);
      EXPECT_EQ(t.layers[i].kernels[j].time_us, direct.time_us)
          << i << "/" << graph.layers[i].kernels()[j].name;
      EXPECT_EQ(t.layers[i].kernels[j].busy_us, direct.busy_us);
    }
  }
  EXPECT_GE(modes.size(), 3u);  // several kinds of layer, each repeated
  // The layer totals: each layer's compute is its first micro-batch's kernels
  // plus its second's, timed one by one.
  std::size_t second = 0;
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    double compute_us = 0;
    auto add = [&](const LayerKernels& layer) {
      for (const Kernel& k : layer.kernels())
        if (k.stream == Stream::kCompute) compute_us += g.cost.time(k).time_us;
    };
    add(graph.layers[i]);
    if (second < graph.second_layers.size() && graph.second_layers[second].layer == graph.layers[i].layer)
      add(graph.second_layers[second++]);
    EXPECT_NEAR(t.layers[i].compute_us, compute_us, 1e-9 * compute_us) << i;
  }
}

// The serving cache's timing (kTracks: layers of a kind summed once, no
// kernel kept) gives each layer the tracks, sums and start the full one
// does, the same totals and the same class times (the band's weights):
// prefill, decode, a mixed step, with and without two micro-batches.
TEST(StepCost, TracksAloneGiveTheFullTimingsSums) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  GpuUnderTest g("h200");
  std::vector<StepShape> shapes{shape(Phase::kPrefill, 2, 16384), shape(Phase::kDecode, 33, 131072)};
  StepShape mixed = shape(Phase::kDecode, 48, 65536);
  mixed.mixed_prefill = {3, 4096, 20000, 1};
  shapes.push_back(mixed);
  for (std::size_t i = 0, n = shapes.size(); i < n; ++i) {
    shapes.push_back(shapes[i]);
    shapes.back().overlap_communication = true;
  }
  for (const StepShape& s : shapes) {
    const StepGraph graph = build_step_graph(m, s);
    const StepTiming full = time_step(graph, g.cost);
    const StepTiming tracks = time_step(graph, g.cost, TimingDetail::kTracks);
    ASSERT_EQ(full.layers.size(), tracks.layers.size());
    for (std::size_t i = 0; i < full.layers.size(); ++i) {
      const LayerTiming& a = full.layers[i];
      const LayerTiming& b = tracks.layers[i];
      EXPECT_EQ(a.layer, b.layer);
      EXPECT_EQ(a.compute_us, b.compute_us) << i;
      EXPECT_EQ(a.communication_us, b.communication_us) << i;
      EXPECT_EQ(a.host_copy_us, b.host_copy_us) << i;
      EXPECT_EQ(*a.segments, *b.segments) << i;
      EXPECT_EQ(a.start_us, b.start_us) << i;
      EXPECT_EQ(a.critical_us, b.critical_us) << i;
      EXPECT_EQ(a.flops, b.flops) << i;
      EXPECT_EQ(a.kernels_run, b.kernels_run) << i;
      EXPECT_TRUE(b.kernels.empty());
    }
    EXPECT_EQ(full.total_us, tracks.total_us);
    EXPECT_EQ(full.hbm_bytes, tracks.hbm_bytes);
    EXPECT_EQ(full.kernel_count, tracks.kernel_count);
    EXPECT_EQ(full.class_us, tracks.class_us);
    // The class times are the first micro-batch's kernels, each once.
    std::array<double, kKernelClassCount> by_class{};
    for (std::size_t i = 0; i < graph.layers.size(); ++i) {
      for (std::size_t j = 0; j < graph.layers[i].kernels().size(); ++j)
        by_class[static_cast<std::size_t>(graph.layers[i].kernels()[j].kernel_class)] +=
            full.layers[i].kernels[j].time_us;
    }
    for (std::size_t c = 0; c < by_class.size(); ++c)
      EXPECT_NEAR(full.class_us[c], by_class[c], 1e-9 * by_class[c]) << c;
  }
}

TEST(StepCost, SameInputsSameTimes) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  GpuUnderTest a("h200");
  GpuUnderTest b("h200");
  const StepShape s = shape(Phase::kDecode, 16, 131072);
  EXPECT_EQ(timed(m, a.cost, s).total_us, timed(m, b.cost, s).total_us);
  EXPECT_EQ(timed(m, a.cost, s).total_us, timed(m, a.cost, s).total_us);  // cached
}

}  // namespace
}  // namespace v41sim

namespace v41sim {
namespace {

// A 16K-token prompt splits into two halves whose math halves too: the
// overlap hides most transfers, and splitting costs the compute a little.
TEST(StepCost, OverlapHidesCommunicationBehindCompute) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  GpuUnderTest g("h200", false);
  StepShape s = shape(Phase::kPrefill, 1, 16384);
  const StepTiming serial = timed(m, g.cost, s);
  s.overlap_communication = true;
  EXPECT_EQ(build_step_graph(m, s).micro_batches, 2);
  const StepTiming overlapped = timed(m, g.cost, s);
  EXPECT_LT(overlapped.total_us, serial.total_us);
  EXPECT_GE(overlapped.total_us, std::max(serial.compute_us, serial.communication_us));
  EXPECT_GE(overlapped.compute_us, serial.compute_us);
  EXPECT_LT(overlapped.compute_us, 1.2 * serial.compute_us);
  EXPECT_GE(overlapped.flops, serial.flops);  // both halves counted
}

// While a normal-mode transfer (prefill) runs, it holds SMs: the other
// micro-batch computes on the rest. The low-latency transfers of decode hold none.
TEST(StepCost, NormalTransfersHoldSmsWhileTheyOverlapCompute) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  GpuUnderTest g("h200", false);
  StepShape s = shape(Phase::kPrefill, 1, 16384);
  s.overlap_communication = true;
  const StepTiming held = timed(m, g.cost, s);
  CostParams free_params = g.cost.params();
  free_params.links.normal_transfer_sms = SourcedValue::assumed(1e-9, "test: transfers hold no SM");
  const KernelCostModel free_cost(g.model.gpu(), free_params, false);
  const StepTiming free = timed(m, free_cost, s);
  const double share = g.cost.normal_transfer_sm_share();
  ASSERT_GT(share, 0.1);
  double lower = 0;
  for (const LayerTiming& l : held.layers) {
    for (const TrackSegment& run : *l.segments) EXPECT_LE(run.holding_us, run.us);
    lower += std::max(l.compute_us, l.communication_us);
  }
  // No faster than each layer's busier track, no slower than the tracks one
  // after the other (compute slowed only while a transfer runs beside it).
  EXPECT_GE(free.total_us, lower * (1 - 1e-12));
  EXPECT_GT(held.total_us, free.total_us);
  EXPECT_LE(held.total_us, (held.compute_us + held.communication_us) * (1 + 1e-12));
  // Decode's low-latency transfers hold no SM: the share changes nothing there.
  StepShape d = shape(Phase::kDecode, 64, 131072);
  d.overlap_communication = true;
  EXPECT_DOUBLE_EQ(timed(m, g.cost, d).total_us, timed(m, free_cost, d).total_us);
  // A share of every SM leaves compute none: refused, naming the field.
  CostParams all = g.cost.params();
  all.links.normal_transfer_sms = SourcedValue::assumed(132, "test");
  EXPECT_THROW(KernelCostModel(g.model.gpu(), all, false), InputError);
}

// Decode splits its sequences: each micro-batch is the half-batch step, run
// twice, so what does not shrink with the batch (the weights each reads, the
// transfers' fixed cost) is paid twice; a layer lasts the busier track.
TEST(StepCost, TwoMicroBatchesPayTheirBatchIndependentWorkTwice) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  GpuUnderTest g("h200");
  StepShape s = shape(Phase::kDecode, 32, 131072);
  s.overlap_communication = true;
  const StepTiming overlapped = timed(m, g.cost, s);
  const StepTiming half = timed(m, g.cost, shape(Phase::kDecode, 16, 131072));
  EXPECT_NEAR(overlapped.compute_us, 2 * half.compute_us, 1e-6 * half.compute_us);
  EXPECT_NEAR(overlapped.communication_us, 2 * half.communication_us, 1e-6 * half.communication_us);
  EXPECT_EQ(overlapped.kernel_count, 2 * half.kernel_count);
  // Each layer's busier track bounds it below; the micro-batches' kernel
  // order adds what their segments do not hide (micro_batch_pipeline.h).
  double busier = 0;
  for (const LayerTiming& l : overlapped.layers) busier += std::max(l.compute_us, l.communication_us);
  EXPECT_GE(overlapped.total_us, busier * (1 - 1e-12));
  EXPECT_LT(overlapped.total_us, overlapped.compute_us + overlapped.communication_us);
  // The same span from the half step timed alone (what the serving cache does).
  const OverlappedSpan span = overlapped_span(layer_tracks(half), layer_tracks(half), half.transfer_sm_share);
  EXPECT_DOUBLE_EQ(span.total_us, overlapped.total_us);
  double exposed = 0;
  for (const LayerTiming& l : overlapped.layers) exposed += l.critical_us - l.compute_us;
  EXPECT_NEAR(span.exposed_communication_us, exposed, 1e-9 * overlapped.total_us);
  // At 32 sequences V4.1's decode reads mostly weights: two halves cost more than one batch.
  const StepTiming serial = timed(m, g.cost, shape(Phase::kDecode, 32, 131072));
  EXPECT_GT(overlapped.total_us, serial.total_us);
  // One sequence does not split: overlap changes nothing.
  StepShape one = shape(Phase::kDecode, 1, 131072);
  const double alone = timed(m, g.cost, one).total_us;
  one.overlap_communication = true;
  EXPECT_EQ(build_step_graph(m, one).micro_batches, 1);
  EXPECT_DOUBLE_EQ(timed(m, g.cost, one).total_us, alone);
}

// Every bundled model, both phases, on a Hopper and a Blackwell GPU: two
// micro-batches take no less than each layer's busier track and no more than
// the tracks one after the other, and the serving cache's way from the halves
// gives the same step.
TEST(StepCost, TwoMicroBatchesStayBetweenTheirBounds) {
  int split_steps = 0;
  for (const char* gpu : {"h800", "b200"}) {
    GpuUnderTest g(gpu);
    for (const char* name : {"deepseek_v3", "deepseek_v3_2", "deepseek_v4_flash", "deepseek_v4_pro",
                             "deepseek_v4_1_flash", "llama_3_1_405b"}) {
      const ModelAnalysis m = analyze(name);
      for (const StepShape& base : {shape(Phase::kPrefill, 3, 8192), shape(Phase::kDecode, 65, 32768)}) {
        StepShape split = base;
        split.overlap_communication = true;
        const StepGraph graph = build_step_graph(m, split);
        if (graph.micro_batches < 2) continue;
        ++split_steps;
        const StepTiming t = time_step(graph, g.cost);
        double busier = 0;
        for (const LayerTiming& l : t.layers) busier += std::max(l.compute_us, l.communication_us);
        EXPECT_GE(t.total_us, busier * (1 - 1e-12)) << gpu << " " << name;
        EXPECT_LE(t.total_us, (t.compute_us + t.communication_us + t.host_copy_us) * (1 + 1e-12))
            << gpu << " " << name;
        const std::vector<StepShape> halves = micro_batches_of(split);
        ASSERT_EQ(halves.size(), 2u);
        const StepTiming a = time_step(build_step_graph(m, halves[0]), g.cost, TimingDetail::kTracks);
        const StepTiming b = time_step(build_step_graph(m, halves[1]), g.cost, TimingDetail::kTracks);
        EXPECT_NEAR(overlapped_span(layer_tracks(a), layer_tracks(b), a.transfer_sm_share).total_us,
                    t.total_us, 1e-9 * t.total_us)
            << gpu << " " << name;
      }
    }
  }
  EXPECT_GE(split_steps, 20);  // the dense model's steps split too (no transfers: the bounds meet)
}

// The trace places the first micro-batch's kernels in its chain's order:
// each starts once the one before it is done, and the step outlasts them all.
TEST(StepCost, AnOverlappedStepPlacesEachKernelAfterTheOneBefore) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  GpuUnderTest g("h200", false);
  StepShape s = shape(Phase::kPrefill, 1, 16384);
  s.overlap_communication = true;
  const StepGraph graph = build_step_graph(m, s);
  const StepTiming t = time_step(graph, g.cost);
  double done = 0;
  int transfers = 0;
  for (std::size_t l = 0; l < t.layers.size(); ++l) {
    for (std::size_t i = 0; i < graph.layers[l].kernels().size(); ++i) {
      const Kernel& k = graph.layers[l].kernels()[i];
      if (k.stream == Stream::kHostCopy) continue;
      transfers += k.stream == Stream::kCommunication;
      EXPECT_GE(t.layers[l].kernel_start_us[i], done * (1 - 1e-12)) << l << " " << k.name;
      done = t.layers[l].kernel_start_us[i] + t.layers[l].kernels[i].time_us;
    }
  }
  EXPECT_GT(transfers, 0);
  EXPECT_LE(done, t.total_us * (1 + 1e-12));
}

// An odd batch splits into a larger and a smaller half, each timed as it is
// (before, the larger was timed twice): 33 decode sequences run as 17 and 16,
// three prompts (one continuing) as two ending and one continuing, whose
// micro-batch runs no decoder layers and no head.
TEST(StepCost, AnOddBatchSplitsIntoItsTwoHalves) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  GpuUnderTest g("h200");
  const auto check = [&](StepShape whole, const StepShape& larger, const StepShape& smaller) {
    whole.overlap_communication = true;
    const StepGraph graph = build_step_graph(m, whole);
    ASSERT_EQ(graph.micro_batches, 2);
    ASSERT_FALSE(graph.second_layers.empty());
    const StepTiming overlapped = time_step(graph, g.cost);
    const StepTiming a = timed(m, g.cost, larger);
    const StepTiming b = timed(m, g.cost, smaller);
    EXPECT_NEAR(overlapped.compute_us, a.compute_us + b.compute_us, 1e-9 * a.compute_us);
    EXPECT_NEAR(overlapped.flops, a.flops + b.flops, 1e-9 * a.flops);
    EXPECT_EQ(overlapped.kernel_count, a.kernel_count + b.kernel_count);
    // The serving cache's way: the same sums in another order.
    EXPECT_NEAR(overlapped_span(layer_tracks(a), layer_tracks(b), a.transfer_sm_share).total_us,
                overlapped.total_us, 1e-12 * overlapped.total_us);
  };
  check(shape(Phase::kDecode, 33, 131072), shape(Phase::kDecode, 17, 131072),
        shape(Phase::kDecode, 16, 131072));
  StepShape prompts = shape(Phase::kPrefill, 3, 32768);
  prompts.new_tokens = 4096;
  prompts.continuing = 1;
  StepShape two = prompts, one = prompts;
  two.batch = 2;
  two.continuing = 0;
  one.batch = 1;
  StepShape split = prompts;
  split.overlap_communication = true;
  const StepGraph halves = build_step_graph(m, split);
  EXPECT_LT(halves.second_layers.size(), halves.layers.size());  // the continuing half skips the decoder
  check(prompts, two, one);
}

}  // namespace
}  // namespace v41sim

namespace v41sim {
namespace {

// A Reuse layer re-gathers the entries its source layer just gathered; a
// memory-bound re-read that fits in L2 is cheaper than a first read, one that
// does not fit is not. (V4.1's sparse decode itself is compute-bound: 64 heads
// share each key, so there the saving does not show.)
TEST(StepCost, ReuseLayersHitL2WhenTheGatherFits) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  GpuUnderTest g("h200");
  const StepGraph graph = build_step_graph(m, shape(Phase::kDecode, 8, 131072));
  const Kernel* reuse = nullptr;
  for (const Kernel& k : graph.layers[25].kernels()) {
    if (k.name == "sparse_attention") reuse = &k;
  }
  ASSERT_NE(reuse, nullptr);
  EXPECT_GT(reuse->l2_reuse_bytes, 0.0);
  Kernel stream;  // a memory-bound kernel reading its bytes once
  stream.kernel_class = KernelClass::kElementwise;
  stream.shape = {4096, 4096, 1, 1};
  stream.hbm_bytes = 8e6;
  Kernel warm = stream;
  warm.l2_reuse_bytes = 8e6;  // fits in half of the H200's 50 MB L2
  EXPECT_LT(g.cost.time(warm).busy_us, 0.6 * g.cost.time(stream).busy_us);
  Kernel too_big = stream;
  too_big.hbm_bytes = too_big.l2_reuse_bytes = 400e6;
  Kernel too_big_cold = too_big;
  too_big_cold.l2_reuse_bytes = 0;
  EXPECT_EQ(g.cost.time(too_big).busy_us, g.cost.time(too_big_cold).busy_us);
  for (const Kernel& k : graph.layers[24].kernels()) {  // Reindex selects its own entries
    if (k.name == "sparse_attention") {
      EXPECT_EQ(k.l2_reuse_bytes, 0.0);
    }
  }
}

}  // namespace
}  // namespace v41sim
