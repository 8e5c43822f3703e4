#include "sim/validation/published_band_derivation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "sim/common/content_hash.h"
#include "sim/cost/cost_params.h"
#include "sim/hw/gpu_profile_loader.h"
#include "sim/validation/published_reference.h"

namespace v41sim {
namespace {

namespace fs = std::filesystem;

// The one kernel class a probe times; none for an MoE layer (several classes).
std::optional<KernelClass> probed_class(const std::string& probe_kind) {
  if (probe_kind == "gemm") return KernelClass::kGemm;
  if (probe_kind == "grouped_gemm") return KernelClass::kGroupedGemm;
  if (probe_kind == "attention") return KernelClass::kAttention;
  if (probe_kind == "indexer") return KernelClass::kIndexer;
  if (probe_kind == "stream" || probe_kind == "mhc") return KernelClass::kElementwise;
  if (probe_kind == "topk") return KernelClass::kTopK;
  if (probe_kind == "all_to_all") return KernelClass::kAllToAll;
  return std::nullopt;
}

struct ClassErrors {
  std::vector<double> relative_errors;
  int set_priors = 0;
};

// How many throughput errors, and the least and most; none where there are none.
std::optional<ThroughputErrors> throughput_errors(const std::vector<double>& errors_pct) {
  if (errors_pct.empty()) return std::nullopt;
  const auto [least, most] = std::minmax_element(errors_pct.begin(), errors_pct.end());
  return ThroughputErrors{static_cast<int>(errors_pct.size()), *least, *most};
}

std::string throughput_errors_yaml(const std::string& key, const ThroughputErrors& e) {
  return fmt::format("{}: {{references: {}, least_error_pct: {:.2f}, most_error_pct: {:.2f}}}\n", key,
                     e.references, e.least_pct, e.most_pct);
}

}  // namespace

PublishedBandDerivation derive_published_bands(const Catalog& catalog) {
  const fs::path data_dir(catalog.data_dir());
  const fs::path priors_file = data_dir / "validation" / "calibration" / "defaults.yaml";
  const CostParams priors = load_cost_params_file(priors_file.string());
  if (priors.efficiencies_measured_on.empty()) {
    throw InputError({priors_file.string(), 0, "efficiencies_measured_on"},
                     "the priors must name the GPU they were published on to derive their bands");
  }
  PublishedBandDerivation d;
  d.bands.measured_on = priors.efficiencies_measured_on;
  d.bands.architecture =
      load_gpu_profile_file(catalog.resolve_gpu(d.bands.measured_on, priors.efficiencies_measured_on_at))
          .architecture;
  d.bands.min_references = kMinReferencesForBand;
  d.cross_architecture_extra_pct = priors.transfer.cross_architecture_extra_pct.value();

  std::map<KernelClass, ClassErrors> on_architecture;
  std::vector<ValidationRow> elsewhere;
  std::set<std::string> files;
  std::map<std::string, std::string> architecture_of;  // GPU name -> architecture
  std::vector<double> whole_step_errors_pct;
  std::vector<double> serving_errors_pct;  // whole benchmarks' throughput figures
  for (const PublishedReference& reference : load_published_references(catalog)) {
    files.insert(reference.file);
    if (reference.probe_kind == "step") {
      whole_step_errors_pct.push_back(validate_reference(reference, catalog, /*priors_only=*/true).error_pct);
      continue;
    }
    if (reference.probe_kind == "serving") {
      if (reference.metric == "tokens_per_s_per_gpu")
        serving_errors_pct.push_back(validate_reference(reference, catalog, /*priors_only=*/true).error_pct);
      continue;
    }
    const auto kernel_class = probed_class(reference.probe_kind);
    if (!kernel_class) continue;
    auto [it, added] = architecture_of.try_emplace(reference.gpu);
    if (added)
      it->second = load_gpu_profile_file(catalog.resolve_gpu(reference.gpu, reference.gpu_at)).architecture;
    const ValidationRow row = validate_reference(reference, catalog, /*priors_only=*/true);
    if (it->second != d.bands.architecture) {
      elsewhere.push_back(row);
      continue;
    }
    ClassErrors& errors = on_architecture[*kernel_class];
    errors.relative_errors.push_back(row.error_pct / 100.0);
    if (!reference.sets_prior.empty()) ++errors.set_priors;
  }
  for (const auto& [kernel_class, errors] : on_architecture) {
    PublishedClassErrors c{kernel_class, error_stats(errors.relative_errors), errors.set_priors, false};
    c.banded = c.stats.count >= kMinReferencesForBand;
    if (c.banded) {
      d.bands.classes[static_cast<std::size_t>(kernel_class)] =
          PublishedClassBand{c.stats.band_90_pct, c.stats.count, c.set_priors};
    }
    d.classes.push_back(c);
  }
  std::map<KernelClass, std::pair<std::set<std::string>, std::vector<double>>> unbanded;
  for (const ValidationRow& row : elsewhere) {
    const KernelClass kernel_class = *probed_class(row.reference.probe_kind);
    const auto& band = d.bands.classes[static_cast<std::size_t>(kernel_class)];
    if (!band) {
      auto& [gpus, errors] = unbanded[kernel_class];
      gpus.insert(row.reference.gpu);
      errors.push_back(row.error_pct / 100.0);
      continue;
    }
    const double widened = band->band_90_pct + d.cross_architecture_extra_pct;
    d.transfer_checks.push_back({row.reference.name, row.reference.gpu, kernel_class, row.error_pct, widened,
                                 std::fabs(row.error_pct) <= widened});
  }
  for (const auto& [kernel_class, figures] : unbanded) {
    d.unbanded_elsewhere.push_back({kernel_class,
                                    std::vector<std::string>(figures.first.begin(), figures.first.end()),
                                    error_stats(figures.second)});
  }
  d.bands.whole_steps = throughput_errors(whole_step_errors_pct);
  d.bands.serving_benchmarks = throughput_errors(serving_errors_pct);
  d.inputs.emplace_back("validation/calibration/defaults.yaml", file_fnv1a_hex(priors_file.string()));
  for (const std::string& file : files) {
    d.inputs.emplace_back("validation/published/" + fs::path(file).filename().string(), file_fnv1a_hex(file));
  }
  return d;
}

std::string published_bands_yaml(const PublishedBandDerivation& d) {
  std::string out =
      "# The published priors' error on published kernel figures, per kernel class.\n"
      "# Written by `v41sim validate --write-published-bands` from the inputs below;\n"
      "# do not edit by hand (a test rederives it byte for byte).\n"
      "# A kernel class that no measurement of ours has calibrated carries this band,\n"
      "# widened on another GPU by the transfer rule in defaults.yaml. Most figures set\n"
      "# a prior, so the band is mostly in-sample: how well the priors fit them.\n";
  out += "source: \"v41sim validate --write-published-bands\"\n";
  out += "measured_on: " + d.bands.measured_on + "\n";
  out += "architecture: " + d.bands.architecture + "\n";
  out += fmt::format("min_references: {}   # assumed: fewer figures make no band\n", d.bands.min_references);
  out += "inputs:\n";
  for (const auto& [file, hash] : d.inputs)
    out += fmt::format("  - {{file: {}, fnv1a: \"{}\"}}\n", file, hash);
  out += "classes:\n";
  std::vector<std::string> unbanded;
  for (const PublishedClassErrors& c : d.classes) {
    if (!c.banded) {
      unbanded.push_back(fmt::format("{} ({})", class_key(c.kernel_class), c.stats.count));
      continue;
    }
    out += fmt::format("  {}: {{band_90_pct: {:.2f}, references: {}, set_priors: {}}}\n",
                       class_key(c.kernel_class), c.stats.band_90_pct, c.stats.count, c.set_priors);
  }
  for (const std::string& u : unbanded) {
    out += "# no band, fewer than min_references figures: " + u + "\n";
  }
  if (d.bands.whole_steps) {
    out +=
        "# Whole forward steps that serving engines published (probe kind step, any GPU): the\n"
        "# model's throughput over theirs, percent, with the priors. Not a band: outputs cite it.\n";
    out += throughput_errors_yaml("whole_steps", *d.bands.whole_steps);
  }
  if (d.bands.serving_benchmarks) {
    out +=
        "# Whole serving benchmarks that engines published (probe kind serving, their tokens/s\n"
        "# per GPU): the model's throughput over theirs, percent, with the priors. Outputs cite it.\n";
    out += throughput_errors_yaml("serving_benchmarks", *d.bands.serving_benchmarks);
  }
  return out;
}

}  // namespace v41sim
