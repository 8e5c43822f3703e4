// Calibration recovers known parameters from synthetic measurements, reports
// held-out errors, and writes the same file for the same inputs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "sim/cost/gpu_cost_model.h"
#include "sim/cost/kernel_cost.h"
#include "sim/graph/kernel_factory.h"
#include "sim/hw/gpu_profile_loader.h"
#include "sim/validation/calibration_fit.h"
#include "sim/validation/measurement_file.h"
#include "tests/test_data.h"

namespace v41sim {
namespace {

const std::string kPriors = std::string(V41SIM_SOURCE_DIR) + "/validation/calibration/defaults.yaml";

// Kernel shapes a harness would sweep: GEMMs from decode to prefill sizes, and streams.
std::vector<Kernel> sweep() {
  std::vector<Kernel> kernels;
  KernelFactory f(kernels);
  const BlockScaledFormat fp8{ElementFormat::kFp8E4M3, std::nullopt, 0};
  // 640 and 1664 rows leave a partial last wave that depends on the tile shape.
  for (double m : {1.0, 16.0, 64.0, 256.0, 640.0, 1024.0, 1664.0, 4096.0, 16384.0}) {
    for (double n : {2048.0, 7168.0}) f.gemm("gemm", m, n, 5120, fp8, MathType::kFp8);
  }
  // Small K: the output write is a large share of these, so the epilogue's overlap shows.
  for (double m : {2048.0, 8192.0, 16384.0}) f.gemm("gemm_small_k", m, 16384, 512, fp8, MathType::kFp8);
  for (double bytes : {1e5, 1e6, 1e7, 1e8, 1e9, 4e9}) f.elementwise("stream", bytes / 4096, 4096, bytes);
  for (double rows : {4096.0, 65536.0, 1048576.0}) {  // Engram rows over the host link
    Kernel& copy = f.push({});
    copy.name = "engram_host_gather";
    copy.kernel_class = KernelClass::kHostCopy;
    copy.stream = Stream::kHostCopy;
    copy.shape = {static_cast<int64_t>(rows), 264, 1, 1};
    copy.link_bytes = copy.hbm_bytes = rows * 264;
  }
  return kernels;
}

// Expert GEMMs a harness would sweep on Hopper: FP4 weights widened to FP8
// from decode's rows to prefill's, beside FP8 weights that widen nothing.
std::vector<Kernel> expert_sweep() {
  std::vector<Kernel> kernels;
  KernelFactory f(kernels);
  const BlockScaledFormat fp4{ElementFormat::kFp4E2M1, ElementFormat::kE8M0, 32};
  const BlockScaledFormat fp8{ElementFormat::kFp8E4M3, std::nullopt, 0};
  for (const BlockScaledFormat& weights : {fp4, fp8}) {
    for (double rows : {4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0}) {
      for (double n : {2304.0, 5120.0}) f.grouped_gemm("experts", 8 * rows, 8, n, 5120, weights);
    }
  }
  return kernels;
}

// Our W4A16 kernel's rows as the harness writes them beside the W4A8 sweep:
// BF16 activations, FP4 weights widened to BF16, its fixed tiles (16 or 64
// rows x 64 weight rows), decode's rows only (up to 64 an expert; beyond,
// the harness records them as baselines).
std::vector<Kernel> expert_sweep_with_w4a16() {
  std::vector<Kernel> kernels = expert_sweep();
  KernelFactory f(kernels);
  const BlockScaledFormat fp4{ElementFormat::kFp4E2M1, ElementFormat::kE8M0, 32};
  for (double rows : {4.0, 16.0, 32.0, 64.0}) {
    for (double n : {2304.0, 5120.0}) {
      Kernel& k = f.grouped_gemm("experts_w4a16", 48 * rows, 48, n, 5120, fp4, MathType::kBf16);
      k.tiling = {Tiling::Rule::kFixed, rows <= 16 ? 16 : 64, 64};
    }
  }
  return kernels;
}

// A data folder of its own (GPU profiles linked, the priors copied), so a
// test can commit calibrations and measurements without touching the repository's.
std::filesystem::path scratch_data_dir(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / name;
  fs::remove_all(root);
  fs::create_directories(root / "validation" / "calibration");
  fs::create_directories(root / "validation" / "measurements");
  fs::create_directory_symlink(fs::path(V41SIM_SOURCE_DIR) / "hw_profiles", root / "hw_profiles");
  fs::copy_file(kPriors, root / "validation" / "calibration" / "defaults.yaml");
  return root;
}

// A scratch folder of the running test's own: ctest runs tests in parallel.
std::filesystem::path test_scratch(const std::string& leaf) {
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return std::filesystem::temp_directory_path() / ("v41sim_calibration_" + test) / leaf;
}

// Writes what a GPU with known efficiencies would measure; `noise` scatters
// each time by up to that fraction (a fixed pattern, like run-to-run spread).
std::filesystem::path synthetic_measurements(const GpuProfile& gpu, const CostParams& truth, double noise = 0,
                                             const std::vector<Kernel>& kernels = sweep()) {
  const auto dir = test_scratch("h200");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream out(dir / "sweep.csv");
  out << "# gpu: synthetic H200\n# sm_count: 132\n# driver: none\n# cuda: none\n# date: 2026-11-29\n"
         "# git_commit: test\n";
  out << "kernel,class,math,m,n,k,batch,flops,hbm_bytes,median_us,min_us,max_us,narrow_fp8_values,"
         "narrow_fp4_values,tiling\n";
  const KernelCostModel model(gpu, truth, false);
  int row = 0;
  for (const Kernel& k : kernels) {
    const double us = model.time(k).busy_us * (1.0 + noise * std::sin(1.7 * row++));
    // The harness's tiling column: its own kernels' fixed tiles, else the class's rule.
    const std::string tiling = k.tiling.rule == Tiling::Rule::kFixed
                                   ? fmt::format("{}x{}", k.tiling.m, k.tiling.n)
                                   : std::string("class");
    out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", k.name, class_key(k.kernel_class),
                       math_name(k.math), k.shape.m, k.shape.n, k.shape.k, k.shape.batch, k.flops,
                       k.hbm_bytes, us, us, us, k.narrow.fp8, k.narrow.fp4, tiling);
  }
  return dir;
}

TEST(Calibration, RecoversKnownParameters) {
  const GpuProfile gpu = load_gpu_profile_file(testing::gpu_path("h200"));
  const CostParams priors = load_cost_params_file(kPriors);
  CostParams truth = priors;
  for (KernelClass cls : {KernelClass::kGemm, KernelClass::kElementwise}) {
    ClassCost& c = truth.classes[static_cast<std::size_t>(cls)];
    c.compute_efficiency = SourcedValue::assumed(cls == KernelClass::kGemm ? 0.55 : 0.4, "truth");
    c.memory_efficiency = SourcedValue::assumed(cls == KernelClass::kGemm ? 0.7 : 0.9, "truth");
    c.fixed_overhead_us = SourcedValue::assumed(3.0, "truth");
  }
  truth.classes[static_cast<std::size_t>(KernelClass::kGemm)].epilogue_overlap =
      SourcedValue::assumed(0.5, "truth");
  const MeasurementSet m = load_measurements(synthetic_measurements(gpu, truth).string());
  const CalibrationResult r = calibrate(m, gpu, priors);
  ASSERT_EQ(r.classes.size(), 2u);
  const ClassFit& gemm = r.classes[0];
  EXPECT_EQ(gemm.kernel_class, KernelClass::kGemm);
  EXPECT_NEAR(gemm.compute_efficiency, 0.55, 0.01);
  EXPECT_NEAR(gemm.memory_efficiency, 0.7, 0.01);
  EXPECT_NEAR(gemm.fixed_overhead_us, 3.0, 0.1);
  ASSERT_TRUE(gemm.epilogue_overlap.has_value());  // the priors give GEMMs one to fit
  EXPECT_NEAR(*gemm.epilogue_overlap, 0.5, 0.05);
  EXPECT_LT(gemm.held_out_mape_pct, 1.0);
  const ClassFit& stream = r.classes[1];
  EXPECT_FALSE(stream.epilogue_overlap.has_value());  // no epilogue to hide
  EXPECT_NEAR(stream.memory_efficiency, 0.9, 0.01);
  EXPECT_LT(stream.held_out_mape_pct, 1.0);
  EXPECT_GT(gemm.held_out_rows, 0);
}

// Expert GEMMs whose FP4 weights are widened in some rows and not in others
// show how much of the widening hides under the math: the fit recovers the
// share it was generated with, and writes it as calibrated. A class whose
// rows widen nothing keeps the prior's share (the streams here).
TEST(Calibration, RecoversTheWideningShareWhereTheRowsShowIt) {
  const GpuProfile gpu = load_gpu_profile_file(testing::gpu_path("h200"));
  const CostParams priors = load_cost_params_file(kPriors);
  CostParams truth = priors;
  ClassCost& grouped = truth.classes[static_cast<std::size_t>(KernelClass::kGroupedGemm)];
  grouped.compute_efficiency = SourcedValue::assumed(0.6, "truth");
  grouped.memory_efficiency = SourcedValue::assumed(0.7, "truth");
  grouped.fixed_overhead_us = SourcedValue::assumed(2.0, "truth");
  grouped.widening_overlap = SourcedValue::assumed(0.4, "truth");
  const MeasurementSet m = load_measurements(synthetic_measurements(gpu, truth, 0, expert_sweep()).string());
  const CalibrationResult r = calibrate(m, gpu, priors);
  ASSERT_EQ(r.classes.size(), 1u);
  const ClassFit& fit = r.classes[0];
  EXPECT_EQ(fit.kernel_class, KernelClass::kGroupedGemm);
  ASSERT_TRUE(fit.widening_overlap.has_value());
  EXPECT_NEAR(*fit.widening_overlap, 0.4, 0.05);
  EXPECT_NEAR(fit.compute_efficiency, 0.6, 0.02);
  EXPECT_NEAR(fit.memory_efficiency, 0.7, 0.02);
  EXPECT_LT(fit.held_out_mape_pct, 1.0);
  const SourcedValue& written = *r.params.of(KernelClass::kGroupedGemm).widening_overlap;
  EXPECT_NEAR(written.value(), *fit.widening_overlap, 1e-12);
  EXPECT_EQ(written.provenance().kind, ProvenanceKind::kCalibrated);
  // With our W4A16 kernel's rows beside them (the other engine choice,
  // widening to BF16 in its own fixed tiles) the class fits them too, to the
  // same parameters.
  const CalibrationResult both =
      calibrate(load_measurements(synthetic_measurements(gpu, truth, 0, expert_sweep_with_w4a16()).string()),
                gpu, priors);
  ASSERT_EQ(both.classes.size(), 1u);
  ASSERT_TRUE(both.classes[0].widening_overlap.has_value());
  EXPECT_NEAR(*both.classes[0].widening_overlap, 0.4, 0.05);
  EXPECT_NEAR(both.classes[0].compute_efficiency, 0.6, 0.02);
  EXPECT_NEAR(both.classes[0].memory_efficiency, 0.7, 0.02);
  EXPECT_LT(both.classes[0].held_out_mape_pct, 1.0);
  // GEMMs of FP8 weights alone widen nothing: no share to fit.
  const CalibrationResult plain =
      calibrate(load_measurements(synthetic_measurements(gpu, truth).string()), gpu, priors);
  for (const ClassFit& c : plain.classes)
    EXPECT_FALSE(c.widening_overlap.has_value()) << class_key(c.kernel_class);
}

TEST(Calibration, SameInputsSameFileAndTheFileLoads) {
  const GpuProfile gpu = load_gpu_profile_file(testing::gpu_path("h200"));
  const CostParams priors = load_cost_params_file(kPriors);
  const MeasurementSet m = load_measurements(synthetic_measurements(gpu, priors).string());
  const std::string a = calibration_yaml(calibrate(m, gpu, priors), m, priors);
  const std::string b = calibration_yaml(calibrate(m, gpu, priors), m, priors);
  EXPECT_EQ(a, b);
  const auto file = test_scratch("fitted.yaml");
  std::ofstream(file) << a;
  const CostParams loaded = load_cost_params_file(file.string());
  EXPECT_EQ(loaded.status, "calibrated");
  EXPECT_EQ(loaded.of(KernelClass::kGemm).compute_efficiency.provenance().kind, ProvenanceKind::kCalibrated);
  EXPECT_EQ(loaded.of(KernelClass::kAttention).compute_efficiency.provenance().kind,
            priors.of(KernelClass::kAttention).compute_efficiency.provenance().kind);
  ASSERT_TRUE(loaded.of(KernelClass::kGroupedGemm).weight_only_tile);  // written with the fit
  EXPECT_EQ(loaded.of(KernelClass::kGroupedGemm).weight_only_tile->m,
            priors.of(KernelClass::kGroupedGemm).weight_only_tile->m);
  EXPECT_EQ(loaded.of(KernelClass::kGroupedGemm).weight_only_tile->n,
            priors.of(KernelClass::kGroupedGemm).weight_only_tile->n);
}

TEST(Calibration, MalformedMeasurementsNameFileLineAndColumn) {
  const auto dir = std::filesystem::temp_directory_path() / "v41sim_bad_measurements";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "a.csv")
      << "# gpu: x\n# sm_count: 1\n# driver: d\n# cuda: c\n# date: t\n# git_commit: g\n"
         "kernel,class,math,m,n,k,batch,flops,hbm_bytes,median_us,min_us,max_us\n"
         "g,gemm,fp8,1,1,1,1,10,10,fast,1,1\n";
  try {
    load_measurements(dir.string());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 8);
    EXPECT_EQ(e.where().field, "median_us");
  }
  std::ofstream(dir / "a.csv") << "kernel,class,math,m,n,k,batch,flops,hbm_bytes,median_us,min_us,max_us\n";
  try {
    load_measurements(dir.string());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "gpu");  // the metadata header is required
  }
}

}  // namespace
}  // namespace v41sim

