#include "sim/cli/commands.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "sim/capacity/memory_fit.h"
#include "sim/common/catalog.h"
#include "sim/cost/cost_params.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/cost/kernel_cost.h"
#include "sim/cost/step_cost.h"
#include "sim/costing/serving_cost.h"
#include "sim/graph/step_graph.h"
#include "sim/hw/gpu_profile_loader.h"
#include "sim/model/model_loader.h"
#include "sim/report/claims.h"
#include "sim/report/fit_view.h"
#include "sim/report/layer_comparison.h"
#include "sim/report/model_views.h"
#include "sim/report/run_trace.h"
#include "sim/report/run_view.h"
#include "sim/report/step_view.h"
#include "sim/report/study_report.h"
#include "sim/report/validation_view.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/serving_simulation.h"
#include "sim/serving/workload_spec.h"
#include "sim/validation/calibration_fit.h"
#include "sim/validation/measurement_file.h"
#include "sim/validation/published_reference.h"

namespace v41sim {
namespace {

// Flags shared by the commands; each command reads the ones it registers.
struct Flags {
  std::string model = "deepseek_v4_1_flash";
  std::string hw = "h200";
  int64_t context = 0;  // 0: the model's max_context
  int64_t gpus = 8;
  int64_t ep = 8;
  std::string weights_dtype = "released";
  std::string dense_placement = "replicated";
  double reserve_fraction = -1;  // < 0: the default assumption
  std::string out_dir = "reports/latest";
  bool json = false;
  // step / compare-layers
  std::string phase = "decode";
  int64_t batch = 1;
  std::string mhc = "fused";
  bool no_cuda_graph = false;
  bool no_draft = false;
  bool overlap = false;
  std::string trace;
  std::string models = "deepseek_v4_1_flash,deepseek_v4_flash,deepseek_v3_2";
  // run
  std::string deployment = "h200_pd_64";
  std::string workload = "agent_coding";
  double duration_s = 600;
  double trace_seconds = 60;
  // calibrate
  std::string measurements;
  bool hw_given = false;
  bool out_given = false;
  uint64_t seed = 1;
};

ModelAnalysis load_model_named(const Catalog& catalog, const std::string& name) {
  return analyze_model(load_model_file(catalog.resolve_model(name)));
}

int64_t context_or_max(const Flags& f, const ModelAnalysis& m) {
  if (f.context < 0)
    throw InputError({"", 0, "--context"}, fmt::format("expected a positive token count, got {}", f.context));
  return f.context > 0 ? f.context : m.spec.max_context;
}

SourcedValue reserve_from(const Flags& f) {
  if (f.reserve_fraction < 0) return default_reserve_fraction();
  if (f.reserve_fraction >= 1) {
    throw InputError({"", 0, "--reserve-fraction"},
                     fmt::format("expected a fraction in [0, 1), got {}", f.reserve_fraction));
  }
  return SourcedValue::assumed(f.reserve_fraction, "given with --reserve-fraction");
}

WeightFormats weights_from(const Flags& f, const ModelAnalysis& m) {
  WeightFormats w = m.spec.weights;
  if (f.weights_dtype == "released") return w;
  if (f.weights_dtype == "fp8") {
    w.routed_experts = m.spec.weights.dense;  // the checkpoint's own block-scaled FP8
    return w;
  }
  if (f.weights_dtype == "mxfp4") {
    // OCP Microscaling MXFP4: e2m1 values with an e8m0 scale per 32.
    w.routed_experts = {ElementFormat::kFp4E2M1, ElementFormat::kE8M0, 32};
    return w;
  }
  throw InputError({"", 0, "--weights-dtype"},
                   "unknown value '" + f.weights_dtype + "' (expected one of: released, fp8, mxfp4)");
}

DensePlacement placement_from(const Flags& f) {
  if (f.dense_placement == "replicated") return DensePlacement::kReplicated;
  if (f.dense_placement == "sharded") return DensePlacement::kSharded;
  throw InputError({"", 0, "--dense-placement"},
                   "unknown value '" + f.dense_placement + "' (expected replicated or sharded)");
}

void print_tables(std::ostream& out, const std::vector<Table>& tables) {
  for (const Table& t : tables) out << t.to_text() << "\n";
}

void run_kv(const Catalog& catalog, const Flags& f, std::ostream& out) {
  const ModelAnalysis m = load_model_named(catalog, f.model);
  const int64_t context = context_or_max(f, m);
  if (f.json) {
    out << kv_json(m, context).dump(2) << "\n";
  } else {
    print_tables(out, kv_tables(m, context));
  }
}

void run_params(const Catalog& catalog, const Flags& f, std::ostream& out) {
  const ModelAnalysis m = load_model_named(catalog, f.model);
  if (f.json) {
    out << params_json(m).dump(2) << "\n";
  } else {
    print_tables(out, params_tables(m));
  }
}

void run_fit(const Catalog& catalog, const Flags& f, std::ostream& out) {
  const ModelAnalysis m = load_model_named(catalog, f.model);
  const GpuProfile gpu = load_gpu_profile_file(catalog.resolve_gpu(f.hw));
  const FitRequest request{f.gpus,         f.ep, context_or_max(f, m), weights_from(f, m), placement_from(f),
                           reserve_from(f)};
  const FitResult fit = fit_memory(m, gpu, request);
  if (f.json) {
    out << fit_json(m, gpu, request, fit).dump(2) << "\n";
  } else {
    out << fit_table(m, gpu, request, fit).to_text();
  }
}

void run_claims(const Catalog& catalog, const Flags& f, std::ostream& out) {
  const ModelAnalysis v41 = load_model_named(catalog, "deepseek_v4_1_flash");
  const ModelAnalysis v4 = load_model_named(catalog, "deepseek_v4_flash");
  const GpuProfile h100 = load_gpu_profile_file(catalog.resolve_gpu("h100_sxm"));
  const GpuProfile h200 = load_gpu_profile_file(catalog.resolve_gpu("h200"));
  const auto claims = check_claims({v41, v4, h100, h200, reserve_from(f)});
  if (f.json) {
    out << claims_json(claims).dump(2) << "\n";
    return;
  }
  for (const Claim& c : claims) {
    out << "- " << c.statement << "\n  verdict: " << verdict_text(c) << "\n";
    for (const std::string& finding : c.findings) out << "    * " << finding << "\n";
  }
}

StepShape step_shape_from(const Flags& f) {
  StepShape s;
  if (f.phase == "prefill") {
    s.phase = Phase::kPrefill;
  } else if (f.phase != "decode") {
    throw InputError({"", 0, "--phase"}, "unknown value '" + f.phase + "' (expected prefill or decode)");
  }
  if (f.mhc != "fused" && f.mhc != "three-kernel") {
    throw InputError({"", 0, "--mhc"}, "unknown value '" + f.mhc + "' (expected fused or three-kernel)");
  }
  s.batch = f.batch;
  s.context = f.context;
  s.ep = f.ep;
  s.mhc_fused = f.mhc == "fused";
  s.include_draft = !f.no_draft;
  s.overlap_communication = f.overlap;
  return s;
}

// CUDA graphs are how decode steps are launched in practice; prefill launches kernels.
bool uses_cuda_graph(const Flags& f, const StepShape& s) {
  return !f.no_cuda_graph && s.phase == Phase::kDecode;
}

void run_step(const Catalog& catalog, const Flags& f, std::ostream& out) {
  const ModelAnalysis m = load_model_named(catalog, f.model);
  const StepShape shape = step_shape_from(f);
  const GpuCostModel g(catalog.data_dir(), catalog.resolve_gpu(f.hw), uses_cuda_graph(f, shape));
  const StepGraph graph = build_step_graph(m, shape);
  const StepTiming timing = time_step(graph, g.cost());
  const StepReport report{m, g.gpu(), g.cost(), graph, timing};
  if (!f.trace.empty()) {
    std::ofstream trace(f.trace);
    if (!trace) throw InputError({f.trace, 0, "--trace"}, "cannot write the trace file");
    trace << step_trace(report).dump() << "\n";
  }
  if (f.json) {
    out << step_json(report).dump(2) << "\n";
  } else {
    print_tables(out, step_tables(report));
    if (!f.trace.empty()) out << "trace written to " << f.trace << " (open in ui.perfetto.dev)\n";
  }
}

void run_compare_layers(const Catalog& catalog, const Flags& f, std::ostream& out) {
  const StepShape shape = step_shape_from(f);
  const GpuCostModel g(catalog.data_dir(), catalog.resolve_gpu(f.hw), uses_cuda_graph(f, shape));
  std::vector<ModelAnalysis> models;
  std::stringstream names(f.models);
  for (std::string name; std::getline(names, name, ',');) models.push_back(load_model_named(catalog, name));
  const LayerComparison comparison = compare_layers(models, g.cost(), shape);
  if (f.json) {
    out << comparison_json(comparison, g.gpu(), g.cost()).dump(2) << "\n";
  } else {
    print_tables(out, comparison_tables(comparison, g.gpu(), g.cost()));
  }
}

void run_serving(const Catalog& catalog, const Flags& f, std::ostream& out) {
  if (f.duration_s <= 0) {
    throw InputError({"", 0, "--duration"},
                     fmt::format("expected a positive number of seconds, got {}", f.duration_s));
  }
  const ModelAnalysis m = load_model_named(catalog, f.model);
  const DeploymentSpec deployment = load_deployment_file(catalog.resolve_deployment(f.deployment));
  const WorkloadSpec workload = load_workload_file(catalog.resolve_workload(f.workload));
  const GpuCostModel prefill(catalog.data_dir(), catalog.resolve_gpu(deployment.prefill.gpu), false);
  const GpuCostModel decode(catalog.data_dir(), catalog.resolve_gpu(deployment.decode.gpu), true);
  ServingSimulation simulation(m, prefill.cost(), decode.cost(), deployment, workload, f.seed);
  if (!f.trace.empty()) simulation.enable_trace(f.trace_seconds);
  const ServingResult result = simulation.run(f.duration_s);
  if (!f.trace.empty()) {
    std::ofstream trace(f.trace);
    if (!trace) throw InputError({f.trace, 0, "--trace"}, "cannot write the trace file");
    trace << run_trace(result, deployment).dump() << "\n";
  }
  const std::string kernel_model = decode.cost().params().label();
  const ServingCost cost = serving_cost(result, deployment, prefill.gpu(), decode.gpu());
  const RunReport report{m.spec.name, deployment, workload, kernel_model, f.seed, result, cost};
  if (f.json) {
    out << run_json(report).dump(2) << "\n";
  } else {
    print_tables(out, run_tables(report));
  }
}

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

void run_report(const Catalog& catalog, const Flags& f, std::ostream& out) {
  StudyOptions options;
  options.out_dir = f.out_dir;
  options.reserve_fraction = reserve_from(f);
  const StudyOutput written = write_study_report(catalog, options);
  out << "report written to " << written.markdown_path << " (and " << written.json_path << ")\n";
}

}  // namespace

void register_commands(CLI::App& app, const GlobalOptions& global, std::function<void()>& run,
                       std::ostream& out) {
  auto flags = std::make_shared<Flags>();
  auto bind = [&global, &run, &out, flags](CLI::App* cmd,
                                           void (*fn)(const Catalog&, const Flags&, std::ostream&)) {
    cmd->add_flag("--json", flags->json, "print one JSON object instead of tables");
    cmd->callback([&global, &run, &out, flags, fn] {
      run = [&global, &out, flags, fn] { fn(Catalog(global.data_dir), *flags, out); };
    });
  };
  auto add_model = [flags](CLI::App* cmd) {
    cmd->add_option("--model", flags->model, "model name (file stem or name:) or path")
        ->capture_default_str();
  };
  auto add_context = [flags](CLI::App* cmd) {
    cmd->add_option("--context", flags->context, "tokens per session (default: the model's max_context)");
  };
  auto add_reserve = [flags](CLI::App* cmd) {
    cmd->add_option("--reserve-fraction", flags->reserve_fraction,
                    "fraction of HBM held for activations and workspace (default 0.10, an assumption)");
  };

  CLI::App* kv = app.add_subcommand("kv", "KV cache bytes per layer and per token");
  add_model(kv);
  add_context(kv);
  bind(kv, run_kv);

  CLI::App* params = app.add_subcommand("params", "total and active parameters, weight bytes");
  add_model(params);
  bind(params, run_params);

  CLI::App* fit = app.add_subcommand("fit", "per-GPU memory: weights, reserve, KV, sessions");
  add_model(fit);
  add_context(fit);
  add_reserve(fit);
  fit->add_option("--hw", flags->hw, "GPU profile (file stem or name:) or path")->capture_default_str();
  fit->add_option("--gpus", flags->gpus, "number of GPUs")->capture_default_str();
  fit->add_option("--ep", flags->ep, "expert-parallel size")->capture_default_str();
  fit->add_option("--weights-dtype", flags->weights_dtype, "routed-expert weights: released, fp8 or mxfp4")
      ->capture_default_str();
  fit->add_option("--dense-placement", flags->dense_placement,
                  "non-expert weights: replicated (DP attention) or sharded over all GPUs")
      ->capture_default_str();
  bind(fit, run_fit);

  auto add_step_flags = [flags](CLI::App* cmd) {
    cmd->add_option("--hw", flags->hw, "GPU profile (file stem or name:) or path")->capture_default_str();
    cmd->add_option("--phase", flags->phase, "prefill or decode")->capture_default_str();
    cmd->add_option("--batch", flags->batch, "sequences in the step")->capture_default_str();
    cmd->add_option("--context", flags->context, "prefill: prompt tokens each; decode: history tokens each")
        ->required();
    cmd->add_option("--ep", flags->ep, "expert-parallel size")->capture_default_str();
    cmd->add_option("--mhc", flags->mhc, "mHC form: fused (single pass) or three-kernel")
        ->capture_default_str();
    cmd->add_flag("--no-cuda-graph", flags->no_cuda_graph,
                  "decode: launch kernels instead of replaying a CUDA graph");
    cmd->add_flag("--no-draft", flags->no_draft, "decode: leave out the speculative draft stages");
    cmd->add_flag("--overlap", flags->overlap, "overlap EP all-to-all with compute (two micro-batches)");
  };

  CLI::App* step = app.add_subcommand("step", "one forward step: kernels, times, bounds, trace");
  add_model(step);
  add_step_flags(step);
  step->add_option("--trace", flags->trace, "write a Chrome/Perfetto trace of the step to this file");
  bind(step, run_step);

  CLI::App* compare =
      app.add_subcommand("compare-layers", "the same step across model generations, by layer mode");
  add_step_flags(compare);
  compare->add_option("--models", flags->models, "comma-separated models")->capture_default_str();
  bind(compare, run_compare_layers);

  CLI::App* serve = app.add_subcommand("run", "simulate a deployment serving a workload over time");
  add_model(serve);
  serve->add_option("--deployment", flags->deployment, "deployment (workloads/deployments/) name or path")
      ->capture_default_str();
  serve->add_option("--workload", flags->workload, "workload (workloads/) name or path")
      ->capture_default_str();
  serve->add_option("--duration", flags->duration_s, "simulated seconds")->capture_default_str();
  serve->add_option("--seed", flags->seed, "random seed")->capture_default_str();
  serve->add_option("--trace", flags->trace, "write a Chrome/Perfetto trace of the run to this file");
  serve->add_option("--trace-seconds", flags->trace_seconds, "trace the first this many simulated seconds")
      ->capture_default_str();
  bind(serve, run_serving);

  CLI::App* calib = app.add_subcommand("calibrate", "fit the kernel model to measured kernel times");
  calib
      ->add_option("--measurements", flags->measurements,
                   "folder of measurement CSVs (validation/measurements/<gpu>)")
      ->required();
  calib->add_option("--hw", flags->hw, "GPU profile (default: the measurement folder's name)")
      ->each([flags](const std::string&) { flags->hw_given = true; });
  calib->add_option("--out", flags->out_dir, "calibration file (default validation/calibration/<gpu>.yaml)")
      ->each([flags](const std::string&) { flags->out_given = true; });
  bind(calib, run_calibrate);

  CLI::App* validate = app.add_subcommand("validate", "the kernel model against published kernel figures");
  bind(validate, run_validate);

  CLI::App* claims = app.add_subcommand("claims", "check the seed article's quantitative claims");
  add_reserve(claims);
  bind(claims, run_claims);

  CLI::App* report = app.add_subcommand("report", "write the main study report (Markdown + JSON)");
  add_reserve(report);
  report->add_option("--out", flags->out_dir, "output directory")->capture_default_str();
  bind(report, run_report);

  app.require_subcommand(1);
}

}  // namespace v41sim
