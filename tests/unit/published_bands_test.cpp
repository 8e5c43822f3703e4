// The priors' error on published figures as the band of the classes no
// measurement calibrated: the committed file is what the priors and the
// figures give, it is derived from the priors whatever calibrations exist,
// it is carried to each GPU widened by its distance, it never replaces a
// band fitted to measurements, and a step says which share of its band it is.
#include "sim/cost/published_bands.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "sim/common/catalog.h"
#include "sim/cost/error_band.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/hw/gpu_profile_loader.h"
#include "sim/report/error_band_view.h"
#include "sim/validation/published_band_derivation.h"
#include "sim/validation/published_reference.h"
#include "tests/step_test_support.h"
#include "tests/test_data.h"

namespace v41sim {
namespace {

namespace fs = std::filesystem;

const std::string kSource = V41SIM_SOURCE_DIR;

TEST(CommittedPublishedBands, RederivingGivesTheCommittedFile) {
  const Catalog catalog(kSource);
  EXPECT_EQ(published_bands_yaml(derive_published_bands(catalog)),
            testing::read_text(published_bands_path(kSource)))
      << "the priors or the published figures changed: run v41sim validate --write-published-bands";
}

TEST(PublishedBandDerivation, BandsOnlyClassesWithEnoughFiguresOfThePriorsArchitecture) {
  const PublishedBandDerivation d = derive_published_bands(Catalog(kSource));
  EXPECT_EQ(d.bands.measured_on, "h800");
  EXPECT_EQ(d.bands.architecture, "hopper");
  ASSERT_FALSE(d.classes.empty());
  for (const PublishedClassErrors& c : d.classes) {
    SCOPED_TRACE(std::string(class_key(c.kernel_class)));
    EXPECT_EQ(c.banded, c.stats.count >= kMinReferencesForBand);
    EXPECT_EQ(d.bands.classes[static_cast<std::size_t>(c.kernel_class)].has_value(), c.banded);
    EXPECT_LE(c.set_priors, c.stats.count);
    if (c.banded) {
      EXPECT_GT(c.stats.band_90_pct, 0.0);
      EXPECT_LE(c.stats.band_90_pct, c.stats.worst_pct);
    }
  }
  // The Blackwell figures check the transfer; none of them makes a band.
  ASSERT_FALSE(d.transfer_checks.empty());
  for (const TransferCheck& c : d.transfer_checks) {
    EXPECT_EQ(c.gpu, "b200");
    const auto& band = d.bands.classes[static_cast<std::size_t>(c.kernel_class)];
    ASSERT_TRUE(band.has_value());
    EXPECT_DOUBLE_EQ(c.band_pct, band->band_90_pct + d.cross_architecture_extra_pct);
    EXPECT_EQ(c.within, std::fabs(c.error_pct) <= c.band_pct);
  }
  // An MoE layer spans several classes: it makes no band and checks none.
  for (const TransferCheck& c : d.transfer_checks) EXPECT_EQ(c.reference.find("Mega MoE"), std::string::npos);
}

// Blackwell's figures of a class with no Hopper band (the mHC kernels on
// B200: elementwise, where Hopper has one streaming figure; the top-k and the
// indexer's logits, where it has none) are reported, class by class, with their own
// error and make no band; no class with a band is among them.
TEST(PublishedBandDerivation, ReportsFiguresElsewhereOfAClassWithNoBand) {
  const Catalog catalog(kSource);
  const PublishedBandDerivation d = derive_published_bands(catalog);
  std::map<KernelClass, int> on_blackwell;
  for (const PublishedReference& r : load_published_references(catalog)) {
    if (r.gpu != "b200" && r.gpu != "gb200_nvl72") continue;
    if (r.probe_kind == "mhc" || r.probe_kind == "stream") ++on_blackwell[KernelClass::kElementwise];
    if (r.probe_kind == "topk") ++on_blackwell[KernelClass::kTopK];
    if (r.probe_kind == "indexer") ++on_blackwell[KernelClass::kIndexer];
  }
  ASSERT_EQ(on_blackwell.size(), 3u);
  ASSERT_EQ(d.unbanded_elsewhere.size(), on_blackwell.size());
  for (const UnbandedElsewhere& u : d.unbanded_elsewhere) {
    SCOPED_TRACE(std::string(class_key(u.kernel_class)));
    EXPECT_FALSE(d.bands.classes[static_cast<std::size_t>(u.kernel_class)].has_value());
    EXPECT_EQ(u.gpus, std::vector<std::string>{"b200"});
    EXPECT_EQ(u.stats.count, on_blackwell[u.kernel_class]);
    EXPECT_GT(u.stats.band_90_pct, 0.0);
    EXPECT_LE(u.stats.band_90_pct, u.stats.worst_pct);
  }
  for (const TransferCheck& c : d.transfer_checks) EXPECT_EQ(on_blackwell.count(c.kernel_class), 0u);
}

// A data folder whose h800 has a calibration that moves the latency-bound
// GEMMs: validate uses it, the band derivation does not.
TEST(PublishedBandDerivation, UsesThePriorsWhateverCalibrationsExist) {
  const fs::path root = testing::scratch_data_dir(
      "v41sim_published_bands_priors", {"models", "hw_profiles", "workloads", "validation/published"});
  fs::create_directories(root / "validation" / "calibration");
  const std::string priors = testing::read_text(kSource + "/validation/calibration/defaults.yaml");
  std::ofstream(root / "validation" / "calibration" / "defaults.yaml") << priors;
  std::string calibrated = priors;
  const std::string status = "status: uncalibrated\n";
  const std::string latency = "memory_latency_us: {value: 1.27,";
  ASSERT_NE(calibrated.find(status), std::string::npos);
  ASSERT_NE(calibrated.find(latency), std::string::npos);
  calibrated.replace(calibrated.find(status), status.size(), "status: calibrated\nheld_out_mape_pct: 1.0\n");
  calibrated.replace(calibrated.find(latency), latency.size(), "memory_latency_us: {value: 4.0,");
  std::ofstream(root / "validation" / "calibration" / "h800.yaml") << calibrated;

  const Catalog scratch(root.string());
  const std::vector<PublishedReference> references = load_published_references(scratch);
  const auto n2112 = std::find_if(references.begin(), references.end(), [](const PublishedReference& r) {
    return r.name.find("64x2112x7168") != std::string::npos;
  });
  ASSERT_NE(n2112, references.end());
  EXPECT_NE(validate_reference(*n2112, scratch).predicted,
            validate_reference(*n2112, scratch, /*priors_only=*/true).predicted);
  EXPECT_EQ(validate_reference(*n2112, scratch, true).predicted,
            validate_reference(*n2112, Catalog(kSource), true).predicted);
  EXPECT_EQ(published_bands_yaml(derive_published_bands(scratch)),
            published_bands_yaml(derive_published_bands(Catalog(kSource))));
}

TEST(PublishedBands, CarriedToEachGpuWidenedByItsDistance) {
  const PublishedBands bands = load_published_bands_file(published_bands_path(kSource));
  const auto& gemm = bands.classes[static_cast<std::size_t>(KernelClass::kGemm)];
  ASSERT_TRUE(gemm.has_value());
  const GpuCostModel h800(kSource, testing::gpu_path("h800"), false);
  const GpuCostModel h200(kSource, testing::gpu_path("h200"), false);
  const GpuCostModel b200(kSource, testing::gpu_path("b200"), false);
  const CostParams& p = h800.cost().params();
  EXPECT_DOUBLE_EQ(*p.error_band_pct(KernelClass::kGemm), gemm->band_90_pct);
  EXPECT_TRUE(p.of(KernelClass::kGemm).error_band_from_published);
  EXPECT_EQ(p.of(KernelClass::kGemm).error_band_pct->provenance().kind, ProvenanceKind::kDerived);
  EXPECT_DOUBLE_EQ(*h200.cost().params().error_band_pct(KernelClass::kGemm),
                   gemm->band_90_pct + p.transfer.same_architecture_extra_pct.value());
  EXPECT_DOUBLE_EQ(*b200.cost().params().error_band_pct(KernelClass::kGemm),
                   gemm->band_90_pct + p.transfer.cross_architecture_extra_pct.value());
  EXPECT_NE(b200.cost().params().of(KernelClass::kGemm).error_band_pct->provenance().note.find("another"),
            std::string::npos);
  // The label says where the priors come from and how far they are carried.
  EXPECT_NE(p.label().find("published priors from h800"), std::string::npos) << p.label();
  EXPECT_EQ(p.label().find("extrapolated"), std::string::npos) << p.label();
  EXPECT_NE(h200.cost().params().label().find("extrapolated from h800 within the architecture"),
            std::string::npos);
  EXPECT_NE(b200.cost().params().label().find("extrapolated from h800 across architectures"),
            std::string::npos);
  // Classes without enough figures stay without a band.
  for (int i = 0; i < kKernelClassCount; ++i) {
    const auto kernel_class = static_cast<KernelClass>(i);
    EXPECT_EQ(p.error_band_pct(kernel_class).has_value(),
              bands.classes[static_cast<std::size_t>(i)].has_value())
        << class_key(kernel_class);
  }
}

TEST(PublishedBands, NeverReplaceABandFittedToMeasurements) {
  const PublishedBands bands = load_published_bands_file(published_bands_path(kSource));
  const GpuProfile h200 = load_gpu_profile_file(testing::gpu_path("h200"));
  CostParams params = load_cost_params_file(kSource + "/validation/calibration/defaults.yaml");
  params.status = "calibrated";
  params.extrapolation = Extrapolation::kNone;
  params.classes[static_cast<std::size_t>(KernelClass::kGemm)].error_band_pct =
      SourcedValue::assumed(3.0, "fit");
  attach_published_bands(params, bands, h200, "h200");
  EXPECT_DOUBLE_EQ(*params.error_band_pct(KernelClass::kGemm), 3.0);
  EXPECT_FALSE(params.of(KernelClass::kGemm).error_band_from_published);
  EXPECT_TRUE(params.of(KernelClass::kGroupedGemm).error_band_from_published);
}

// A step's band says how much of it is the priors' published error.
TEST(PublishedBands, AStepSaysWhichShareOfItsBandIsPublished) {
  const GpuProfile gpu = load_gpu_profile_file(testing::gpu_path("h200"));
  const StepGraph graph =
      build_step_graph(testing::analyze("deepseek_v4_1_flash"), testing::shape(Phase::kDecode, 32, 131072));
  CostParams params = load_cost_params_file(kSource + "/validation/calibration/defaults.yaml");
  params.classes[static_cast<std::size_t>(KernelClass::kGemm)].error_band_pct =
      SourcedValue::assumed(4.0, "t");
  params.classes[static_cast<std::size_t>(KernelClass::kGemm)].error_band_from_published = true;
  params.classes[static_cast<std::size_t>(KernelClass::kGroupedGemm)].error_band_pct =
      SourcedValue::assumed(10.0, "t");
  const StepTiming timing = time_step(graph, KernelCostModel(gpu, params, true));
  double gemm = 0, grouped = 0;
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    for (std::size_t j = 0; j < graph.layers[i].kernels().size(); ++j) {
      const KernelClass c = graph.layers[i].kernels()[j].kernel_class;
      const double t = timing.layers[i].kernels[j].time_us;
      if (c == KernelClass::kGemm) gemm += t;
      if (c == KernelClass::kGroupedGemm) grouped += t;
    }
  }
  const ErrorBand band = step_error_band(timing, params);
  EXPECT_NEAR(band.published_share, gemm / (gemm + grouped), 1e-12);
  EXPECT_NE(band.describe().find("% of it the priors' error on published figures"), std::string::npos)
      << band.describe();

  ErrorBandMix mix;  // two steps of equal length, one all published, one none
  mix.add({5.0, 1.0, 1.0}, 10.0);
  mix.add({5.0, 1.0, 0.0}, 10.0);
  EXPECT_DOUBLE_EQ(mix.mixed().published_share, 0.5);
  EXPECT_FALSE(mix.mixed().no_steps);
}

// A run whose prompts all went into mixed decode steps ran no prompt step:
// its prompt-step band says so rather than "unknown".
TEST(PublishedBands, AMixOfNoStepsSaysNoneRan) {
  const ErrorBand none = ErrorBandMix().mixed();
  EXPECT_TRUE(none.no_steps);
  EXPECT_EQ(none.describe(), "no such steps ran");
  EXPECT_EQ(error_band_cell(none), "no steps");
  EXPECT_EQ(error_band_json(none)["no_steps"], true);
  ErrorBandMix uncovered;  // steps ran, but no class of theirs has a band
  uncovered.add({0.0, 0.0, 0.0}, 10.0);
  EXPECT_FALSE(uncovered.mixed().no_steps);
  EXPECT_NE(uncovered.mixed().describe().find("unknown"), std::string::npos);
}

}  // namespace
}  // namespace v41sim