namespace v41sim {
namespace {

// A calibration of one GPU is used, labelled "extrapolated", by the other
// profiles: within its architecture with a slightly wider band, across
// architectures (Hopper -> Blackwell) with the wider assumed band.
TEST(Calibration, TransfersWithBandsWidenedByTheDistance) {
  namespace fs = std::filesystem;
  const fs::path root = scratch_data_dir("v41sim_transfer");
  const GpuProfile h200 = load_gpu_profile_file(testing::gpu_path("h200"));
  const CostParams priors = load_cost_params_file(kPriors);
  // Times scattered by up to 4%: the fit cannot absorb that, so the bands are not zero.
  const MeasurementSet m = load_measurements(synthetic_measurements(h200, priors, 0.04).string());
  const CalibrationResult fit = calibrate(m, h200, priors);
  std::ofstream(root / "validation" / "calibration" / "h200.yaml") << calibration_yaml(fit, m, priors);

  const GpuCostModel own(root.string(), (root / "hw_profiles" / "h200.yaml").string(), false);
  EXPECT_EQ(own.cost().params().status, "calibrated");
  EXPECT_TRUE(own.cost().params().extrapolated_from.empty());
  EXPECT_GE(own.cost().params().held_out_mape_pct, 0.0);
  const double gemm_band = *own.cost().params().error_band_pct(KernelClass::kGemm);
  EXPECT_GT(gemm_band, 0.5);
  EXPECT_LT(gemm_band, 8.0);
  EXPECT_NEAR(gemm_band, fit.classes[0].band_90_pct, 1e-5 * gemm_band);  // as written, to 6 digits
  EXPECT_FALSE(own.cost().params().error_band_pct(KernelClass::kAttention).has_value());  // not measured
  // The priors' structure the fit does not touch is written back as read.
  const ClassCost& written = own.cost().params().of(KernelClass::kGemm);
  const ClassCost& prior = priors.of(KernelClass::kGemm);
  ASSERT_TRUE(written.narrowing && written.pipeline && written.balance_exponent);
  EXPECT_EQ(written.narrowing->tile_n_min, prior.narrowing->tile_n_min);
  EXPECT_EQ(written.pipeline->stages, prior.pipeline->stages);
  EXPECT_EQ(written.pipeline->straddling_stages, prior.pipeline->straddling_stages);
  EXPECT_DOUBLE_EQ(written.balance_exponent->value(), prior.balance_exponent->value());
  EXPECT_DOUBLE_EQ(own.cost().params().memory_latency_us.value(), priors.memory_latency_us.value());

  const GpuCostModel h20(root.string(), (root / "hw_profiles" / "h20.yaml").string(), false);
  EXPECT_EQ(h20.cost().params().status, "calibrated");
  EXPECT_EQ(h20.cost().params().extrapolated_from, "h200");
  EXPECT_NE(h20.cost().params().label().find("extrapolated from h200 within the architecture"),
            std::string::npos);
  const CostParams& p = h20.cost().params();
  EXPECT_DOUBLE_EQ(*p.error_band_pct(KernelClass::kGemm),
                   gemm_band + p.transfer.same_architecture_extra_pct.value());

  const GpuCostModel b200(root.string(), (root / "hw_profiles" / "b200.yaml").string(), false);
  EXPECT_EQ(b200.cost().params().extrapolation, Extrapolation::kCrossArchitecture);
  EXPECT_EQ(b200.cost().params().extrapolated_from, "h200");
  EXPECT_NE(b200.cost().params().label().find("across architectures"), std::string::npos);
  const CostParams& b = b200.cost().params();
  EXPECT_DOUBLE_EQ(*b.error_band_pct(KernelClass::kGemm),
                   gemm_band + b.transfer.cross_architecture_extra_pct.value());
  EXPECT_GT(b.transfer.cross_architecture_extra_pct.value(), p.transfer.same_architecture_extra_pct.value());

  // Within the architecture, compute efficiencies are carried by per-SM tensor
  // rate: the H20's tensor cores are capped to a quarter of an H200's per SM.
  ASSERT_TRUE(p.per_sm_rate_ratio.has_value());
  EXPECT_EQ(p.per_sm_rate_ratio->reference_gpu, "h200");
  EXPECT_FALSE(b.per_sm_rate_ratio.has_value());  // across architectures: the wider band instead

  // With no calibration file at all, every GPU keeps the priors and has no band.
  fs::remove(root / "validation" / "calibration" / "h200.yaml");
  const GpuCostModel bare(root.string(), (root / "hw_profiles" / "b200.yaml").string(), false);
  EXPECT_EQ(bare.cost().params().status, "uncalibrated");
  EXPECT_FALSE(bare.cost().params().error_band_pct(KernelClass::kGemm).has_value());
}

// The priors were published on H800s; the H20 (same silicon, tensor rate
// capped by firmware) gets their compute efficiencies carried over by per-SM
// tensor rate, the H100, H200 and Blackwell parts get them as they are.
TEST(Calibration, CarriesComputeEfficienciesByPerSmTensorRate) {
  namespace fs = std::filesystem;
  const fs::path root = scratch_data_dir("v41sim_rate_transfer");
  const auto profile = [&](const char* stem) {
    return (root / "hw_profiles" / (std::string(stem) + ".yaml")).string();
  };
  const GpuCostModel h20(root.string(), profile("h20"), false);
  const CostParams& p = h20.cost().params();
  ASSERT_TRUE(p.per_sm_rate_ratio.has_value());
  EXPECT_EQ(p.per_sm_rate_ratio->reference_gpu, "h800");
  const GpuProfile h800 = load_gpu_profile_file(profile("h800"));
  const GpuProfile& g = h20.gpu();
  EXPECT_DOUBLE_EQ(p.per_sm_rate_ratio->bf16, (g.tensor.bf16_tflops.value() / g.sm_count.value()) /
                                                  (h800.tensor.bf16_tflops.value() / h800.sm_count.value()));
  EXPECT_LT(p.per_sm_rate_ratio->fp8, 0.5);  // capped
  const double prior = p.of(KernelClass::kGemm).compute_efficiency.value();
  const double carried = p.compute_efficiency(KernelClass::kGemm, MathType::kBf16);
  EXPECT_DOUBLE_EQ(carried, transfer_compute_efficiency(prior, p.per_sm_rate_ratio->bf16));
  EXPECT_GT(carried, prior);
  EXPECT_LT(carried, 1.0);
  EXPECT_DOUBLE_EQ(p.compute_efficiency(KernelClass::kElementwise, MathType::kFp32),
                   p.of(KernelClass::kElementwise).compute_efficiency.value());  // FP32 units are not capped
  EXPECT_NE(p.label().find("carried from h800"), std::string::npos);
  for (const char* stem : {"h100_sxm", "h200", "h800", "b200", "gb200_nvl72"}) {
    const GpuCostModel same(root.string(), profile(stem), false);
    EXPECT_FALSE(same.cost().params().per_sm_rate_ratio.has_value()) << stem;
    EXPECT_DOUBLE_EQ(same.cost().params().compute_efficiency(KernelClass::kGemm, MathType::kBf16), prior)
        << stem;
  }
  // The rule itself: no change at the same rate, toward 1 as the cap tightens.
  EXPECT_DOUBLE_EQ(transfer_compute_efficiency(0.7, 1.0), 0.7);
  EXPECT_GT(transfer_compute_efficiency(0.7, 0.25), transfer_compute_efficiency(0.7, 0.5));
  EXPECT_LT(transfer_compute_efficiency(0.7, 2.0), 0.7);

  // A reference GPU with no profile is an error at its line in the priors.
  const fs::path priors = root / "validation" / "calibration" / "defaults.yaml";
  std::string text = testing::read_text(priors.string());
  const std::string field = "efficiencies_measured_on: h800";
  ASSERT_NE(text.find(field), std::string::npos);
  text.replace(text.find(field), field.size(), "efficiencies_measured_on: h999");
  std::ofstream(priors) << text;
  try {
    const GpuCostModel bad(root.string(), profile("h20"), false);
    FAIL() << "a missing reference GPU was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "efficiencies_measured_on");
    EXPECT_GT(e.where().line, 0);
    EXPECT_NE(std::string(e.what()).find("hw_profiles"), std::string::npos);
  }
}

}  // namespace
}  // namespace v41sim

