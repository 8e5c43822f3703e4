#include "sim/report/published_bands_view.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace v41sim {
namespace {

int within_count(const PublishedBandDerivation& d) {
  int within = 0;
  for (const TransferCheck& c : d.transfer_checks) within += c.within ? 1 : 0;
  return within;
}

// The model's throughput against published serving figures; null where none are published.
nlohmann::json throughput_errors_json(const std::optional<ThroughputErrors>& e) {
  if (!e) return nlohmann::json();
  return {{"references", e->references}, {"least_error_pct", e->least_pct}, {"most_error_pct", e->most_pct}};
}

}  // namespace

Table published_bands_table(const PublishedBandDerivation& d) {
  Table t(fmt::format("The priors' error by kernel class, on the published {} figures (the band a class "
                      "carries until our measurements calibrate it)",
                      d.bands.architecture),
          {"class", "figures", "set a prior", "MAPE", "worst", "bias", "90% band"});
  for (const PublishedClassErrors& c : d.classes) {
    t.add_row({std::string(class_key(c.kernel_class)), std::to_string(c.stats.count),
               std::to_string(c.set_priors), fmt::format("{:.1f}%", c.stats.mape_pct),
               fmt::format("{:.1f}%", c.stats.worst_pct), fmt::format("{:+.1f}%", c.stats.bias_pct),
               c.banded ? fmt::format("±{:.1f}%", c.stats.band_90_pct)
                        : fmt::format("none (under {} figures)", d.bands.min_references)});
  }
  t.add_note(fmt::format(
      "the priors alone (validation/calibration/defaults.yaml, published on {}), whatever calibrations "
      "exist; "
      "most figures set a prior, so a band says how well the priors fit them, not how they predict",
      d.bands.measured_on));
  t.add_note(fmt::format(
      "carried to another GPU of the architecture with the same-architecture widening, to another "
      "architecture with the cross-architecture one (+{:g} points, assumed)",
      d.cross_architecture_extra_pct));
  if (!d.transfer_checks.empty()) {
    std::string misses;
    for (const TransferCheck& c : d.transfer_checks) {
      if (!c.within)
        misses += fmt::format("; outside: {} ({:+.1f}% vs ±{:.1f}%)", c.reference, c.error_pct, c.band_pct);
    }
    t.add_note(fmt::format("figures on other architectures inside the band carried to them: {} of {}{}",
                           within_count(d), d.transfer_checks.size(), misses));
  }
  for (const UnbandedElsewhere& u : d.unbanded_elsewhere) {
    t.add_note(fmt::format(
        "{} on {}, a class with no band on {} to carry there: {} figures, the priors' MAPE {:.1f}%, worst "
        "{:.1f}%, 90th percentile {:.1f}% (reported, not carried: a band comes from {} figures alone)",
        class_key(u.kernel_class), fmt::join(u.gpus, ", "), d.bands.architecture, u.stats.count,
        u.stats.mape_pct, u.stats.worst_pct, u.stats.band_90_pct, d.bands.architecture));
  }
  if (d.bands.whole_steps) {
    t.add_note(fmt::format(
        "whole forward steps that serving engines published (probe step, {} figures): the model's throughput "
        "{:+.1f}% to {:+.1f}% against theirs; no class band covers this, and every output using the priors "
        "says it",
        d.bands.whole_steps->references, d.bands.whole_steps->least_pct, d.bands.whole_steps->most_pct));
  }
  if (d.bands.serving_benchmarks) {
    t.add_note(fmt::format(
        "whole serving benchmarks that engines published (probe serving, {} throughput figures): the model's "
        "throughput {:+.1f}% to {:+.1f}% against theirs; every output using the priors says it too",
        d.bands.serving_benchmarks->references, d.bands.serving_benchmarks->least_pct,
        d.bands.serving_benchmarks->most_pct));
  }
  return t;
}

nlohmann::json published_bands_json(const PublishedBandDerivation& d) {
  nlohmann::json classes = nlohmann::json::array();
  for (const PublishedClassErrors& c : d.classes) {
    classes.push_back({{"class", std::string(class_key(c.kernel_class))},
                       {"figures", c.stats.count},
                       {"set_priors", c.set_priors},
                       {"mape_pct", c.stats.mape_pct},
                       {"worst_pct", c.stats.worst_pct},
                       {"bias_pct", c.stats.bias_pct},
                       {"band_90_pct", c.banded ? nlohmann::json(c.stats.band_90_pct) : nlohmann::json()}});
  }
  nlohmann::json checks = nlohmann::json::array();
  for (const TransferCheck& c : d.transfer_checks) {
    checks.push_back({{"reference", c.reference},
                      {"gpu", c.gpu},
                      {"class", std::string(class_key(c.kernel_class))},
                      {"error_pct", c.error_pct},
                      {"band_pct", c.band_pct},
                      {"within", c.within}});
  }
  nlohmann::json unbanded = nlohmann::json::array();
  for (const UnbandedElsewhere& u : d.unbanded_elsewhere) {
    unbanded.push_back({{"class", std::string(class_key(u.kernel_class))},
                        {"gpus", u.gpus},
                        {"figures", u.stats.count},
                        {"mape_pct", u.stats.mape_pct},
                        {"worst_pct", u.stats.worst_pct},
                        {"band_90_pct", u.stats.band_90_pct}});
  }
  return {{"measured_on", d.bands.measured_on},
          {"architecture", d.bands.architecture},
          {"min_references", d.bands.min_references},
          {"classes", classes},
          {"transfer_checks", checks},
          {"unbanded_elsewhere", unbanded},
          {"whole_steps", throughput_errors_json(d.bands.whole_steps)},
          {"serving_benchmarks", throughput_errors_json(d.bands.serving_benchmarks)}};
}

}  // namespace v41sim
