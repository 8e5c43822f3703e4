#include "sim/report/study_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <nlohmann/json.hpp>

#include "sim/capacity/memory_fit.h"
#include "sim/common/output_file.h"
#include "sim/common/parallel_for.h"
#include "sim/common/yaml_what_if.h"
#include "sim/cost/cost_params.h"
#include "sim/cost/draft_choice.h"
#include "sim/cost/error_band.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/cost/kernel_cost.h"
#include "sim/cost/step_cost.h"
#include "sim/cost/step_sensitivity.h"
#include "sim/costing/context_sweep.h"
#include "sim/costing/decode_frontier.h"
#include "sim/costing/deployment_plan.h"
#include "sim/costing/load_capacity.h"
#include "sim/costing/served_run.h"
#include "sim/costing/shared_step_times.h"
#include "sim/graph/residual_mixing.h"
#include "sim/graph/step_graph.h"
#include "sim/hw/gpu_profile_loader.h"
#include "sim/model/model_loader.h"
#include "sim/report/claims.h"
#include "sim/report/context_view.h"
#include "sim/report/engine_choices_view.h"
#include "sim/report/error_band_view.h"
#include "sim/report/fit_view.h"
#include "sim/report/frontier_view.h"
#include "sim/report/html_page.h"
#include "sim/report/load_capacity_view.h"
#include "sim/report/model_views.h"
#include "sim/report/plan_view.h"
#include "sim/report/published_bands_view.h"
#include "sim/report/run_view.h"
#include "sim/report/ssd_tier_view.h"
#include "sim/report/step_view.h"
#include "sim/report/study_summary.h"
#include "sim/report/svg_scatter.h"
#include "sim/report/validation_view.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/workload_spec.h"
#include "sim/validation/held_out_validation.h"
#include "sim/validation/published_band_derivation.h"
#include "sim/validation/published_reference.h"

