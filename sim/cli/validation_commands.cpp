// v41sim validate and calibrate: how wrong the kernel model is, and fitting it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "sim/cli/flags.h"
#include "sim/common/catalog.h"
#include "sim/common/output_file.h"
#include "sim/cost/cost_params.h"
#include "sim/cost/draft_choice.h"
#include "sim/cost/error_band.h"
#include "sim/cost/kernel_cost.h"
#include "sim/cost/step_cost.h"
#include "sim/graph/step_graph.h"
#include "sim/hw/gpu_profile_loader.h"
#include "sim/report/error_band_view.h"
#include "sim/report/model_views.h"
#include "sim/report/published_bands_view.h"
#include "sim/report/validation_view.h"
#include "sim/validation/calibration_fit.h"
#include "sim/validation/held_out_validation.h"
#include "sim/validation/kernel_targets.h"
#include "sim/validation/measurement_file.h"
#include "sim/validation/published_band_derivation.h"
#include "sim/validation/published_reference.h"

namespace v41sim::cli {

namespace {

// Writes the published bands file when asked; else says whether the committed
// one still matches what the priors and the published figures give.
std::string sync_published_bands(const Catalog& catalog, const PublishedBandDerivation& derivation,
                                 bool write) {
  const std::string file = published_bands_path(catalog.data_dir());
  const std::string text = published_bands_yaml(derivation);
  if (write) {
    write_output_file(file, text, "--write-published-bands");
    return "written to " + file;
  }
  std::stringstream committed;
  committed << std::ifstream(file).rdbuf();
  const std::string shown = path_in_data_dir(file, catalog.data_dir());
  if (committed.str() == text) return shown + " matches";
  return shown + (std::filesystem::exists(file) ? " is out of date" : " is missing") +
         ": run v41sim validate --write-published-bands";
}

// The rows whose probe and GPU the flags name (each list empty: all). A
// value no reference has is refused, with those there are.
std::vector<ValidationRow> rows_asked(std::vector<ValidationRow> rows, const Flags& f) {
  const auto require_known = [&rows](const std::vector<std::string>& asked, const char* flag, auto key) {
    std::set<std::string> known;
    for (const ValidationRow& r : rows) known.insert(key(r));
    for (const std::string& value : asked) {
      if (!known.contains(value))
        throw InputError({"", 0, flag},
                         fmt::format("no reference has {} (those there: {})", value, fmt::join(known, ", ")));
    }
  };
  const auto probe = [](const ValidationRow& r) { return r.reference.probe_kind; };
  const auto gpu = [](const ValidationRow& r) { return r.reference.gpu; };
  require_known(f.validate_probes, "--probe", probe);
  require_known(f.validate_gpus, "--gpu", gpu);
  const auto listed = [](const std::vector<std::string>& asked, const std::string& value) {
    return asked.empty() || std::find(asked.begin(), asked.end(), value) != asked.end();
  };
  std::erase_if(rows, [&](const ValidationRow& r) {
    return !listed(f.validate_probes, probe(r)) || !listed(f.validate_gpus, gpu(r));
  });
  if (rows.empty()) {
    throw InputError({"", 0, "--probe/--gpu"},
                     fmt::format("no reference of probe {} is on GPU {}",
                                 fmt::join(f.validate_probes, " or "), fmt::join(f.validate_gpus, " or ")));
  }
  return rows;
}

}  // namespace

void run_validate(const Catalog& catalog, const Flags& f, std::ostream& out) {
  std::vector<ValidationRow> all;
  for (const PublishedReference& reference : load_published_references(catalog)) {
    all.push_back(validate_reference(reference, catalog));
  }
  for (ValidationRow& row : validate_held_out_measurements(catalog)) all.push_back(std::move(row));
  const std::vector<ValidationRow> rows = rows_asked(std::move(all), f);
  const PublishedBandDerivation bands = derive_published_bands(catalog);
  const std::string bands_file = sync_published_bands(catalog, bands, f.write_published_bands);
  if (f.json) {
    nlohmann::json json = validation_json(rows);
    json["published_bands"] = published_bands_json(bands);
    json["published_bands"]["file"] = bands_file;
    out << json.dump(2) << "\n";
  } else {
    Table bands_table = published_bands_table(bands);
    bands_table.add_note(bands_file);
    out << validation_table(rows).to_text() << "\n"
        << validation_summary_table(rows).to_text() << "\n"
        << bands_table.to_text();
  }
}

namespace {

// What the fitted class bands mean for whole steps of the model: a decode step
// and a prefill, timed with the new calibration and its propagated band.
struct StepBandRow {
  std::string what;
  double time_us = 0;
  ErrorBand band;
};

std::vector<StepBandRow> step_bands(const ModelAnalysis& model, const GpuProfile& gpu,
                                    const CostParams& params) {
  std::vector<StepBandRow> rows;
  for (const Phase phase : {Phase::kDecode, Phase::kPrefill}) {
    StepShape shape;
    shape.phase = phase;
    shape.batch = phase == Phase::kDecode ? 32 : 1;
    shape.context = phase == Phase::kDecode ? 131072 : 8192;
    shape.ep = 8;
    shape.ep_per_node = gpu.nvlink_domain();
    const KernelCostModel cost(gpu, params, phase == Phase::kDecode);
    const SpeculativeStep served = as_served(model, shape, cost);
    const StepGraph graph = build_step_graph(model, served.shape);
    const StepTiming timing = time_step(graph, cost);
    const std::string what =
        phase == Phase::kDecode
            ? fmt::format("decode step, batch {}, context {}, EP {}, {} drafts verified a sequence",
                          shape.batch, shape.context, shape.ep, served.choice.drafts)
            : fmt::format("prefill of one {}-token prompt, EP {}", shape.context, shape.ep);
    rows.push_back({what, timing.total_us, step_error_band(timing, params)});
  }
  return rows;
}

}  // namespace

void run_targets(const Catalog& catalog, const Flags& f, std::ostream& out) {
  const MeasurementSet measurements = load_measurements(f.measurements);
  const ModelAnalysis model = load_model_named(catalog, f.model);
  const std::vector<TargetResult> results =
      evaluate_kernel_targets(measurements, model.spec.attention.num_heads);
  const std::string gpu = measurements.metadata.count("gpu") ? measurements.metadata.at("gpu") : "?";
  if (f.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const TargetResult& r : results) {
      rows.push_back(
          {{"target", r.target},
           {"measure", r.measure},
           {"threshold", r.threshold},
           {"at_least", r.at_least},
           {"rows", r.rows},
           {"worst", r.worst},
           {"best", r.best},
           {"worst_row", r.worst_row},
           {"worst_row_roofline", r.worst_roofline ? nlohmann::json(*r.worst_roofline) : nlohmann::json()},
           {"met", r.met}});
    }
    out << nlohmann::json{{"gpu", gpu}, {"files", measurements.files}, {"targets", rows}}.dump(2) << "\n";
    return;
  }
  Table t("Kernel targets on " + gpu + " (measured)",
          {"target", "measure", "rows", "worst", "best", "needed", "met", "worst row", "its roofline"});
  for (const TargetResult& r : results) {
    t.add_row({r.target, r.measure, std::to_string(r.rows), r.rows > 0 ? format_fixed(r.worst, 3) : "-",
               r.rows > 0 ? format_fixed(r.best, 3) : "-",
               fmt::format("{} {:.2f}", r.at_least ? ">=" : "<=", r.threshold),
               r.rows == 0 ? "not measured" : (r.met ? "yes" : "no"), r.worst_row,
               r.worst_roofline ? format_fixed(*r.worst_roofline, 3) : "-"});
  }
  t.add_note("measured: " + fmt::format("{}", fmt::join(measurements.files, ", ")) +
             "; ceilings (copy, host-to-device copy, dense FP8 and BF16) from the same file's metadata");
  t.add_note(
      "its roofline: the most the worst row's FLOPs per byte allow, in the target's measure, with the other "
      "resource at its ceiling (sparse decode: the dense BF16 rate; expert GEMM: the copy bandwidth); a "
      "roofline below the threshold means no kernel could meet the target at that shape");
  out << t.to_text();
}