#include "sim/cost/error_band.h"
#include "tests/step_test_support.h"

namespace v41sim {
namespace {

// A step's band: the calibrated classes' bands weighted by their kernels'
// time, over the share of time they cover; nothing claimed for the rest.
TEST(ErrorBand, WeightsClassBandsByTimeAndNamesWhatItDoesNotCover) {
  const GpuProfile gpu = load_gpu_profile_file(testing::gpu_path("h200"));
  const ModelAnalysis model = testing::analyze("deepseek_v4_1_flash");
  const StepGraph graph = build_step_graph(model, testing::shape(Phase::kDecode, 32, 131072));

  const CostParams priors = load_cost_params_file(kPriors);
  const KernelCostModel uncalibrated(gpu, priors, true);
  const ErrorBand none = step_error_band(time_step(graph, uncalibrated), priors);
  EXPECT_EQ(none.covered_share, 0.0);
  EXPECT_NE(none.describe().find("unknown"), std::string::npos);

  CostParams banded = priors;
  banded.classes[static_cast<std::size_t>(KernelClass::kGemm)].error_band_pct =
      SourcedValue::assumed(4.0, "t");
  banded.classes[static_cast<std::size_t>(KernelClass::kGroupedGemm)].error_band_pct =
      SourcedValue::assumed(10.0, "t");
  const KernelCostModel cost(gpu, banded, true);
  const StepTiming timing = time_step(graph, cost);
  const ErrorBand band = step_error_band(timing, banded);
  // By hand: the time of each banded class.
  double gemm = 0, grouped = 0, total = 0;
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    for (std::size_t j = 0; j < graph.layers[i].kernels().size(); ++j) {
      const double t = timing.layers[i].kernels[j].time_us;
      total += t;
      if (graph.layers[i].kernels()[j].kernel_class == KernelClass::kGemm) gemm += t;
      if (graph.layers[i].kernels()[j].kernel_class == KernelClass::kGroupedGemm) grouped += t;
    }
  }
  ASSERT_GT(gemm, 0);
  ASSERT_GT(grouped, 0);
  EXPECT_NEAR(band.pct, (4.0 * gemm + 10.0 * grouped) / (gemm + grouped), 1e-9);
  EXPECT_NEAR(band.covered_share, (gemm + grouped) / total, 1e-12);
  EXPECT_LT(band.covered_share, 1.0);  // attention, indexer, all-to-all... carry no band here
  EXPECT_NE(band.describe().find("no band on the rest"), std::string::npos);
}

}  // namespace
}  // namespace v41sim