namespace v41sim {
namespace fs = std::filesystem;
namespace {

// A latency's figure for the JSON: null where it has no sample (nothing
// finished, or streamed), not a 0 a reader would take for a latency.
nlohmann::json figure(const LatencySummary& s, double LatencySummary::*at) {
  return s.count > 0 ? nlohmann::json(s.*at) : nlohmann::json(nullptr);
}

// Where TTFT ends, for a table with a disaggregated deployment among its rows.
void note_first_token(Table& table, const std::vector<DeploymentSpec>& deployments) {
  if (std::any_of(deployments.begin(), deployments.end(),
                  [](const DeploymentSpec& d) { return first_token_assumption(d) != nullptr; }))
    table.add_note(kDecodeSideFirstTokenAssumption);
}

// The deployments whose engines run kernels other than the step model assumes,
// or take time outside their forward steps, each named.
void note_engines(Table& table, const std::vector<DeploymentSpec>& deployments) {
  for (const DeploymentSpec& d : deployments) {
    if (const std::string kernels = engine_kernels_note(d); !kernels.empty())
      table.add_note(d.name + ": " + kernels);
    if (d.step_overhead_us) table.add_note(d.name + ": " + step_overhead_note(d));
  }
}

// The report's folder, made before any section runs (they take about a
// minute): one that cannot be made is the --out flag's error.
void make_output_folder(const std::string& out_dir) {
  std::error_code error;
  fs::create_directories(out_dir, error);
  if (error || !fs::is_directory(out_dir)) {
    throw InputError({out_dir, 0, "--out"}, "cannot make the report's folder: " + error.message());
  }
}

// Writes one of the report's files; one that cannot be written is the --out flag's error.
void write_output(const std::string& out_dir, const std::string& name, const std::string& text) {
  write_output_file((fs::path(out_dir) / name).string(), text, "--out");
}

constexpr const char* kStudyTitle =
    "v41sim study: DeepSeek-V4.1-Flash memory, claims, step times, serving and cost";

Table kv_overview(const std::vector<ModelAnalysis>& models, const std::vector<int64_t>& contexts) {
  std::vector<std::string> headers{"model", "global B/token", "per-request state"};
  for (int64_t n : contexts) headers.push_back(fmt::format("global KV at {} tokens", n));
  Table t("KV cache per token, all bundled models", headers);
  for (const ModelAnalysis& m : models) {
    std::vector<std::string> row{m.spec.name, format_fixed(m.kv.global_bytes_per_token, 2),
                                 format_bytes(static_cast<double>(m.kv.per_request_state_bytes()))};
    for (int64_t n : contexts)
      row.push_back(format_bytes(m.kv.global_bytes_per_token * static_cast<double>(n)));
    t.add_row(row);
  }
  t.add_note("derived from each model file's cache formats and layer plan (per-layer tables below)");
  return t;
}

// What the step-times table's notes gather over its rows.
struct StepTimesNotes {
  std::vector<std::string> calibrations;  // each GPU's kernel model, once
  std::vector<std::string> folds;         // how each kernel model times the indexer's fold, once
  std::vector<std::string> past_memory;   // steps whose KV does not fit the GPU
  // Steps whose widest layer's residual streams outgrow the activation
  // reserve, by phase and context (alike on every GPU): the streams' bytes,
  // and the GPUs with their reserves.
  struct PastReserve {
    double residual_bytes = 0;
    std::vector<std::string> gpus;
  };
  std::map<std::pair<std::string, int64_t>, PastReserve> past_reserve;
};

// One row of the step-times table (and its JSON): `shape` on `gpu`, its
// time by layer mode (`modes`), prefill per 1K prompt tokens so contexts compare.
void add_step_row(const ModelAnalysis& focus, const GpuProfile& gpu, const KernelCostModel& cost,
                  const StepShape& shape, const std::vector<std::string>& modes, Table& table,
                  nlohmann::json& steps, StepTimesNotes& notes) {
  const Phase phase = shape.phase;
  const int64_t context = shape.context;
  // Decode verifies the drafts a serving run would choose (the same in both forms).
  const SpeculativeStep served = as_served(focus, shape, cost);
  const StepShape& timed = served.shape;
  const StepGraph graph = build_step_graph(focus, timed);
  const StepTiming t = time_step(graph, cost);
  const ErrorBand band = step_error_band(t, cost.params());
  // A step past the GPU's memory is timed all the same, and its note says so.
  const StepMemory memory = step_memory(focus, gpu, graph);
  if (!memory.fits()) {
    notes.past_memory.push_back(fmt::format("{} at {} tokens, {}: {} {}", gpu.name, context,
                                            phase_name(phase), kKvHeldLabel, kv_memory_phrase(memory)));
  }
  if (!memory.activations_fit()) {
    StepTimesNotes::PastReserve& past = notes.past_reserve[{phase_name(phase), context}];
    past.residual_bytes = memory.residual_stream_bytes();
    past.gpus.push_back(
        fmt::format("{} against {}", gpu.name, format_bytes(memory.fit.reserve_bytes_per_gpu)));
  }
  StepShape split = timed;  // the same step as two overlapped micro-batches
  split.overlap_communication = true;
  const double split_us = time_step(build_step_graph(focus, split), cost).total_us;
  const double scale = phase == Phase::kPrefill ? 1000.0 / static_cast<double>(context) : 1.0;
  const std::string phase_cell = phase == Phase::kDecode && served.choice.drafts > 0
                                     ? fmt::format("{} ({} drafts)", phase_name(phase), served.choice.drafts)
                                     : phase_name(phase);
  std::vector<std::string> row{gpu.name,        std::to_string(context),
                               phase_cell,      fmt::format("{:.1f} us", t.total_us * scale),
                               band.describe(), fmt::format("{:.1f} us", split_us * scale)};
  const std::vector<ModeTime> by_mode = time_by_mode(t);
  double other = t.total_us;
  for (const std::string& mode : modes) {
    const auto it =
        std::find_if(by_mode.begin(), by_mode.end(), [&](const ModeTime& m) { return m.mode == mode; });
    const double us = it == by_mode.end() ? 0.0 : it->time_us;
    other -= us;
    row.push_back(format_fixed(us * scale, 1));
  }
  row.push_back(format_fixed(other * scale, 1));
  const CudaCoreShare widening = widening_share(t);
  row.push_back(format_fixed(widening.bound_us * scale, 1));
  const CudaCoreShare fold = fold_share(t);
  row.push_back(format_fixed(fold.bound_us * scale, 1));
  const double latency_bound_us = time_bound_by(t, Bound::kLatency);
  row.push_back(format_fixed(latency_bound_us * scale, 1));
  table.add_row(row);
  steps.push_back({{"gpu", gpu.name},
                   {"phase", phase_name(phase)},
                   {"context", context},
                   {"batch", shape.batch},
                   {"drafts_verified", served.choice.drafts},
                   {"tokens_per_sequence", served.choice.tokens_per_sequence},
                   {"total_time_us", t.total_us},
                   {"two_micro_batches_us", split_us},
                   {"reported_us", t.total_us * scale},
                   {"error_band", error_band_json(band)},
                   {"widening_bound_us", widening.bound_us},
                   {"widening_work_us", widening.work_us},
                   {"fold_bound_us", fold.bound_us},
                   {"fold_work_us", fold.work_us},
                   {"latency_bound_us", latency_bound_us},
                   {"kv_memory", kv_memory_json(memory)}});
}

void add_step_times_notes(const ModelAnalysis& focus, const StepTimesNotes& notes, Table& table) {
  for (const std::string& label : notes.calibrations) table.add_note("kernel model on " + label);
  for (const std::string& step : notes.past_memory) table.add_note(step);
  for (const auto& [step, past] : notes.past_reserve) {
    table.add_note(fmt::format(
        "{} at {} tokens: its widest layer's residual streams ({}) are more than the reserve for activations "
        "({}): timed as if they fit (serving runs chunk prompts to their max_tokens_per_step)",
        step.first, step.second, format_bytes(past.residual_bytes), fmt::join(past.gpus, ", ")));
  }
  table.add_note(
      std::string(kErrorBandMethod) +
      "; until our measurements calibrate a GPU, its bands are the priors' error on published kernel "
      "figures (validate: the priors' error by kernel class), mostly the figures the priors were "
      "read off");
  table.add_note(fmt::format(
      "decode (k drafts): each sequence verifies its own token and k drafts, the count that gives the most "
      "expected tokens per second at the draft's {} (as serving runs choose it; `step --drafts` sets it), "
      "and "
      "the draft stages propose the next; a sequence emits the accepted run and its own token",
      draft_acceptance_phrase(focus.spec)));
  table.add_note(
      "decode uses CUDA-graph replay; time: EP communication after compute; as two micro-batches: the same "
      "step "
      "split in halves that take turns, one's EP transfers running while the other computes, each kernel "
      "after "
      "the one before it in its own half (each half reads the weights again and pays the transfers' fixed "
      "cost "
      "again; prefill transfers hold SMs meanwhile)");
  table.add_note(
      "in widening-bound kernels: time of the kernels whose CUDA-core widening of FP8/FP4 operands (cache "
      "entries into BF16 attention math; FP4 keys and weights on Hopper) outlasts their math and memory "
      "traffic");
  table.add_note(
      "in fold-bound kernels: time of the indexer's logits kernels whose CUDA-core fold of their heads' "
      "scores outlasts their math and memory traffic");
  for (const std::string& fold : notes.folds) table.add_note(fold);
  table.add_note(
      "in latency-bound GEMMs: time of the GEMMs whose load pipelines (shared-memory stages refilled once "
      "per "
      "memory latency) outlast their math and their share of HBM bandwidth: narrow tiles at small batch");
  if (focus.spec.mhc) table.add_note(mhc_projection_assumption(focus.spec));
  if (focus.spec.draft) table.add_note(kDraftHeadAssumption);
  if (focus.spec.draft && focus.spec.attention.indexer) table.add_note(kDraftIndexKeysShared);
  if (focus.spec.attention.candidate_pool) table.add_note(kReindexScoresPool);
}

// Decode step and prefill per 1K prompt tokens on every GPU profile, by layer mode.
std::string step_times_section(const Catalog& catalog, const ModelAnalysis& focus,
                               const std::vector<GpuProfile>& gpus, const StudyOptions& o,
                               nlohmann::json& json) {
  std::string md = fmt::format("## Step times of {} (EP {})\n\n", focus.spec.name, o.ep);
  std::vector<std::string> modes;
  for (const LayerPlanEntry& e : focus.plan) {
    if (std::find(modes.begin(), modes.end(), e.mode) == modes.end()) modes.push_back(e.mode);
  }
  std::vector<std::string> headers{"GPU", "context", "phase", "time", "band (90%)", "as two micro-batches"};
  for (const std::string& mode : modes) headers.push_back(mode);
  headers.push_back("other (head, draft)");
  headers.push_back("in widening-bound kernels");
  headers.push_back("in fold-bound kernels");
  headers.push_back("in latency-bound GEMMs");
  Table table(
      fmt::format("Decode step (batch {}) and prefill per 1K prompt tokens (one prompt), time by layer mode",
                  o.decode_batch),
      headers);
  json["steps"] = nlohmann::json::array();
  StepTimesNotes notes;
  for (const GpuProfile& gpu : gpus) {
    const std::string stem = fs::path(gpu.file).stem().string();
    for (const Phase phase : {Phase::kDecode, Phase::kPrefill}) {
      StepShape shape;
      shape.phase = phase;
      shape.ep = o.ep;
      shape.ep_per_node = gpu.nvlink_domain();
      shape.batch = phase == Phase::kDecode ? o.decode_batch : 1;
      const GpuCostModel model(catalog.data_dir(), catalog.resolve_gpu(stem), phase == Phase::kDecode);
      const std::string label = gpu.name + ": " + model.cost().params().label();
      if (std::find(notes.calibrations.begin(), notes.calibrations.end(), label) == notes.calibrations.end())
        notes.calibrations.push_back(label);
      const std::string fold = fold_note(model.cost().params());
      if (!fold.empty() && std::find(notes.folds.begin(), notes.folds.end(), fold) == notes.folds.end())
        notes.folds.push_back(fold);
      for (int64_t context : o.step_contexts) {
        shape.context = context;
        add_step_row(focus, gpu, model.cost(), shape, modes, table, json["steps"], notes);
      }
    }
  }
  add_step_times_notes(focus, notes, table);
  return md + table.to_markdown();
}

// The figures that moved the step, each with the step timed at both ends
// (a refused value with its reason), and those that did not move it.
Table step_sensitivity_table(const StepSensitivity& s, const std::string& what, const std::string& data_dir,
                             nlohmann::json& json) {
  Table table(
      fmt::format("Which assumed figures move the {} ({:.1f} us as the files say)", what, s.baseline_us),
      {"figure", "where", "as the file says", fmt::format("-{:g}%", 100 * s.swing),
       fmt::format("+{:g}%", 100 * s.swing), "largest change"});
  std::vector<std::string> still;
  json = {{"step", what},
          {"baseline_us", s.baseline_us},
          {"swing", s.swing},
          {"figures", nlohmann::json::array()}};
  for (const StepEffect& e : s.effects) {
    const std::string where = fmt::format("{}:{}", path_in_data_dir(e.figure.file, data_dir), e.figure.line);
    if (e.change_pct == 0) {
      still.push_back(e.figure.field + " (" + where + ")");
      continue;
    }
    const auto side = [&](const MovedSide<double>& m) {
      const std::string value = fmt::format("{:.4g}", m.value);
      if (!m.rejected.empty()) return value + ": refused (" + m.rejected + ")";
      return fmt::format("{}: {:.1f} us ({:+.1f}%)", value, m.outcome, 100 * (m.outcome / s.baseline_us - 1));
    };
    table.add_row({e.figure.field, where, e.figure.text + " (" + e.figure.source + ")", side(e.low),
                   side(e.high), fmt::format("{:.1f}%", e.change_pct)});
    json["figures"].push_back({{"field", e.figure.field},
                               {"file", path_in_data_dir(e.figure.file, data_dir)},
                               {"change_pct", e.change_pct}});
  }
  table.add_note(fmt::format(
      "each assumed figure of the model file, the GPU profile, the kernel-model calibration it uses and the "
      "GPU those priors were published on, moved {:g}% down and up in turn (integers by at least 1) and the "
      "step timed again through the same loaders; a value a loader refuses is shown with its reason",
      100 * s.swing));
  if (!still.empty()) table.add_note(fmt::format("no effect on this step: {}", fmt::join(still, "; ")));
  return table;
}

// Which assumed figures move one decode step on the kernel model, each moved
// down and up (step_sensitivity.h): until a GPU of ours is measured, these
// are the figures the step times rest on most.
std::string step_sensitivity_section(const Catalog& catalog, const StudyOptions& o, nlohmann::json& json) {
  const std::string model_file = catalog.resolve_model(o.focus_model);
  const std::string gpu_file = catalog.resolve_gpu(o.sensitivity_gpu);
  const auto decode_shape = [&o](const GpuCostModel& gpu) {
    StepShape shape;
    shape.phase = Phase::kDecode;
    shape.batch = o.decode_batch;
    shape.context = o.sensitivity_context;
    shape.ep = o.ep;
    shape.ep_per_node = gpu.gpu().nvlink_domain();
    return shape;
  };
  // The drafts a serving run verifies as the files say, held while the
  // figures move: each moved step does the same work.
  const ModelAnalysis model = analyze_model(load_model_by_name(catalog, model_file));
  const GpuCostModel as_the_files_say(catalog.data_dir(), gpu_file, true);
  const int64_t drafts =
      as_served(model, decode_shape(as_the_files_say), as_the_files_say.cost()).choice.drafts;
  const auto step_us = [&] {  // loads everything again: a moved figure reaches whatever reads it
    const ModelAnalysis moved = analyze_model(load_model_by_name(catalog, model_file));
    const GpuCostModel gpu(catalog.data_dir(), gpu_file, true);
    return time_step(build_step_graph(moved, verifying(decode_shape(gpu), drafts)), gpu.cost()).total_us;
  };
  std::vector<std::string> files{model_file};
  for (std::string& file : as_the_files_say.files_read(catalog.data_dir())) files.push_back(std::move(file));
  const StepSensitivity s = step_sensitivity(files, step_us, o.sensitivity_swing);
  const std::string gpu_name = load_gpu_profile_by_name(catalog, gpu_file).name;
  const std::string what =
      fmt::format("{} decode step, batch {}, {} tokens of context, EP {}, {} drafts verified a sequence",
                  gpu_name, o.decode_batch, o.sensitivity_context, o.ep, drafts);
  Table table = step_sensitivity_table(s, what, catalog.data_dir(), json);
  table.add_note("step times from the kernel model, " + as_the_files_say.cost().params().label());
  table.add_note("`v41sim sensitivity` does the same for a served run's $ per token and TPOT");
  std::string md = "## Which assumptions the step times rest on\n\n" + table.to_markdown();
  if (model.spec.draft && model.spec.attention.candidate_pool) {
    md += "\n" + engine_choices_table(model, as_the_files_say.cost(), decode_shape(as_the_files_say),
                                      o.step_contexts, o.engine_choices_prefill_context, gpu_name,
                                      json["engine_choices"])
                     .to_markdown();
  }
  return md;
}

// What changes from 8K to 1M tokens: one deployment swept over session
// lengths on a few GPUs (context_sweep.h).
std::string context_section(const Catalog& catalog, const ModelAnalysis& focus, const StudyOptions& o,
                            const std::string& out_dir, nlohmann::json& json) {
  const DeploymentSpec base = load_deployment_by_name(catalog, o.context_deployment);
  const ContextSweepOptions options{o.context_sweep, o.context_output_tokens, base.sla.tpot_ms, 0};
  std::string md = fmt::format("## From {} to {} tokens of context ({} on {})\n\n", o.context_sweep.front(),
                               o.context_sweep.back(), o.context_deployment, fmt::join(o.context_gpus, ", "));
  json = nlohmann::json::array();
  const std::vector<DeploymentSpec> variants = plan_variants(base, PlanGrid{.gpus = o.context_gpus});
  std::vector<ContextSweep> sweeps(variants.size());
  parallel_for(variants.size(),
               [&](std::size_t i) { sweeps[i] = sweep_contexts(catalog, focus, variants[i], options); });
  write_output(out_dir, "context_cost.svg", context_cost_svg(focus.spec.name, sweeps));
  write_output(out_dir, "context_capacity.svg", context_capacity_svg(focus.spec.name, sweeps));
  md +=
      "![$ per 1M output tokens by session length](context_cost.svg)\n\n"
      "![sessions per decode GPU and decode batch by session length](context_capacity.svg)\n\n";
  for (const ContextSweep& sweep : sweeps) {
    md += context_table(focus.spec.name, sweep).to_markdown();
    json.push_back(context_json(focus.spec.name, sweep));
  }
  return md;
}

// Decode batch by batch on a few GPUs: tokens/s per user against per GPU,
// and the Pareto points by user speed and $ per output token.
std::string frontier_section(const Catalog& catalog, const ModelAnalysis& focus, const StudyOptions& o,
                             const std::string& out_dir, nlohmann::json& json) {
  const DeploymentSpec base = load_deployment_by_name(catalog, o.context_deployment);
  const std::vector<DeploymentSpec> variants = frontier_layouts(catalog, focus.spec, base, o.frontier_gpus);
  std::vector<DecodeFrontier> frontiers(variants.size());
  parallel_for(variants.size(), [&](std::size_t i) {
    frontiers[i] = decode_frontier(catalog, focus, variants[i], o.frontier_context);
  });
  mark_pareto(frontiers);
  write_output(out_dir, "decode_frontier.svg", frontier_svg(focus.spec.name, frontiers));
  json = frontier_json(focus.spec.name, frontiers);
  return fmt::format("## Decode frontier at {} tokens ({} on {})\n\n", o.frontier_context,
                     o.context_deployment, fmt::join(o.frontier_gpus, ", ")) +
         "![tokens/s per GPU against tokens/s per user](decode_frontier.svg)\n\n" +
         frontier_table(focus.spec.name, frontiers).to_markdown();
}

// "62.5%", or "-" where nothing was counted.
std::string percent_of(int64_t part, int64_t whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole))
                   : std::string("-");
}

