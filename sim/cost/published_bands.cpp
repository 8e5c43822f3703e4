#include "sim/cost/published_bands.h"

#include <fmt/format.h>

#include <filesystem>

#include "sim/common/yaml_reader.h"

namespace v41sim {
namespace {

std::optional<KernelClass> class_named(const std::string& key) {
  for (int i = 0; i < kKernelClassCount; ++i) {
    const auto kernel_class = static_cast<KernelClass>(i);
    if (class_key(kernel_class) == key) return kernel_class;
  }
  return std::nullopt;
}

PublishedClassBand read_class_band(const YamlNode& node, int min_references) {
  node.expect_only({"band_90_pct", "references", "set_priors"});
  PublishedClassBand band;
  band.references = static_cast<int>(node.required("references").as_positive_int());
  band.set_priors = static_cast<int>(node.required("set_priors").as_non_negative_int());
  if (band.set_priors > band.references) node.required("set_priors").fail("at most references");
  band.band_90_pct = node.required("band_90_pct").as_non_negative_double();
  if (band.references < min_references) {
    node.required("references").fail(fmt::format("at least min_references ({}) for a band", min_references));
  }
  return band;
}

// The model's throughput against published serving figures: how many, and the least and most error.
ThroughputErrors read_throughput_errors(const YamlNode& node) {
  node.expect_only({"references", "least_error_pct", "most_error_pct"});
  ThroughputErrors e;
  e.references = static_cast<int>(node.required("references").as_positive_int());
  e.least_pct = node.required("least_error_pct").as_double();
  e.most_pct = node.required("most_error_pct").as_double();
  if (e.most_pct < e.least_pct) node.required("most_error_pct").fail("at least least_error_pct");
  return e;
}

}  // namespace

std::string published_bands_path(const std::string& data_dir) {
  return (std::filesystem::path(data_dir) / "validation" / "calibration" / "published_bands.yaml").string();
}

PublishedBands load_published_bands_file(const std::string& path) {
  const YamlNode root = YamlNode::load_file(path);
  root.expect_only({"source", "measured_on", "architecture", "min_references", "inputs", "classes",
                    "whole_steps", "serving_benchmarks"});
  PublishedBands bands;
  bands.file = path;
  root.required("source").as_string();  // provenance for readers: present and well-formed, not used
  root.required("inputs").elements();
  bands.measured_on = root.required("measured_on").as_string();
  bands.architecture = root.required("architecture").as_string();
  bands.min_references = static_cast<int>(root.required("min_references").as_positive_int());
  for (const auto& [key, node] : root.required("classes").entries()) {
    const auto kernel_class = class_named(key);
    if (!kernel_class) node.fail("unknown kernel class");
    bands.classes[static_cast<std::size_t>(*kernel_class)] = read_class_band(node, bands.min_references);
  }
  if (const auto steps = root.optional("whole_steps")) bands.whole_steps = read_throughput_errors(*steps);
  if (const auto runs = root.optional("serving_benchmarks"))
    bands.serving_benchmarks = read_throughput_errors(*runs);
  return bands;
}

void attach_published_bands(CostParams& params, const PublishedBands& bands, const GpuProfile& gpu,
                            const std::string& gpu_stem) {
  double widening_pct = 0;
  std::string widening;
  if (gpu_stem != bands.measured_on) {
    const bool same = gpu.architecture == bands.architecture;
    const SourcedValue& extra =
        same ? params.transfer.same_architecture_extra_pct : params.transfer.cross_architecture_extra_pct;
    widening_pct = extra.value();
    widening = fmt::format(", widened by {:g} points for {} ({} architecture; assumed)", widening_pct,
                           gpu_stem, same ? "same" : "another");
  }
  for (int i = 0; i < kKernelClassCount; ++i) {
    const auto& published = bands.classes[static_cast<std::size_t>(i)];
    ClassCost& c = params.classes[static_cast<std::size_t>(i)];
    if (!published || c.error_band_pct) continue;
    c.error_band_pct = SourcedValue::derived(
        published->band_90_pct + widening_pct,
        fmt::format(
            "the priors' 90th-percentile error on {} published {} figures ({} of them set a prior){} ({})",
            published->references, bands.architecture, published->set_priors, widening, bands.file));
    c.error_band_from_published = true;
  }
  if (params.status == "uncalibrated") {
    params.whole_steps = bands.whole_steps;
    params.serving_benchmarks = bands.serving_benchmarks;
  }
}

}  // namespace v41sim