namespace v41sim {
namespace {

// Rows of a correctness-first baseline are recorded but do not move the fit.
TEST(Calibration, BaselineRowsAreNotFitted) {
  const GpuProfile gpu = load_gpu_profile_file(testing::gpu_path("h200"));
  const CostParams priors = load_cost_params_file(kPriors);
  const auto dir = synthetic_measurements(gpu, priors);
  const CalibrationResult clean = calibrate(load_measurements(dir.string()), gpu, priors);
  // A far slower "baseline" GEMM next to the real ones.
  std::ofstream(dir / "sweep.csv", std::ios::app)
      << "gemm_fp32_baseline,gemm,fp8,4096,7168,5120,1,3e11,1e8,9000,9000,9000,0,0,class\n";
  const MeasurementSet with_baseline = load_measurements(dir.string());
  const CalibrationResult fit = calibrate(with_baseline, gpu, priors);
  EXPECT_EQ(fit.baseline_rows, 1);
  ASSERT_EQ(fit.classes.size(), clean.classes.size());
  EXPECT_DOUBLE_EQ(fit.classes[0].compute_efficiency, clean.classes[0].compute_efficiency);
  EXPECT_EQ(fit.classes[0].train_rows + fit.classes[0].held_out_rows,
            clean.classes[0].train_rows + clean.classes[0].held_out_rows);
  EXPECT_NE(calibration_yaml(fit, with_baseline, priors).find("1 baseline rows not fitted"),
            std::string::npos);
}

}  // namespace
}  // namespace v41sim