// Every bundled deployment serving one workload, one seed, runs side by side
// (`drain`: after `seconds` of arrivals, until every request is done).
struct ServedDeployments {
  std::vector<DeploymentSpec> deployments;
  std::vector<ServedRun> served;
};

// What each of the study's runs of `seconds` of arrivals takes.
ServeOptions study_serve_options(const StudyOptions& o, double seconds, bool drain) {
  ServeOptions options;
  options.duration_s = seconds;
  options.seed = o.seed;
  options.drain = drain;
  return options;
}

ServedDeployments serve_every_deployment(const Catalog& catalog, const ModelAnalysis& focus,
                                         const StudyOptions& o, SharedStepTimes& steps,
                                         const WorkloadSpec& workload, double seconds, bool drain) {
  ServedDeployments out;
  for (const std::string& file : catalog.deployment_files())
    out.deployments.push_back(load_deployment_by_name(catalog, file));
  const ServeOptions options = study_serve_options(o, seconds, drain);
  std::vector<const DeploymentSteps*> shared;
  for (const DeploymentSpec& d : out.deployments) shared.push_back(&steps.of(d));
  out.served.resize(out.deployments.size());
  parallel_for(out.deployments.size(), [&](std::size_t i) {
    out.served[i] =
        serve_deployment(shared[i]->gpus, shared[i]->steps, focus, out.deployments[i], workload, options);
  });
  return out;
}

