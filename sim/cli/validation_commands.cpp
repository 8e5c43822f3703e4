// v41sim validate and calibrate: how wrong the kernel model is, and fitting it.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "sim/cli/flags.h"
#include "sim/common/catalog.h"
#include "sim/cost/cost_params.h"
#include "sim/hw/gpu_profile_loader.h"
#include "sim/report/model_views.h"
#include "sim/report/validation_view.h"
#include "sim/validation/calibration_fit.h"
#include "sim/validation/measurement_file.h"
#include "sim/validation/published_reference.h"

namespace v41sim::cli {

void run_validate(const Catalog& catalog, const Flags& f, std::ostream& out) {
  std::vector<ValidationRow> rows;
  for (const PublishedReference& reference : load_published_references(catalog)) {
    rows.push_back(validate_reference(reference, catalog));
  }
  if (f.json) {
    out << validation_json(rows).dump(2) << "\n";
  } else {
    out << validation_table(rows).to_text();
  }
}

void run_calibrate(const Catalog& catalog, const Flags& f, std::ostream& out) {
  const MeasurementSet measurements = load_measurements(f.measurements);
  const std::string stem = f.hw_given ? f.hw : std::filesystem::path(f.measurements).filename().string();
  const GpuProfile gpu = load_gpu_profile_file(catalog.resolve_gpu(stem));
  const std::string priors_file =
      (std::filesystem::path(catalog.data_dir()) / "validation" / "calibration" / "defaults.yaml").string();
  const CostParams priors = load_cost_params_file(priors_file);
  const CalibrationResult result = calibrate(measurements, gpu, priors);
  const std::string file =
      f.out_given ? f.out_dir
                  : (std::filesystem::path(catalog.data_dir()) / "validation" / "calibration" /
                     (std::filesystem::path(catalog.resolve_gpu(stem)).stem().string() + ".yaml"))
                        .string();
  std::ofstream(file) << calibration_yaml(result, measurements, priors);
  Table t(fmt::format("Calibration of {} from {} measurements", gpu.name, measurements.rows.size()),
          {"class", "train / held-out shapes", "compute eff.", "memory eff.", "fixed overhead (us)",
           "held-out MAPE", "worst", "bias"});
  nlohmann::json classes = nlohmann::json::array();
  for (const ClassFit& c : result.classes) {
    t.add_row({std::string(class_key(c.kernel_class)), fmt::format("{} / {}", c.train_rows, c.held_out_rows),
               format_fixed(c.compute_efficiency, 3), format_fixed(c.memory_efficiency, 3),
               format_fixed(c.fixed_overhead_us, 2), fmt::format("{:.2f}%", c.held_out_mape_pct),
               fmt::format("{:.2f}%", c.held_out_worst_pct), fmt::format("{:+.2f}%", c.held_out_bias_pct)});
    classes.push_back({{"class", std::string(class_key(c.kernel_class))},
                       {"compute_efficiency", c.compute_efficiency},
                       {"memory_efficiency", c.memory_efficiency},
                       {"fixed_overhead_us", c.fixed_overhead_us},
                       {"held_out_mape_pct", c.held_out_mape_pct},
                       {"held_out_worst_pct", c.held_out_worst_pct},
                       {"held_out_bias_pct", c.held_out_bias_pct}});
  }
  t.add_note("written to " + file);
  if (f.json) {
    out << nlohmann::json{{"gpu", gpu.name}, {"file", file}, {"classes", classes}}.dump(2) << "\n";
  } else {
    out << t.to_text();
  }
}

}  // namespace v41sim::cli