#include "sim/common/catalog.h"
#include "sim/validation/held_out_validation.h"

namespace v41sim {
namespace {

// validate's own-measurement references: exactly the shapes the fit held
// out, each predicted with the GPU's committed calibration.
TEST(HeldOutValidation, ReportsTheShapesTheFitHeldOut) {
  namespace fs = std::filesystem;
  const fs::path root = scratch_data_dir("v41sim_held_out");
  const Catalog catalog(root.string());
  EXPECT_TRUE(validate_held_out_measurements(catalog).empty());  // nothing measured yet

  const GpuProfile h200 = load_gpu_profile_file(testing::gpu_path("h200"));
  const CostParams priors = load_cost_params_file(kPriors);
  const fs::path measured = synthetic_measurements(h200, priors, 0.04);
  fs::copy(measured, root / "validation" / "measurements" / "h200");
  const MeasurementSet set = load_measurements((root / "validation" / "measurements" / "h200").string());
  EXPECT_TRUE(validate_held_out_measurements(catalog).empty());  // measured, not yet fitted
  const CalibrationResult fit = calibrate(set, h200, priors);
  std::ofstream(root / "validation" / "calibration" / "h200.yaml") << calibration_yaml(fit, set, priors);

  const std::vector<ValidationRow> rows = validate_held_out_measurements(catalog);
  int held_out = 0;
  for (const ClassFit& c : fit.classes) held_out += c.held_out_rows;
  for (const ClassFit& c : fit.classes)
    EXPECT_NE(c.kernel_class, KernelClass::kHostCopy);  // timed on the link
  int link_rows = 0;
  for (const Measurement& m : set.rows) link_rows += m.kernel.kernel_class == KernelClass::kHostCopy;
  ASSERT_EQ(link_rows, 3);
  ASSERT_EQ(static_cast<int>(rows.size()), held_out + link_rows);  // every link-timed row is validated
  double sum_abs = 0;
  int fitted_rows = 0;
  for (const ValidationRow& r : rows) {
    EXPECT_EQ(r.reference.gpu, "h200");
    EXPECT_EQ(r.reference.metric, "us");
    EXPECT_EQ(r.reference.tolerance_pct, kHeldOutTolerancePct);
    EXPECT_NEAR(r.error_pct, 100.0 * (r.predicted - r.reference.value) / r.reference.value, 1e-9);
    EXPECT_EQ(r.within_tolerance, std::fabs(r.error_pct) <= kHeldOutTolerancePct);
    if (r.reference.name.find("engram_host_gather") != std::string::npos) {
      EXPECT_LT(std::fabs(r.error_pct),
                5.0);  // the link model, given link bytes, reproduces the (noisy) truth
      continue;
    }
    sum_abs += std::fabs(r.error_pct);
    ++fitted_rows;
  }
  ASSERT_EQ(fitted_rows, held_out);
  // The same rows the fit scored: their mean |error| is the classes' held-out MAPE, weighted by rows.
  double weighted_mape = 0;
  for (const ClassFit& c : fit.classes) weighted_mape += c.held_out_mape_pct * c.held_out_rows;
  EXPECT_NEAR(sum_abs / held_out, weighted_mape / held_out, 0.05);  // the file rounds to 6 digits
}

}  // namespace
}  // namespace v41sim