// A short serving run of each bundled deployment under one workload.
std::string serving_section(const Catalog& catalog, const ModelAnalysis& focus, const StudyOptions& o,
                            SharedStepTimes& steps, const std::string& workload_name, nlohmann::json& runs) {
  const WorkloadSpec workload = load_workload_file(catalog.resolve_workload(workload_name));
  std::string md =
      fmt::format("## Serving {} under the {} workload ({}, seed {})\n\n", focus.spec.name, workload_name,
                  arrivals_phrase(study_serve_options(o, o.serving_seconds, false), workload), o.seed);
  Table table("Latency, throughput and cost per deployment",
              {"deployment", "GPUs", "finished", "TTFT p50 / p99 (ms)", "TPOT p50 / p99 (ms)",
               "ITL p50 / p99 (ms)", "longest ITL p50 / p99 (ms)", "tokens/s/GPU in / out", "goodput",
               "input from the KV tiers", "window state found", "$ per 1M output tokens"});
  runs = nlohmann::json::array();
  std::vector<KernelModelUse> kernel_models;
  const auto [deployments, served] =
      serve_every_deployment(catalog, focus, o, steps, workload, o.serving_seconds, false);
  for (std::size_t i = 0; i < deployments.size(); ++i) {
    const DeploymentSpec& d = deployments[i];
    const ServedRun& run = served[i];
    const ServingResult& r = run.result;
    const ServingCost& cost = run.cost;
    const int64_t input_tokens = r.input_tokens_cached + r.input_tokens_prefilled - r.input_tokens_replayed;
    collect_kernel_models(run, kernel_models);
    table.add_row(
        {d.name, std::to_string(r.gpus), fmt::format("{} of {}", r.finished, r.arrived),
         p50_p99(r.ttft_ms, 0), p50_p99(r.tpot_ms, 1), p50_p99(r.itl_ms, 1), p50_p99(r.longest_itl_ms, 1),
         fmt::format("{:.0f} / {:.0f}", r.input_tokens_per_s_per_gpu, r.output_tokens_per_s_per_gpu),
         r.finished > 0 ? fmt::format("{:.1f}%", 100 * r.goodput_fraction) : "-",
         percent_of(r.input_tokens_cached, input_tokens),
         percent_of(r.kv_tiers.swa_hits, r.kv_tiers.swa_hits + r.kv_tiers.swa_misses),
         output_token_price(run)});
    runs.push_back({{"deployment", d.name},
                    {"ttft_ms_p50", figure(r.ttft_ms, &LatencySummary::p50)},
                    {"ttft_ms_p99", figure(r.ttft_ms, &LatencySummary::p99)},
                    {"tpot_ms_p50", figure(r.tpot_ms, &LatencySummary::p50)},
                    {"tpot_ms_p99", figure(r.tpot_ms, &LatencySummary::p99)},
                    {"itl_ms_p50", figure(r.itl_ms, &LatencySummary::p50)},
                    {"itl_ms_p99", figure(r.itl_ms, &LatencySummary::p99)},
                    {"longest_itl_ms_p50", figure(r.longest_itl_ms, &LatencySummary::p50)},
                    {"longest_itl_ms_p99", figure(r.longest_itl_ms, &LatencySummary::p99)},
                    {"finished", r.finished},
                    {"input_tokens_cached", r.input_tokens_cached},
                    {"input_tokens_prefilled", r.input_tokens_prefilled},
                    {"kv_tiers", kv_tiers_json(r.kv_tiers)},
                    {"steady_state", steady_state_json(r)},
                    {"cost", cost_json(cost)}});
  }
  table.add_note(traffic_note(workload));
  if (std::any_of(served.begin(), served.end(),
                  [](const ServedRun& run) { return run.result.finished == 0; }))
    table.add_note("'-' where no request finished within the run: no latency or goodput to take");
  std::vector<std::pair<std::string, const ServedRun*>> labelled;
  for (std::size_t i = 0; i < deployments.size(); ++i) labelled.emplace_back(deployments[i].name, &served[i]);
  if (const std::string note = unsettled_note(labelled); !note.empty()) table.add_note(note);
  table.add_note(
      "input from the KV tiers: prompt tokens whose global KV a returning turn found in the SSD tier, of all "
      "prompt tokens (window replays not counted); window state found: returning turns whose SWA state was "
      "still in the host-DRAM pool (else a bounded replay of the window)");
  note_first_token(table, deployments);
  note_engines(table, deployments);
  table.add_note(itl_column_note());
  table.add_note(longest_itl_column_note());
  add_served_run_notes(table, kernel_models);
  return md + table.to_markdown();
}

