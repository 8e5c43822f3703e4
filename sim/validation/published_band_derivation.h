// How wrong the published priors are on the published kernel figures, per
// kernel class: the bands that validation/calibration/published_bands.yaml
// holds (sim/cost/published_bands.h reads them), and the check of their
// transfer to another architecture.
//
// Every figure in validation/published/*.yaml whose probe times one kernel
// class (gemm, grouped_gemm, attention, stream -> elementwise, all_to_all; an
// MoE layer spans several and is left out) is timed with the priors alone. The
// figures on the architecture of the GPU the priors were published on make a
// class's band: the 90th percentile of |error|, where at least
// kMinReferencesForBand exist. Figures on other architectures are out of
// sample for the transfer: each is checked against the band widened as the
// cross-architecture rule widens it; those of a class with no band are
// reported by class.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/common/catalog.h"
#include "sim/cost/published_bands.h"
#include "sim/validation/error_stats.h"

namespace v41sim {

// Fewer figures than this make no band: the 90th percentile of four errors is
// their worst, and of one is that error (a named assumption).
inline constexpr int kMinReferencesForBand = 5;

struct PublishedClassErrors {
  KernelClass kernel_class = KernelClass::kGemm;
  ErrorStats stats;
  int set_priors = 0;
  bool banded = false;  // at least kMinReferencesForBand figures
};

// A figure on another architecture against the band carried to it.
struct TransferCheck {
  std::string reference;
  std::string gpu;
  KernelClass kernel_class = KernelClass::kGemm;
  double error_pct = 0;
  double band_pct = 0;  // the class band plus the cross-architecture widening
  bool within = false;
};

// Figures on other architectures of a class with no band to carry to them
// (too few figures on the priors' architecture): their own error, reported
// but carried nowhere (a band comes from the priors' architecture alone).
struct UnbandedElsewhere {
  KernelClass kernel_class = KernelClass::kGemm;
  std::vector<std::string> gpus;  // the GPUs they ran on, sorted
  ErrorStats stats;
};

struct PublishedBandDerivation {
  PublishedBands bands;                       // what the file holds (file left empty)
  std::vector<PublishedClassErrors> classes;  // every class with a figure on the architecture
  std::vector<TransferCheck> transfer_checks;
  std::vector<UnbandedElsewhere> unbanded_elsewhere;  // by class
  double cross_architecture_extra_pct = 0;
  std::vector<std::pair<std::string, std::string>> inputs;  // data-dir-relative path, fnv1a
};

PublishedBandDerivation derive_published_bands(const Catalog& catalog);

// The file's text; the same inputs give the same bytes.
std::string published_bands_yaml(const PublishedBandDerivation& derivation);

}  // namespace v41sim