namespace v41sim {
namespace {

// The tile shape is a discrete parameter of the fit: measurements made with
// a different tile (its wave quantization) are recognised. With N a multiple
// of 256, this sweep cannot tell 256 x 128 from 128 x 256, so what is checked
// is what the data identify: the tile area, the efficiencies, and errors the
// prior's tile would not give.
// Rows of one shape may count different work (decode's indexer logits, one
// query a request or a request's drafts sharing its keys) and even take the
// same time: the held-out split takes them in one order whatever the file's.
TEST(HeldOutValidation, TheSplitDoesNotDependOnTheFilesOrder) {
  std::vector<Measurement> rows;
  for (int i = 0; i < 8; ++i) {
    Measurement m;
    m.file = "synthetic.csv";
    m.line = i + 1;
    m.kernel.name = "indexer_logits";
    m.kernel.kernel_class = KernelClass::kIndexer;
    m.kernel.shape = {64, 65536, 4096, 1};
    m.kernel.flops = 1e9 * (1 + i % 2);
    m.kernel.hbm_bytes = 1e8 * (1 + i);  // every row its own work
    m.median_us = m.min_us = m.max_us = 100.0;
    rows.push_back(m);
  }
  auto held_out_lines = [](std::vector<const Measurement*> order) {
    std::vector<int> lines;
    for (const Measurement* m : split_rows(std::move(order)).held_out) lines.push_back(m->line);
    return lines;
  };
  std::vector<const Measurement*> forward, backward;
  for (const Measurement& m : rows) forward.push_back(&m);
  backward.assign(forward.rbegin(), forward.rend());
  EXPECT_EQ(held_out_lines(forward), held_out_lines(backward));
  EXPECT_EQ(held_out_lines(forward).size(), 2u);
}

TEST(Calibration, RecoversTheTileShape) {
  const GpuProfile gpu = load_gpu_profile_file(testing::gpu_path("h200"));
  const CostParams priors = load_cost_params_file(kPriors);
  CostParams truth = priors;
  ClassCost& gemm = truth.classes[static_cast<std::size_t>(KernelClass::kGemm)];
  gemm.tile_m = 256;  // the priors say 128 x 128
  gemm.compute_efficiency = SourcedValue::assumed(0.6, "truth");
  gemm.fixed_overhead_us = SourcedValue::assumed(2.0, "truth");
  const MeasurementSet measured = load_measurements(synthetic_measurements(gpu, truth).string());
  const CalibrationResult r = calibrate(measured, gpu, priors);
  ASSERT_FALSE(r.classes.empty());
  const ClassFit& fit = r.classes[0];
  ASSERT_EQ(fit.kernel_class, KernelClass::kGemm);
  EXPECT_EQ(fit.tile_m * fit.tile_n, 256 * 128) << fit.tile_m << "x" << fit.tile_n;
  EXPECT_NEAR(fit.compute_efficiency, 0.6, 0.01);
  EXPECT_LT(fit.held_out_mape_pct, 1.0);
  EXPECT_EQ(r.params.of(KernelClass::kGemm).tile_m, fit.tile_m);  // the written parameters carry it
  // The fitted parameters with the prior's tile put back predict these GEMMs worse.
  auto gemm_mape = [&](const CostParams& params) {
    const KernelCostModel model(gpu, params, false);
    double sum = 0;
    int n = 0;
    for (const Measurement& m : measured.rows) {
      if (m.kernel.kernel_class != KernelClass::kGemm) continue;
      sum += std::fabs(predicted_device_us(model, m) - m.median_us) / m.median_us;
      ++n;
    }
    return 100.0 * sum / n;
  };
  CostParams prior_tile = r.params;
  prior_tile.classes[static_cast<std::size_t>(KernelClass::kGemm)].tile_m = 128;
  prior_tile.classes[static_cast<std::size_t>(KernelClass::kGemm)].tile_n = 128;
  EXPECT_GT(gemm_mape(prior_tile), gemm_mape(r.params) + 1.0);
}

}  // namespace
}  // namespace v41sim