// Each bundled deployment serving a mix of traffic, class by class: how
// each class fares against its own limits where one deployment serves them all.
std::string mix_section(const Catalog& catalog, const ModelAnalysis& focus, const StudyOptions& o,
                        SharedStepTimes& steps, nlohmann::json& runs) {
  const WorkloadSpec workload = load_workload_file(catalog.resolve_workload(o.mix_workload));
  std::string md =
      fmt::format("## A mix of traffic on one deployment: {} ({}, then drained; seed {})\n\n", workload.name,
                  arrivals_phrase(study_serve_options(o, o.mix_seconds, true), workload), o.seed);
  Table table("Each class of traffic on each deployment",
              {"deployment", "class", "share of sessions", "SLA: TTFT / TPOT (ms)", "priority", "requests",
               "within its SLA", "TTFT p50 / p99 (ms)", "TPOT p50 / p99 (ms)", "ITL p50 / p99 (ms)",
               "$ per 1M output tokens (all)"});
  runs = nlohmann::json::array();
  std::vector<KernelModelUse> kernel_models;
  const auto [deployments, served] =
      serve_every_deployment(catalog, focus, o, steps, workload, o.mix_seconds, true);
  for (std::size_t i = 0; i < deployments.size(); ++i) {
    const ServingResult& r = served[i].result;
    collect_kernel_models(served[i], kernel_models);
    nlohmann::json classes = nlohmann::json::array();
    for (std::size_t c = 0; c < r.by_class.size(); ++c) {
      const ClassOutcome& k = r.by_class[c];
      table.add_row(
          {c == 0 ? deployments[i].name : "", k.name, fmt::format("{:.0f}%", 100 * workload.mix[c].share),
           fmt::format("{} / {}", k.sla.ttft_ms, k.sla.tpot_ms), std::to_string(workload.mix[c].priority),
           std::to_string(k.arrived), percent_of(k.within_sla, k.arrived), p50_p99(k.ttft_ms, 0),
           p50_p99(k.tpot_ms, 1), p50_p99(k.itl_ms, 1), c == 0 ? output_token_price(served[i]) : ""});
      classes.push_back({{"class", k.name},
                         {"arrived", k.arrived},
                         {"within_sla", k.within_sla},
                         {"ttft_ms_p99", k.ttft_ms.p99},
                         {"tpot_ms_p99", k.tpot_ms.p99},
                         {"itl_ms_p99", figure(k.itl_ms, &LatencySummary::p99)}});
    }
    runs.push_back({{"deployment", deployments[i].name},
                    {"workload", workload.name},
                    {"by_class", classes},
                    {"cost", cost_json(served[i].cost)}});
  }
  table.add_note(traffic_note(workload));
  table.add_note(
      "SLA: each class's own limits where the mix gives them, its deployment's for the rest; within its SLA: "
      "the class's requests that finished within them, of those that arrived (each run drains: every request "
      "that arrived ends finished or rejected); $ per 1M output tokens: the deployment's, over every class's "
      "tokens");
  note_first_token(table, deployments);
  note_engines(table, deployments);
  table.add_note(itl_column_note());
  add_served_run_notes(table, kernel_models);
  return md + table.to_markdown();
}

// The bases varied over the grid under the serving workload, ranked (plan).
// A plan the study ran, holding what its PlanReport refers to.
struct StudyPlan {
  static constexpr double kWithinSla = 0.99;
  std::string model;
  std::vector<DeploymentSpec> bases;
  WorkloadSpec workload;
  ServeOptions options;
  std::vector<PlanRow> rows;
  PlanReport report() const { return PlanReport{model, bases, workload, options, kWithinSla, rows}; }
};

StudyPlan study_plan(const Catalog& catalog, const ModelAnalysis& focus, const StudyOptions& o,
                     SharedStepTimes& steps, const std::vector<std::string>& base_names, const PlanGrid& grid,
                     const std::string& workload) {
  StudyPlan plan;
  plan.model = focus.spec.name;
  for (const std::string& name : base_names) plan.bases.push_back(load_deployment_by_name(catalog, name));
  plan.workload = load_workload_file(catalog.resolve_workload(workload));
  plan.options.duration_s = o.serving_seconds;
  plan.options.seed = o.seed;
  plan.options.seeds = o.served_seeds;
  plan.rows = run_plan(catalog, focus, plan.bases, grid, plan.workload, plan.options, StudyPlan::kWithinSla,
                       o.confirm_seconds, &steps);
  return plan;
}

std::string plan_section(const Catalog& catalog, const ModelAnalysis& focus, const StudyOptions& o,
                         SharedStepTimes& steps, const std::vector<std::string>& base_names,
                         const PlanGrid& grid, const std::string& heading, nlohmann::json& json) {
  const StudyPlan plan = study_plan(catalog, focus, o, steps, base_names, grid, o.serving_workload);
  const PlanReport report = plan.report();
  json = plan_json(report);
  return "## " + heading + "\n\n" + plan_table(report).to_markdown();
}

// Which GPU, and how many, serve the workload within the SLA for the least
// money: one base deployment varied over every GPU profile, EP size and
// instance count.
std::string cheapest_gpu_section(const Catalog& catalog, const ModelAnalysis& focus, const StudyOptions& o,
                                 SharedStepTimes& steps, nlohmann::json& json) {
  PlanGrid grid;
  for (const std::string& file : catalog.gpu_files()) grid.gpus.push_back(fs::path(file).stem().string());
  grid.eps = o.plan_eps;
  grid.decode_instances = o.plan_decode_instances;
  return plan_section(catalog, focus, o, steps, {o.plan_deployment}, grid,
                      fmt::format("The cheapest deployment within the SLA ({} on every GPU profile, EP {})",
                                  o.plan_deployment, fmt::join(o.plan_eps, " or ")),
                      json);
}