void run_calibrate(const Catalog& catalog, const Flags& f, std::ostream& out) {
  const MeasurementSet measurements = load_measurements(f.measurements);
  const std::string stem = f.hw_given ? f.hw : std::filesystem::path(f.measurements).filename().string();
  const GpuProfile gpu = load_gpu_profile_file(catalog.resolve_gpu(stem));
  require_measured_on(measurements, stem, gpu);
  const std::string priors_file =
      (std::filesystem::path(catalog.data_dir()) / "validation" / "calibration" / "defaults.yaml").string();
  const CostParams priors = load_cost_params_file(priors_file);
  const CalibrationResult result = calibrate(measurements, gpu, priors);
  const std::string file =
      f.out_given ? f.out_dir
                  : (std::filesystem::path(catalog.data_dir()) / "validation" / "calibration" /
                     (std::filesystem::path(catalog.resolve_gpu(stem)).stem().string() + ".yaml"))
                        .string();
  write_output_file(file, calibration_yaml(result, measurements, priors), "--out");
  Table t(fmt::format("Calibration of {} from {} measurements", gpu.name, measurements.rows.size()),
          {"class", "train / held-out shapes", "tile", "compute eff.", "memory eff.", "fixed overhead (us)",
           "epilogue hidden", "widening hidden", "held-out MAPE", "worst", "bias", "90% band"});
  nlohmann::json classes = nlohmann::json::array();
  for (const ClassFit& c : result.classes) {
    t.add_row({std::string(class_key(c.kernel_class)), fmt::format("{} / {}", c.train_rows, c.held_out_rows),
               fmt::format("{}x{}", c.tile_m, c.tile_n), format_fixed(c.compute_efficiency, 3),
               format_fixed(c.memory_efficiency, 3), format_fixed(c.fixed_overhead_us, 2),
               c.epilogue_overlap ? format_fixed(*c.epilogue_overlap, 2) : std::string("-"),
               c.widening_overlap ? format_fixed(*c.widening_overlap, 2) : std::string("-"),
               fmt::format("{:.2f}%", c.held_out_mape_pct), fmt::format("{:.2f}%", c.held_out_worst_pct),
               fmt::format("{:+.2f}%", c.held_out_bias_pct), fmt::format("±{:.2f}%", c.band_90_pct)});
    classes.push_back(
        {{"class", std::string(class_key(c.kernel_class))},
         {"tile_m", c.tile_m},
         {"tile_n", c.tile_n},
         {"compute_efficiency", c.compute_efficiency},
         {"memory_efficiency", c.memory_efficiency},
         {"fixed_overhead_us", c.fixed_overhead_us},
         {"epilogue_overlap", c.epilogue_overlap ? nlohmann::json(*c.epilogue_overlap) : nlohmann::json()},
         {"widening_overlap", c.widening_overlap ? nlohmann::json(*c.widening_overlap) : nlohmann::json()},
         {"held_out_mape_pct", c.held_out_mape_pct},
         {"held_out_worst_pct", c.held_out_worst_pct},
         {"held_out_bias_pct", c.held_out_bias_pct},
         {"band_90_pct", c.band_90_pct}});
  }
  t.add_note("written to " + file);
  if (result.baseline_rows > 0) {
    t.add_note(fmt::format("{} rows of baseline kernels (names ending in _baseline) recorded, not fitted",
                           result.baseline_rows));
  }
  const ModelAnalysis model = load_model_named(catalog, f.model);
  Table steps(fmt::format("What the bands mean for {} steps on {}", model.spec.name, gpu.name),
              {"step", "predicted", "band (90%)"});
  nlohmann::json step_json = nlohmann::json::array();
  for (const StepBandRow& r : step_bands(model, gpu, result.params)) {
    steps.add_row({r.what, fmt::format("{:.1f} us", r.time_us), r.band.describe()});
    step_json.push_back(
        {{"step", r.what}, {"predicted_us", r.time_us}, {"error_band", error_band_json(r.band)}});
  }
  steps.add_note(std::string("propagated from the class bands (no whole step was measured); ") +
                 kErrorBandMethod);
  if (f.json) {
    out << nlohmann::json{{"gpu", gpu.name}, {"file", file}, {"classes", classes}, {"steps", step_json}}.dump(
               2)
        << "\n";
  } else {
    out << t.to_text() << "\n" << steps.to_text();
  }
}

}  // namespace v41sim::cli
