#include "sim/validation/held_out_validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <utility>

#include "sim/cost/cost_params.h"
#include "sim/cost/kernel_cost.h"
#include "sim/hw/gpu_profile_loader.h"
#include "sim/validation/calibration_fit.h"
#include "sim/validation/measurement_file.h"

namespace v41sim {
namespace {

namespace fs = std::filesystem;

ValidationRow held_out_row(const Measurement& m, const std::string& gpu_stem, const KernelCostModel& model,
                           const std::string& label) {
  ValidationRow row;
  PublishedReference& r = row.reference;
  r.name = fmt::format("held-out {} {}x{}x{}{}", m.kernel.name, m.kernel.shape.m, m.kernel.shape.n,
                       m.kernel.shape.k, m.context > 0 ? fmt::format(", context {}", m.context) : "");
  r.source = fmt::format("our measurement, {}:{}", fs::path(m.file).filename().string(), m.line);
  r.file = m.file;
  r.line = m.line;
  r.gpu = gpu_stem;
  r.probe_kind = "held_out_measurement";
  r.metric = "us";
  r.value = m.median_us;
  r.tolerance_pct = kHeldOutTolerancePct;
  row.predicted = predicted_device_us(model, m);
  row.error_pct = 100.0 * (row.predicted - m.median_us) / m.median_us;
  row.within_tolerance = std::fabs(row.error_pct) <= r.tolerance_pct;
  row.kernel_model = label;
  return row;
}

}  // namespace

std::vector<ValidationRow> validate_held_out_measurements(const Catalog& catalog) {
  const fs::path root(catalog.data_dir());
  std::vector<ValidationRow> rows;
  for (const std::string& dir : measured_gpu_dirs(catalog.data_dir())) {
    const std::string stem = fs::path(dir).filename().string();
    const fs::path calibration = root / "validation" / "calibration" / (stem + ".yaml");
    if (!fs::exists(calibration)) continue;  // not fitted yet: nothing was held out
    const MeasurementSet set = load_measurements(dir);
    const GpuProfile gpu = load_gpu_profile_file(catalog.resolve_gpu(stem));
    require_measured_on(set, stem, gpu);
    const CostParams params = load_cost_params_file(calibration.string());
    const KernelCostModel model(gpu, params, /*cuda_graph=*/false);
    for (int i = 0; i < kKernelClassCount; ++i) {
      std::vector<const Measurement*> of_class;
      for (const Measurement& m : set.rows) {
        if (m.kernel.kernel_class == static_cast<KernelClass>(i) && !is_baseline_row(m))
          of_class.push_back(&m);
      }
      // Fitted classes: the shapes the fit held out; link-timed classes: every shape.
      if (!timed_on_links(static_cast<KernelClass>(i))) of_class = split_rows(std::move(of_class)).held_out;
      for (const Measurement* m : of_class) rows.push_back(held_out_row(*m, stem, model, params.label()));
    }
  }
  return rows;
}

}  // namespace v41sim