// One pool for prefill and decode, or a pool each: the same arrivals and SLA
// on both layouts, on the same GPUs.
std::string layout_section(const Catalog& catalog, const ModelAnalysis& focus, const StudyOptions& o,
                           SharedStepTimes& steps, nlohmann::json& json) {
  const PlanGrid grid{.gpus = o.layout_gpus,
                      .eps = {o.ep},
                      .prefill_instances = {1},
                      .decode_instances = {1},
                      .aggregated_steps = o.layout_aggregated_steps,
                      .prefill_delay_steps = o.layout_prefill_delay_steps};
  return plan_section(
      catalog, focus, o, steps, o.layout_deployments, grid,
      fmt::format("Aggregated or disaggregated ({}, EP {}, one instance of each pool; the aggregated "
                  "pool with prompts in steps of their own, with a prefill delay of up to {} decode steps (a "
                  "rank's prompts held for the other ranks'), or mixed into decode steps)",
                  fmt::join(o.layout_deployments, " against "), o.ep,
                  fmt::join(o.layout_prefill_delay_steps, " or ")),
      json);
}

// How much traffic one deployment serves within its SLA: the serving
// workload's rate swept and bisected (capacity).
std::string load_capacity_section(const Catalog& catalog, const ModelAnalysis& focus, const StudyOptions& o,
                                  const std::string& out_dir, SharedStepTimes& steps, nlohmann::json& json) {
  const DeploymentSpec base = load_deployment_by_name(catalog, o.capacity_deployment);
  const WorkloadSpec workload = load_workload_file(catalog.resolve_workload(o.serving_workload));
  LoadOptions options;
  options.serve.duration_s = o.capacity_seconds;
  options.serve.seed = o.seed;
  options.serve.seeds = o.capacity_seeds;
  options.rate_factors = o.capacity_rate_factors;
  options.precision = o.capacity_precision;
  options.confirm_s = o.confirm_seconds;
  // An aggregated pool is asked with each way of scheduling its prompts.
  std::vector<DeploymentSpec> deployments;
  for (const auto schedule :
       base.disaggregated ? std::vector{base.aggregated_steps} : o.layout_aggregated_steps) {
    DeploymentSpec d = base;
    d.aggregated_steps = schedule;
    if (!d.disaggregated) d.name += fmt::format(", {}", aggregated_steps_phrase(schedule));
    deployments.push_back(std::move(d));
  }
  std::string md =
      fmt::format("## How much traffic {} serves within the SLA ({})\n\n", base.name, o.capacity_deployment);
  json = nlohmann::json::array();
  const std::vector<LoadCapacity> capacities =
      find_load_capacities(catalog, focus, deployments, workload, options, &steps);
  const std::vector<CapacityReport> reports =
      capacity_reports(focus.spec.name, deployments, workload, options, capacities);
  write_output(out_dir, "capacity_latency.svg", capacity_svg(reports));
  md += "![TTFT and TPOT p99 over the SLA's limits by arrival rate](capacity_latency.svg)\n\n";
  for (const CapacityReport& report : reports) {
    json.push_back(capacity_json(report));
    md += capacity_table(report).to_markdown();
  }
  return md;
}

// The instances the KV tiers are compared on: the fewest of
// `kv_tiers_instances` that serve the traffic within the SLA, over a window
// that settled, with the longest retention. On fewer the queue grows
// whatever the tier, and a shorter retention's extra prefills only tip it
// further: the comparison would measure the overload, not the tier.
struct TierBase {
  int64_t instances = 0;
  bool sized = false;      // false: none of the counts tried served it; the most is used
  double retention_h = 0;  // the longest retention compared, which sized it
};

TierBase tier_base(const Catalog& catalog, const ModelAnalysis& focus, const StudyOptions& o,
                   SharedStepTimes& steps) {
  const double longest = *std::max_element(o.kv_retentions_h.begin(), o.kv_retentions_h.end());
  const StudyPlan plan = study_plan(catalog, focus, o, steps, {o.plan_deployment},
                                    {.decode_instances = o.kv_tiers_instances, .kv_retentions_h = {longest}},
                                    o.kv_tiers_workload);
  TierBase base{*std::max_element(o.kv_tiers_instances.begin(), o.kv_tiers_instances.end()), false, longest};
  for (const PlanRow& row : plan.rows) {
    const int64_t instances = row.deployment.decode.instances;
    if (row.not_run.empty() && row.meets_sla && row.holds() && (!base.sized || instances < base.instances)) {
      base = {instances, true, longest};
    }
  }
  return base;
}

// What the KV tiers are worth: the plan deployment, on as many instances as
// tier_base finds, with its SSD tier kept for each retention or off and its
// window-state pool on or off, on the same arrivals of sessions that also
// come back hours later; then the SSD tier its cheapest variant at the
// longest retention would need for each bundled model; then the tier bounded to a few
// sizes (what a buyer provisions) on the same traffic.
std::string kv_tiers_section(const Catalog& catalog, const std::vector<ModelAnalysis>& models,
                             const ModelAnalysis& focus, const StudyOptions& o, SharedStepTimes& steps,
                             nlohmann::json& json) {
  const TierBase base = tier_base(catalog, focus, o, steps);
  const PlanGrid grid{.decode_instances = {base.instances},
                      .kv_retentions_h = o.kv_retentions_h,
                      .swa_pool_fractions = o.swa_pool_fractions};
  const StudyPlan plan = study_plan(catalog, focus, o, steps, {o.plan_deployment}, grid, o.kv_tiers_workload);
  const PlanReport report = plan.report();
  json = plan_json(report);
  json["instances"] = base.instances;
  json["instances_serve_longest_retention"] = base.sized;
  const double longest = base.retention_h;
  const std::string counts = fmt::format("{}", fmt::join(o.kv_tiers_instances, ", "));
  const std::string sizing =
      base.sized
          ? fmt::format(
                "Compared on {} instance(s) of {}: the fewest of {} that serve this traffic within the "
                "SLA, over a window that settled, with the {:g} h tier (on fewer the queue grows "
                "whatever the tier, and the comparison would measure the overload).\n\n",
                base.instances, o.plan_deployment, counts, longest)
          : fmt::format(
                "Compared on {} instance(s) of {}, the most tried: none of {} served this traffic "
                "within the SLA over a window that settled with the {:g} h tier.\n\n",
                base.instances, o.plan_deployment, counts, longest);
  std::string md = fmt::format("## What the KV tiers are worth ({})\n\n", o.plan_deployment) + sizing +
                   plan_table(report).to_markdown();
  // Each model's tier at the longest retention (what the instances were sized
  // for; where tiers cost most): its cheapest variant, the first in rank.
  const auto kept = std::find_if(report.rows.begin(), report.rows.end(), [&](const PlanRow& r) {
    return r.not_run.empty() && r.run.cost.ssd_tier.retention_s > 0 &&
           r.deployment.kv.retention_s >= longest * 3600;
  });
  if (kept == report.rows.end()) return md;
  const std::vector<SsdTierOfModel> tiers = ssd_tier_by_model(models, kept->run, kept->deployment);
  json["ssd_tier_by_model"] = ssd_tier_json(tiers, kept->run);
  md +=
      ssd_tier_table(tiers, kept->run, kept->deployment, focus.spec.name, report.workload.name).to_markdown();
  const StudyPlan sized = study_plan(
      catalog, focus, o, steps, {o.plan_deployment},
      {.decode_instances = {base.instances}, .ssd_capacities_tb = o.ssd_capacities_tb}, o.kv_tiers_workload);
  json["by_size"] = plan_json(sized.report());
  std::vector<double> bounded;
  for (const double tb : o.ssd_capacities_tb) {
    if (tb > 0) bounded.push_back(tb);
  }
  return md +
         fmt::format(
             "How large a tier: the same traffic with the tier bounded to {} TB (or unbounded), "
             "least recently stored out first, paid for whole.\n\n",
             fmt::join(bounded, ", ")) +
         plan_table(sized.report()).to_markdown();
}