namespace v41sim {
namespace {

// The priors file with one text replaced, written to a temporary file.
std::string priors_with(const std::string& name, const std::string& from, const std::string& to) {
  std::ifstream in(kPriors);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  const auto path = std::filesystem::temp_directory_path() / (name + ".yaml");
  std::ofstream(path) << text;
  return path.string();
}

// Loading `path` is refused at its file and line, at a field naming `field`,
// with `message` in the text.
void expect_refused(const std::string& path, const std::string& field, const std::string& message = "") {
  try {
    load_cost_params_file(path);
    ADD_FAILURE() << path << " was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, path);
    EXPECT_GT(e.where().line, 0);
    EXPECT_NE(e.where().field.find(field), std::string::npos) << e.where().field;
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

// The CUDA cores' costs are required: the widening's, and the indexer's fold
// efficiency (its logits fold their heads there); a class's widening overlap
// and fold efficiency are shares.
TEST(Calibration, CudaCoreFieldsAreChecked) {
  expect_refused(
      priors_with("v41sim_widening_over", "widening_overlap: {value: 0,", "widening_overlap: {value: 1.5,"),
      "widening_overlap", "at most 1");
  expect_refused(
      priors_with("v41sim_widening_missing", "  fp4_to_fp8_integer_ops:", "  fp4_to_fp6_integer_ops:"),
      "fp4_to_f");
  expect_refused(
      priors_with("v41sim_fold_missing", "    fold_efficiency: {value: 0.35,", "    # {value: 0.35,"),
      "indexer.fold_efficiency", "required");
  expect_refused(
      priors_with("v41sim_fold_above_one", "fold_efficiency: {value: 0.35,", "fold_efficiency: {value: 1.5,"),
      "fold_efficiency", "a share of peak, of 0.001 to 1");
}

// EP transfers and host copies are timed on their links: their classes need no
// entry, and one may hold a band but no tiles or efficiencies, which nothing
// would read.
TEST(Calibration, LinkTimedClassesHoldOnlyABand) {
  const std::string end_of_classes = "  # all_to_all and host_copy have no entry";
  const std::string banded = priors_with(
      "v41sim_all_to_all_band", end_of_classes,
      "  all_to_all:\n    error_band_pct: {value: 7.5, assumed: \"a test's band\"}\n" + end_of_classes);
  EXPECT_DOUBLE_EQ(load_cost_params_file(banded).error_band_pct(KernelClass::kAllToAll).value_or(0), 7.5);
  EXPECT_FALSE(load_cost_params_file(kPriors).of(KernelClass::kHostCopy).error_band_pct.has_value());
  expect_refused(
      priors_with("v41sim_host_copy_tile", end_of_classes, "  host_copy:\n    tile_m: 1\n" + end_of_classes),
      "host_copy.tile_m");
}

}  // namespace
}  // namespace v41sim

namespace v41sim {
namespace {

// Attention rows that all carry the same share of bytes outside the main loop
// (as our sparse decode at its fixed top-k) cannot tell the epilogue overlap
// from the efficiencies: the fit keeps the prior's, and still finds the efficiency.
TEST(Calibration, AnEpilogueOverlapTheRowsCannotShowKeepsThePrior) {
  const GpuProfile gpu = load_gpu_profile_file(testing::gpu_path("h200"));
  const CostParams priors = load_cost_params_file(kPriors);
  ASSERT_TRUE(priors.of(KernelClass::kAttention).epilogue_overlap.has_value());
  CostParams truth = priors;
  truth.classes[static_cast<std::size_t>(KernelClass::kAttention)].compute_efficiency =
      SourcedValue::assumed(0.5, "truth");
  const KernelCostModel model(gpu, truth, false);
  MeasurementSet set;
  set.metadata = {{"gpu", "synthetic H200"}};
  int line = 0;
  for (int64_t batch : {1, 4, 8, 16, 32, 64, 128, 256, 512, 1024}) {
    for (int64_t keys : {640}) {  // top-512 + the 128-token window, every row
      Kernel k;
      k.name = "sparse_attention_decode";
      k.kernel_class = KernelClass::kAttention;
      k.math = MathType::kBf16;
      const double rows = static_cast<double>(batch * 64), per_row = 2.0 * 1024;
      k.shape = {batch * 64, keys, 1024, 1};
      k.flops = rows * static_cast<double>(keys) * per_row;
      k.epilogue_bytes = rows * 1024 * 2;
      k.hbm_bytes = static_cast<double>(batch * keys) * 288 + k.epilogue_bytes;
      Measurement m;
      m.file = "synthetic.csv";
      m.line = ++line;
      m.kernel = k;
      m.median_us = m.min_us = m.max_us = model.time(k).busy_us;
      set.rows.push_back(m);
    }
  }
  const CalibrationResult r = calibrate(set, gpu, priors);
  ASSERT_EQ(r.classes.size(), 1u);
  EXPECT_FALSE(r.classes[0].epilogue_overlap.has_value());
  EXPECT_NEAR(r.classes[0].compute_efficiency, 0.5, 0.02);
  EXPECT_EQ(r.params.of(KernelClass::kAttention).epilogue_overlap->value(),
            priors.of(KernelClass::kAttention).epilogue_overlap->value());
}

// Tile narrowing and the load pipeline are checked where they are read.
TEST(Calibration, NarrowingAndPipelineAreChecked) {
  expect_refused(priors_with("v41sim_narrowing_wide", "narrowing: {tile_m_min: 64, tile_n_min: 16,",
                             "narrowing: {tile_m_min: 64, tile_n_min: 256,"),
                 "tile_n_min", "at most the class's tile_n");
  // A typo's tile would have every shape try millions of widths (a run that never ends), or overflow.
  expect_refused(priors_with("v41sim_narrowing_many", "    tile_n: 128\n    split_min: 512   #",
                             "    tile_n: 100000\n    split_min: 512   #"),
                 "tile_n_step",
                 "expected at most 1024 widths from tile_n_min (16) to the class's tile_n (100000)");
  expect_refused(priors_with("v41sim_tile_huge", "    tile_n: 128\n    split_min: 512   #",
                             "    tile_n: 2147483648\n    split_min: 512   #"),
                 "tile_n", "expected a tile of 1 to 16777216, got 2147483648");
  expect_refused(priors_with("v41sim_pipeline_zero", "pipeline: {stages: 8,", "pipeline: {stages: 0,"),
                 "stages");
  // Wild priors are refused at their own line, not as a simulated time out of range later.
  struct Wild {
    const char *name, *from, *to, *field, *message;
  };
  for (const Wild& w :
       {Wild{"v41sim_latency_of_days", "launch_overhead_us: {value: 4.0,",
             "launch_overhead_us: {value: 2147483648,", "launch_overhead_us",
             "a fixed cost in us above 0 and at most 1e+06"},
        Wild{"v41sim_efficiency_near_zero", "memory_efficiency: {value: 0.60,",
             "memory_efficiency: {value: 1e-300,", "memory_efficiency", "a share of peak, of 0.001 to 1"},
        Wild{"v41sim_multiple_near_zero", "sm_bandwidth_multiple: {value: 2.5,",
             "sm_bandwidth_multiple: {value: 1e-300,", "sm_bandwidth_multiple", "a multiple of 1 to 100"},
        Wild{"v41sim_widening_huge", "fp4_to_fp8_integer_ops: {value: 5,",
             "fp4_to_fp8_integer_ops: {value: 1e300,", "fp4_to_fp8_integer_ops", "a count of 0.001 to 4096"}})
    expect_refused(priors_with(w.name, w.from, w.to), w.field, w.message);
  expect_refused(priors_with("v41sim_balance_below_one", "balance_exponent: {value: 3,",
                             "balance_exponent: {value: 0.5,"),
                 "balance_exponent", "exponent of 1 to 100");
  expect_refused(priors_with("v41sim_no_latency", "memory_latency_us:", "memory_latency:"), "memory_latency");
}

// The grouped class's weight-only tile (the W4A16 experts', Marlin's) is
// required, and checked where it is read.
TEST(Calibration, WeightOnlyTileIsRequiredAndChecked) {
  expect_refused(priors_with("v41sim_weight_only_missing", "weight_only_tile: {m: 64, n: 128}", ""),
                 "grouped_gemm.weight_only_tile", "required");
  expect_refused(
      priors_with("v41sim_weight_only_zero", "weight_only_tile: {m: 64,", "weight_only_tile: {m: 0,"),
      "weight_only_tile.m");
  expect_refused(priors_with("v41sim_weight_only_key", "weight_only_tile: {m: 64, n: 128}",
                             "weight_only_tile: {m: 64, k: 128}"),
                 "weight_only_tile");
}

}  // namespace
}  // namespace v41sim