// The chart a published figure goes on: whole steps share one, per GPU, as
// some engines publish them per node and some per GPU, with the serving
// benchmarks' throughput (their latencies are in the table alone).
std::string chart_metric(const PublishedReference& r) {
  return r.probe_kind == "step" ? "tokens_per_s_per_gpu" : r.metric;
}

// How far the kernel model is from published kernel figures and from our held-out measurements.
std::string validation_section(const Catalog& catalog, const std::string& out_dir, nlohmann::json& json) {
  std::vector<ValidationRow> rows;
  for (const PublishedReference& reference : load_published_references(catalog)) {
    rows.push_back(validate_reference(reference, catalog));
  }
  const std::vector<ValidationRow> held_out = validate_held_out_measurements(catalog);
  std::string md = "## Validation against published kernel figures and our held-out measurements\n\n";
  // Our measurements: one scatter per GPU (kernel times, held-out shapes only).
  std::vector<std::string> measured_gpus;
  for (const ValidationRow& r : held_out) {
    if (std::find(measured_gpus.begin(), measured_gpus.end(), r.reference.gpu) == measured_gpus.end())
      measured_gpus.push_back(r.reference.gpu);
  }
  for (const std::string& gpu : measured_gpus) {
    std::vector<ScatterPoint> points;
    for (const ValidationRow& r : held_out) {
      if (r.reference.gpu == gpu)
        points.push_back({r.reference.value, r.predicted, r.reference.name, gpu, r.within_tolerance});
    }
    const std::string file = fmt::format("validation_measured_{}.svg", gpu);
    write_output(out_dir, file,
                 svg_scatter({fmt::format("{}: predicted vs measured kernel time (us), held-out shapes", gpu),
                              "measured", kHeldOutTolerancePct},
                             points));
    md += fmt::format("![predicted vs measured on {}]({})\n\n", gpu, file);
  }
  // Published figures: one scatter per metric, so the axes share units.
  for (const char* metric : {"tflops", "gbps", "us", "tokens_per_s_per_gpu"}) {
    std::vector<ScatterPoint> points;
    const bool steps = std::string_view(metric) == "tokens_per_s_per_gpu";
    ScatterChart chart{steps ? "whole steps and serving benchmarks: predicted vs published tokens/s per GPU "
                               "(per node / its GPUs)"
                             : fmt::format("predicted vs published ({}), by GPU", metric),
                       "published", 0};
    for (const ValidationRow& r : rows) {
      if (chart_metric(r.reference) != metric) continue;
      // A per-node step over its node's GPUs, reference and prediction alike (its error unchanged).
      const double scale = 1.0 / gpus_in_figure(r.reference);
      points.push_back({scale * r.reference.value, scale * r.predicted,
                        r.reference.name + " (" + r.reference.gpu + ")", r.reference.gpu,
                        r.within_tolerance});
      const double tolerance = r.reference.tolerance_pct;
      chart.tolerance_varies |= points.size() > 1 && tolerance != chart.band_pct;
      chart.band_pct = std::max(chart.band_pct, tolerance);
    }
    if (points.empty()) continue;
    const std::string file = fmt::format("validation_{}.svg", metric);
    write_output(out_dir, file, svg_scatter(chart, points));
    md += fmt::format("![predicted vs published, {}]({})\n\n", metric, file);
  }
  for (const ValidationRow& r : held_out) rows.push_back(r);
  const nlohmann::json validation = validation_json(rows);
  json["validation"] = validation["references"];
  json["validation_by_probe"] = validation["by_probe"];
  const PublishedBandDerivation bands = derive_published_bands(catalog);
  json["published_bands"] = published_bands_json(bands);
  return md + validation_table(rows).to_markdown() + "\n" + validation_summary_table(rows).to_markdown() +
         "\n" + published_bands_table(bands).to_markdown();
}

}  // namespace

// Global KV per token of every bundled model, and each one's per-layer table.
std::string kv_section(const std::vector<ModelAnalysis>& models, const StudyOptions& o,
                       nlohmann::json& json) {
  std::string md = "## KV cache\n\n" + kv_overview(models, o.contexts).to_markdown();
  for (const ModelAnalysis& m : models) {
    md += kv_tables(m, o.contexts.back()).front().to_markdown();
    json.push_back({{"kv", kv_json(m, o.contexts.back())}, {"params", params_json(m)}});
  }
  return md;
}

std::string claims_section(const Catalog& catalog, const ModelAnalysis& focus, const StudyOptions& o,
                           nlohmann::json& json) {
  const auto claims = check_bundled_claims(catalog, focus, o.reserve_fraction);
  json = claims_json(claims)["claims"];
  return "## Claims of the seed article\n\n" + claims_table(claims).to_markdown();
}

// Sessions that o.gpus GPUs of each profile hold at each context, with each fit's details.
std::string memory_fit_section(const ModelAnalysis& focus, const std::vector<GpuProfile>& gpus,
                               const StudyOptions& o, nlohmann::json& fits) {
  // The sessions again with each other index-key format the model file
  // defines (V4's FP8 key, which every Hopper engine stores).
  std::vector<std::string> header{"GPU", "context tokens", "weights per GPU", "left for KV per GPU",
                                  "sessions on all GPUs"};
  const std::vector<std::string> other_keys = other_index_key_formats(focus.spec);
  for (const std::string& format : other_keys) header.push_back("sessions, index keys as " + format);
  Table summary("Sessions per GPU profile (details below)", header);
  std::string details;
  for (const GpuProfile& gpu : gpus) {
    for (int64_t context : o.contexts) {
      FitRequest r{
          o.gpus, o.ep, context, focus.spec.weights, DensePlacement::kReplicated, o.reserve_fraction};
      const FitResult fit = fit_memory(focus, gpu, r);
      std::vector<std::string> row{gpu.name, std::to_string(context), format_bytes(fit.weight_bytes_per_gpu),
                                   format_bytes(fit.kv_bytes_per_gpu), std::to_string(fit.sessions)};
      nlohmann::json fit_as_json = fit_json(focus, gpu, r, fit);
      fit_as_json["sessions_with_index_keys"] = nlohmann::json::object();
      for (const SessionsWithIndexKeys& keyed : sessions_with_other_index_keys(focus, gpu, r)) {
        row.push_back(std::to_string(keyed.sessions));
        fit_as_json["sessions_with_index_keys"][keyed.format] = keyed.sessions;
      }
      summary.add_row(row);
      details += fit_table(focus, gpu, r, fit).to_markdown();
      fits.push_back(fit_as_json);
    }
  }
  summary.add_note("derived; HBM sizes from each profile's datasheet entry; reserve " +
                   o.reserve_fraction.provenance().label());
  for (const std::string& format : other_keys) {
    summary.add_note(fmt::format(
        "sessions, index keys as {}: the model's index keys stored as {}, {:.0f} B/token of global KV where "
        "its own give {:.0f}",
        format, index_key_format_text(focus.spec, format, true),
        analyze_with_index_keys(focus.spec, format).kv.global_bytes_per_token,
        focus.kv.global_bytes_per_token));
  }
  return fmt::format("## Memory fit of {} on {} GPUs, EP {}\n\n", focus.spec.name, o.gpus, o.ep) +
         summary.to_markdown() + details;
}

// The title, the values --set edited (they change the files this report
// read: it says which, at its top) and the answers in brief, drawn from the
// sections' JSON.
std::string report_head(const Catalog& catalog, nlohmann::json& json) {
  std::string what_if;
  json["what_if"] = nlohmann::json::array();
  for (const ValueEdit& edit : installed_value_edits()) {
    what_if += "- what if: " + describe(edit, catalog.data_dir()) + "\n";
    json["what_if"].push_back(describe(edit, catalog.data_dir()));
  }
  if (!what_if.empty()) what_if = "**This report reads edited values (`--set`):**\n\n" + what_if + "\n";
  return fmt::format("# {}\n\n", kStudyTitle) +
         "Generated by `v41sim report` from the bundled model and GPU files. Every figure is derived "
         "from those files unless its row or note names another source.\n\n" +
         what_if + "## Answers in brief\n\n" + study_summary(json).to_markdown();
}

StudyOutput write_study_report(const Catalog& catalog, const StudyOptions& o) {
  make_output_folder(o.out_dir);
  std::vector<ModelAnalysis> models;
  for (const std::string& file : catalog.model_files())
    models.push_back(analyze_model(load_model_by_name(catalog, file)));
  std::vector<GpuProfile> gpus;
  for (const std::string& file : catalog.gpu_files()) gpus.push_back(load_gpu_profile_by_name(catalog, file));
  const ModelAnalysis focus = analyze_model(load_model_by_name(catalog, o.focus_model));

  std::string md;  // the sections; the title and the answers in brief go above them at the end
  nlohmann::json json{{"models", nlohmann::json::array()}, {"fits", nlohmann::json::array()}};
  md += kv_section(models, o, json["models"]);
  md += "## Parameters\n\n";
  for (const Table& t : params_tables(focus)) md += t.to_markdown();
  md += claims_section(catalog, focus, o, json["claims"]);
  md += memory_fit_section(focus, gpus, o, json["fits"]);
  md += step_times_section(catalog, focus, gpus, o, json);
  md += step_sensitivity_section(catalog, o, json["step_sensitivity"]);
  md += context_section(catalog, focus, o, o.out_dir, json["context_sweeps"]);
  md += frontier_section(catalog, focus, o, o.out_dir, json["decode_frontier"]);
  // The served runs below share step times wherever their pools time steps
  // alike (about 1.3 GB of caches at the end; the sections run about 20 s
  // less CPU than with a cache each).
  SharedStepTimes steps(catalog, focus);
  // The plans and the capacity searches run beside each other and the
  // serving sections: alone, each waits on rounds of runs whose lengths
  // differ and leaves a core idle (README: Performance). A section reads
  // only its own inputs and the step times, which depend on a step's shape
  // alone, so running beside another changes no figure; each writes its own
  // JSON, joined below in the report's order.
  struct Beside {
    nlohmann::json json;
    std::future<std::string> md;
  };
  const auto beside = [](Beside& section, auto run) {
    section.md = std::async(std::launch::async, [&section, run] { return run(section.json); });
  };
  Beside plan, layouts, tiers, capacity;
  beside(capacity,
         [&](nlohmann::json& j) { return load_capacity_section(catalog, focus, o, o.out_dir, steps, j); });
  beside(plan, [&](nlohmann::json& j) { return cheapest_gpu_section(catalog, focus, o, steps, j); });
  beside(layouts, [&](nlohmann::json& j) { return layout_section(catalog, focus, o, steps, j); });
  beside(tiers, [&](nlohmann::json& j) { return kv_tiers_section(catalog, models, focus, o, steps, j); });
  md += serving_section(catalog, focus, o, steps, o.serving_workload, json["serving"]);
  md += "\n\n" +
        serving_section(catalog, focus, o, steps, o.long_context_workload, json["serving_long_context"]);
  md += "\n\n" + mix_section(catalog, focus, o, steps, json["serving_mix"]);
  for (auto& [section, key] : {std::pair{&plan, "plan"}, std::pair{&layouts, "plan_layouts"},
                               std::pair{&tiers, "plan_kv_tiers"}, std::pair{&capacity, "capacity"}}) {
    md += "\n\n" + section->md.get();
    json[key] = std::move(section->json);
  }
  md += validation_section(catalog, o.out_dir, json);

  md = report_head(catalog, json) + md;

  write_output(o.out_dir, "report.md", md);
  write_output(o.out_dir, "report.json", json.dump(2) + "\n");
  write_output(o.out_dir, "report.html", html_page(md, kStudyTitle, o.out_dir));
  return {(fs::path(o.out_dir) / "report.md").string(), (fs::path(o.out_dir) / "report.json").string(),
          (fs::path(o.out_dir) / "report.html").string()};
}

}  // namespace v41sim
