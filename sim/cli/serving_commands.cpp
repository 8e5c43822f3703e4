// v41sim run, plan and capacity: a deployment serving a workload over time,
// the cheapest variant of one that meets its SLA, and the most traffic one
// serves within it.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/cli/flags.h"
#include "sim/common/catalog.h"
#include "sim/costing/assumption_sensitivity.h"
#include "sim/costing/context_sweep.h"
#include "sim/costing/decode_frontier.h"
#include "sim/costing/deployment_plan.h"
#include "sim/costing/layout_refusal.h"
#include "sim/costing/load_capacity.h"
#include "sim/costing/served_run.h"
#include "sim/costing/shared_step_times.h"
#include "sim/hw/gpu_profile_loader.h"
#include "sim/report/context_view.h"
#include "sim/report/frontier_view.h"
#include "sim/report/load_capacity_view.h"
#include "sim/report/plan_view.h"
#include "sim/report/requests_csv.h"
#include "sim/report/run_trace.h"
#include "sim/report/run_view.h"
#include "sim/report/sensitivity_view.h"
#include "sim/report/steps_csv.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/workload_spec.h"

namespace v41sim::cli {

namespace {

// Seconds in (0, longest_run_s()], a warm-up of at least 0 before them.
void require_run_duration(const Flags& f) {
  const double longest_s = longest_run_s();
  if (!(f.duration_s > 0 && f.duration_s <= longest_s)) {
    throw InputError({"", 0, "--duration"},
                     fmt::format("expected seconds in (0, {:.0f}], got {}", longest_s, f.duration_s));
  }
  if (f.warm_up_s) require_warm_up(*f.warm_up_s, f.duration_s);
}

// The confirmation window: --confirm-seconds, 0 (none) or longer than
// --duration and within simulated time with the warm-up before it; none
// given, the default where it is longer than --duration (else none).
double confirm_seconds(const Flags& f, const ServeOptions& options, const WorkloadSpec& workload) {
  const InputLocation flag{"", 0, "--confirm-seconds"};
  const double confirm_s = f.confirm_s.value_or(kDefaultConfirmS);
  if (!(confirm_s >= 0 && confirm_s <= longest_run_s())) {
    throw InputError(flag,
                     fmt::format("expected seconds in [0, {:.0f}], got {}", longest_run_s(), confirm_s));
  }
  if (f.confirm_s && confirm_s > 0 && confirm_s <= options.duration_s) {
    throw InputError(flag,
                     fmt::format("expected 0 (none) or more seconds than --duration's {:g} (a confirmation "
                                 "serves a longer window), got {:g}",
                                 options.duration_s, confirm_s));
  }
  if (confirm_s > 0) require_warm_up(warm_up_of(options, workload), confirm_s);
  return confirm_s;
}

// What each serving command's runs take from the flags.
ServeOptions serve_options(const Flags& f) {
  ServeOptions options;
  options.duration_s = f.duration_s;
  options.warm_up_s = f.warm_up_s;
  options.seed = f.seed;
  options.seeds = f.seeds;
  return options;
}

// plan, capacity and sensitivity run for minutes: with --progress, or where
// stderr is a terminal, each run says so on stderr as it ends (from whichever
// thread ran it, a line at a time); stdout keeps the answer alone.
class ProgressLines {
 public:
  static std::shared_ptr<ProgressLines> wanted(const Flags& f) {
    if (!f.progress && isatty(fileno(stderr)) == 0) return nullptr;
    return std::make_shared<ProgressLines>();
  }
  // `text` after the seconds since the command began.
  void say(const std::string& text) {
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start_;
    const std::string line = fmt::format("[{:.1f} s] {}\n", elapsed.count(), text);
    const std::lock_guard<std::mutex> hold(lock_);
    std::fputs(line.c_str(), stderr);
  }

 private:
  std::mutex lock_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

void show_progress(const Flags& f, ServeOptions& options) {
  std::shared_ptr<ProgressLines> progress = ProgressLines::wanted(f);
  if (!progress) return;
  options.on_served = [progress](const DeploymentSpec& deployment, const WorkloadSpec& workload,
                                 const ServeOptions& run_options, const ServedRun& run) {
    const ServingResult& r = run.result;
    progress->say(fmt::format(
        "{}: {} over {:g} s: {:.1f}% within the SLA, TTFT p99 {:.0f} ms, TPOT p99 {:.1f} ms", deployment.name,
        load_phrase(workload), run_options.duration_s, 100 * run.within_sla(), r.ttft_ms.p99, r.tpot_ms.p99));
  };
}

// sensitivity's line per moved run: which figure went where, and what the run gave.
OnMoved<ServedRun> sensitivity_progress(const Flags& f, const std::string& data_dir) {
  std::shared_ptr<ProgressLines> progress = ProgressLines::wanted(f);
  if (!progress) return {};
  return [progress, data_dir](const SourcedNumber& figure, const SensitivitySide& side, std::size_t ended,
                              std::size_t runs) {
    const std::string moved =
        fmt::format("{} of {}: {} ({}:{}) {} -> {:g}", ended, runs, figure.field,
                    path_in_data_dir(figure.file, data_dir), figure.line, figure.text, side.value);
    if (!side.rejected.empty()) return progress->say(fmt::format("{}: refused: {}", moved, side.rejected));
    const ServedRun& run = side.outcome;
    const std::string usd =
        run.cost.known ? fmt::format("${:.3f}, ", run.spread(&SeedOutcome::usd_per_million_output).mean) : "";
    progress->say(
        fmt::format("{}: {}TPOT p99 {:.1f} ms", moved, usd, run.spread(&SeedOutcome::tpot_p99_ms).mean));
  };
}

// "a,b" -> {"a", "b"}; an empty name (",", "a,,b") is the user's error.
std::vector<std::string> comma_separated(const std::string& text, const char* flag) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (out.back().empty()) throw InputError({"", 0, flag}, "expected names separated by single commas");
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// --ttft-ms, --tpot-ms and --itl-ms, where given, replace the deployment's SLA limits.
void apply_sla_flags(const Flags& f, DeploymentSpec& d) {
  for (const auto& [flag, value, limit] : {std::tuple{"--ttft-ms", f.sla_ttft_ms, &d.sla.ttft_ms},
                                           std::tuple{"--tpot-ms", f.sla_tpot_ms, &d.sla.tpot_ms},
                                           std::tuple{"--itl-ms", f.sla_itl_ms, &d.sla.itl_ms}}) {
    if (!value) continue;
    if (!(*value > 0 && std::isfinite(*value)))
      throw InputError({"", 0, flag}, fmt::format("expected a positive latency, got {}", *value));
    *limit = *value;
  }
}

// The workload file, at the arrival rate --sessions-per-s asks for, if any
// (named in the workload's name, so every output says which load it ran).
WorkloadSpec load_workload(const Catalog& catalog, const Flags& f) {
  WorkloadSpec w = load_workload_file(catalog.resolve_workload(f.workload));
  if (f.concurrency) {
    const InputLocation flag{"", 0, "--concurrency"};
    const std::string was =
        fmt::format(" at {} sessions at a time (the file says {})", *f.concurrency, w.concurrency);
    w = at_concurrency(std::move(w), *f.concurrency, flag);
    w.name += was;
    w.concurrency_where = flag;
  }
  if (!f.sessions_per_s) return w;
  const double rate = *f.sessions_per_s;
  if (!(rate > 0 && std::isfinite(rate))) {
    throw InputError({"", 0, "--sessions-per-s"},
                     fmt::format("expected a finite positive arrival rate, got {}", rate));
  }
  const bool trace = w.arrival == WorkloadSpec::Arrival::kTrace;
  const std::string was =
      fmt::format(" at {} sessions/s ({} {:.3g})", rate,
                  trace ? "its times scaled from the trace's" : "the file says", w.sessions_per_s);
  const InputLocation flag{"", 0, "--sessions-per-s"};
  w = at_rate(std::move(w), rate, flag);
  w.name += was;
  return w;
}

}  // namespace

void run_serving(const Catalog& catalog, const Flags& f, std::ostream& out) {
  require_run_duration(f);
  const ModelAnalysis m = load_model_named(catalog, f.model);
  DeploymentSpec deployment = load_deployment_by_name(catalog, f.deployment);
  apply_sla_flags(f, deployment);
  const WorkloadSpec workload = load_workload(catalog, f);
  ServeOptions options = serve_options(f);
  if (!(f.trace_seconds > 0 && std::isfinite(f.trace_seconds))) {
    throw InputError({"", 0, "--trace-seconds"},
                     fmt::format("expected a positive number of seconds, got {}", f.trace_seconds));
  }
  // Past the run's end there is nothing more to trace.
  options.trace_seconds = f.trace.empty() ? 0.0 : std::min(f.trace_seconds, f.duration_s);
  options.log_requests = !f.requests_csv.empty();
  options.log_steps = !f.steps_csv.empty();
  // The files are opened before the run, which may last minutes (as capacity's chart).
  std::ofstream csv;
  if (options.log_requests) {
    csv.open(f.requests_csv);
    if (!csv) throw InputError({f.requests_csv, 0, "--requests"}, "cannot write the requests file");
  }
  std::ofstream steps_file;
  if (options.log_steps) {
    steps_file.open(f.steps_csv);
    if (!steps_file) throw InputError({f.steps_csv, 0, "--steps"}, "cannot write the steps file");
  }
  std::ofstream trace;
  if (!f.trace.empty()) {
    trace.open(f.trace);
    if (!trace) throw InputError({f.trace, 0, "--trace"}, "cannot write the trace file");
  }
  const ServedRun run = serve_deployment(catalog, m, deployment, workload, options);
  if (options.log_requests) csv << requests_csv(run.result.requests);
  if (options.log_steps) write_steps_csv(steps_file, run.result.steps);
  if (!f.trace.empty()) trace << run_trace(run.result, deployment).dump() << "\n";
  const RunReport report{m.spec.name, deployment, workload, f.seed, run};
  if (f.json) {
    out << run_json(report).dump(2) << "\n";
  } else {
    print_tables(out, run_tables(report));
  }
}

// The bases --deployment names (comma-separated), with the SLA flags applied.
std::vector<DeploymentSpec> load_bases(const Catalog& catalog, const Flags& f) {
  std::vector<DeploymentSpec> bases;
  for (const std::string& name : comma_separated(f.deployment, "--deployment"))
    bases.push_back(load_deployment_by_name(catalog, name));
  for (DeploymentSpec& base : bases) apply_sla_flags(f, base);
  return bases;
}

// Each value of a list flag through `parse` (which returns an optional), or
// an InputError naming the flag, what it expects and the value.
template <typename Parse>
auto parse_each(const std::vector<std::string>& texts, Parse parse, const char* flag, const char* expected) {
  std::vector<typename decltype(parse(std::string_view{}))::value_type> out;
  for (const std::string& text : texts) {
    const auto value = parse(text);
    if (!value) throw InputError({"", 0, flag}, fmt::format("expected {}, got '{}'", expected, text));
    out.push_back(*value);
  }
  return out;
}

// An SSD tier's size in TB, or "unbounded" (0 in the grid).
std::optional<double> parse_ssd_capacity(std::string_view text) {
  if (text == "unbounded") return 0.0;
  double tb = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), tb);
  if (error != std::errc() || end != text.data() + text.size() || !(tb > 0) || !std::isfinite(tb)) {
    return std::nullopt;
  }
  return tb;
}

// The replica counts a grid tries: --redundant-experts, each within the
// routed experts (below 0: plan_variants says so), or else the bases' own;
// sorted, each once.
std::vector<int64_t> replica_counts(const Flags& f, const ModelSpec& model, int64_t routed,
                                    const std::vector<DeploymentSpec>& bases) {
  for (const int64_t r : f.plan_redundant_experts) {
    if (r > routed) {
      throw InputError(
          {"", 0, "--redundant-experts"},
          fmt::format("expected 0..{} redundant replicas (at most as many as {}'s routed experts), "
                      "got {}",
                      routed, model.name, r));
    }
  }
  std::vector<int64_t> replicas = f.plan_redundant_experts;
  if (replicas.empty()) {
    for (const DeploymentSpec& base : bases) {
      for (const PoolSpec* pool : {&base.prefill, &base.decode}) replicas.push_back(pool->redundant_experts);
    }
  }
  std::sort(replicas.begin(), replicas.end());
  replicas.erase(std::unique(replicas.begin(), replicas.end()), replicas.end());
  return replicas;
}

// An EP size that does not divide the routed experts runs with as many
// replicas in all (set_ep in deployment_plan.cpp) where they deal the slots
// evenly; one that no count tried makes possible is the user's error (<= 0:
// plan_variants says so).
void require_eps_deal(const Flags& f, const std::vector<int64_t>& eps, const ModelSpec& model, int64_t routed,
                      const std::vector<int64_t>& replicas) {
  for (const int64_t ep : eps) {
    if (ep <= 0 || routed == 0 || routed % ep == 0) continue;
    const bool deals = std::any_of(replicas.begin(), replicas.end(),
                                   [&](int64_t r) { return r >= 0 && (routed + r) % ep == 0; });
    if (deals) continue;
    const int64_t needed = replicas_to_deal(routed, ep, 0);
    throw InputError(
        {"", 0, "--ep"},
        fmt::format("EP size {} does not divide the {} routed experts of {}, nor with {} redundant "
                    "replicas ({}) added: {} {} would make {} slots (--redundant-experts {})",
                    ep, routed, model.name, f.plan_redundant_experts.empty() ? "the bases'" : "the",
                    fmt::join(replicas, ", "), needed, needed == 1 ? "replica" : "replicas", routed + needed,
                    needed));
  }
}

// An EP size as --ep gives it: an integer (plan_variants refuses one below 1).
std::optional<int64_t> parse_ep(std::string_view text) {
  int64_t ep = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), ep);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return ep;
}

// Each GPU the variants may run on (the grid's, else the bases'), with its
// NVLink domain's size, where --ep says domain.
std::map<std::string, int64_t> domain_eps(const Catalog& catalog, const Flags& f,
                                          const std::vector<DeploymentSpec>& bases) {
  std::map<std::string, int64_t> out;
  if (std::find(f.plan_eps.begin(), f.plan_eps.end(), "domain") == f.plan_eps.end()) return out;
  for (const std::string& gpu : f.plan_decode_gpus.empty() ? f.plan_gpus : f.plan_decode_gpus)
    out.emplace(gpu, load_gpu_profile_file(catalog.resolve_gpu(gpu)).nvlink_domain());
  for (const DeploymentSpec& base : bases) {
    const std::string& gpu = base.decode.gpu;
    out.emplace(gpu, load_gpu_profile_file(catalog.resolve_gpu(gpu, base.decode.gpu_at)).nvlink_domain());
  }
  return out;
}

// What plan, capacity, context and frontier vary, from their shared flags
// (EP sizes and replicas checked against the model and the bases: a grid no
// variant of which can run is the user's error).
PlanGrid grid_from_flags(const Catalog& catalog, const Flags& f, const ModelSpec& model,
                         const std::vector<DeploymentSpec>& bases) {
  const int64_t routed = model.moe ? model.moe->routed_experts : 0;
  std::vector<std::string> sizes;
  std::copy_if(f.plan_eps.begin(), f.plan_eps.end(), std::back_inserter(sizes),
               [](const std::string& ep) { return ep != "domain"; });
  const auto eps = parse_each(sizes, parse_ep, "--ep", "EP sizes (positive integers) or domain");
  require_eps_deal(f, eps, model, routed, replica_counts(f, model, routed, bases));
  const auto aggregated_steps = parse_each(f.plan_aggregated_steps, parse_aggregated_steps,
                                           "--aggregated-steps", "prefill_first or mixed");
  const auto routings =
      parse_each(f.plan_routings, parse_routing, "--routing", "least_load, least_requests or round_robin");
  const auto attention = parse_each(
      f.plan_attention, parse_attention_layout, "--attention",
      "dp (data-parallel), tp (one tensor-parallel rank an instance) or GPUs a rank (a positive integer)");
  const auto ssd_capacities_tb = parse_each(f.plan_ssd_capacities_tb, parse_ssd_capacity, "--ssd-capacity-tb",
                                            "unbounded or a size in TB above 0");
  return {.gpus = f.plan_gpus,
          .prefill_gpus = f.plan_prefill_gpus,
          .decode_gpus = f.plan_decode_gpus,
          .eps = eps,
          .attention_layouts = attention,
          .prefill_instances = f.plan_prefill_instances,
          .decode_instances = f.plan_decode_instances,
          .keep_gpus = f.plan_keep_gpus,
          .kv_retentions_h = f.plan_kv_retentions_h,
          .swa_pool_fractions = f.plan_swa_pool_fractions,
          .ssd_capacities_tb = ssd_capacities_tb,
          .aggregated_steps = aggregated_steps,
          .routings = routings,
          .max_tokens_per_step = f.plan_max_tokens_per_step,
          .max_batch_per_gpu = f.plan_max_batch_per_gpu,
          .prefill_delay_steps = f.plan_prefill_delay_steps,
          .redundant_experts = f.plan_redundant_experts,
          .routed_experts = routed,
          .domain_eps = domain_eps(catalog, f, bases)};
}

void run_plan(const Catalog& catalog, const Flags& f, std::ostream& out) {
  require_run_duration(f);
  const ModelAnalysis m = load_model_named(catalog, f.model);
  const std::vector<DeploymentSpec> bases = load_bases(catalog, f);
  const WorkloadSpec workload = load_workload(catalog, f);
  const PlanGrid grid = grid_from_flags(catalog, f, m.spec, bases);
  ServeOptions options = serve_options(f);
  const double confirm_s = confirm_seconds(f, options, workload);
  show_progress(f, options);
  const std::vector<PlanRow> rows =
      run_plan(catalog, m, bases, grid, workload, options, f.min_within_sla, confirm_s);
  const PlanReport report{m.spec.name, bases, workload, options, f.min_within_sla, rows};
  if (f.json) {
    out << plan_json(report).dump(2) << "\n";
  } else {
    out << plan_table(report).to_text();
  }
}

namespace {

// The layouts context and frontier compare: the deployment on --hw at --ep
// with --redundant-experts; without the last two, each GPU at the
// deployment's EP size and, where its NVLink domain is larger, as one EP
// group over the domain (frontier_layouts).
std::vector<DeploymentSpec> layouts_on_gpus(const Catalog& catalog, const Flags& f, const ModelAnalysis& m,
                                            const DeploymentSpec& base) {
  const PlanGrid grid = grid_from_flags(catalog, f, m.spec, {base});
  if (grid.eps.empty() && grid.redundant_experts.empty() && grid.domain_eps.empty())
    return frontier_layouts(catalog, m.spec, base, grid.gpus);
  return plan_variants(base, grid);  // context and frontier take no other grid flags
}

// Of layouts_on_gpus, those the model can run; each other with why it cannot
// (layout_refusals), for a table or a JSON list of its own. Throws where none can run.
struct SplitLayouts {
  std::vector<DeploymentSpec> runnable;
  std::vector<std::pair<std::string, std::string>> refused;  // name, reason
};

SplitLayouts split_layouts(const Catalog& catalog, const Flags& f, const ModelAnalysis& m,
                           const DeploymentSpec& base) {
  const std::vector<DeploymentSpec> layouts = layouts_on_gpus(catalog, f, m, base);
  const std::vector<std::optional<std::string>> refusals = layout_refusals(catalog, m, layouts);
  SplitLayouts split;
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    if (refusals[i]) {
      split.refused.emplace_back(layouts[i].name, *refusals[i]);
    } else {
      split.runnable.push_back(layouts[i]);
    }
  }
  return split;
}

Table refused_layouts_table(const SplitLayouts& split) {
  Table t("Layouts the model cannot run", {"deployment", "why"});
  for (const auto& [name, why] : split.refused) t.add_row({name, why});
  return t;
}

nlohmann::json refused_layouts_json(const SplitLayouts& split) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, why] : split.refused) out.push_back({{"deployment", name}, {"not_run", why}});
  return out;
}

}  // namespace

// --contexts as given (sweep_contexts checks them, naming the flag), else
// those the model holds (swept_contexts).
void run_context(const Catalog& catalog, const Flags& f, std::ostream& out) {
  const ModelAnalysis m = load_model_named(catalog, f.model);
  const DeploymentSpec base = load_deployment_by_name(catalog, f.context_deployment);
  const ContextSweepOptions options{f.contexts.empty() ? swept_contexts(m.spec) : f.contexts, f.output_tokens,
                                    f.sla_tpot_ms.value_or(base.sla.tpot_ms),
                                    f.max_batch_per_gpu.value_or(base.decode.max_batch_per_gpu)};
  nlohmann::json sweeps = nlohmann::json::array();
  std::vector<Table> tables;
  const SplitLayouts layouts = split_layouts(catalog, f, m, base);
  for (const DeploymentSpec& d : layouts.runnable) {
    const ContextSweep sweep = sweep_contexts(catalog, m, d, options);
    if (f.json) {
      sweeps.push_back(context_json(m.spec.name, sweep));
    } else {
      tables.push_back(context_table(m.spec.name, sweep));
    }
  }
  if (!layouts.refused.empty()) tables.push_back(refused_layouts_table(layouts));
  if (f.json) {
    out << nlohmann::json{{"sweeps", sweeps}, {"not_run", refused_layouts_json(layouts)}}.dump(2) << "\n";
  } else {
    print_tables(out, tables);
  }
}

void run_frontier(const Catalog& catalog, const Flags& f, std::ostream& out) {
  const ModelAnalysis m = load_model_named(catalog, f.model);
  const DeploymentSpec base = load_deployment_by_name(catalog, f.context_deployment);
  std::vector<DecodeFrontier> frontiers;
  const SplitLayouts layouts = split_layouts(catalog, f, m, base);
  for (const DeploymentSpec& d : layouts.runnable)
    frontiers.push_back(
        decode_frontier(catalog, m, d, f.frontier_context.value_or(frontier_context(m.spec))));
  mark_pareto(frontiers);
  if (!f.trace.empty()) {
    std::ofstream svg(f.trace);
    if (!svg) throw InputError({f.trace, 0, "--svg"}, "cannot write the chart file");
    svg << frontier_svg(m.spec.name, frontiers);
  }
  if (f.json) {
    nlohmann::json json = frontier_json(m.spec.name, frontiers);
    json["not_run"] = refused_layouts_json(layouts);
    out << json.dump(2) << "\n";
  } else {
    out << frontier_table(m.spec.name, frontiers).to_text();
    if (!layouts.refused.empty()) out << "\n" << refused_layouts_table(layouts).to_text();
  }
}

void run_capacity(const Catalog& catalog, const Flags& f, std::ostream& out) {
  require_run_duration(f);
  const ModelAnalysis m = load_model_named(catalog, f.model);
  const std::vector<DeploymentSpec> bases = load_bases(catalog, f);
  const std::vector<DeploymentSpec> variants =
      plan_variants(bases, grid_from_flags(catalog, f, m.spec, bases));
  const WorkloadSpec workload = load_workload(catalog, f);
  LoadOptions options;
  options.serve = serve_options(f);
  options.min_within_sla = f.min_within_sla;
  options.rate_factors = f.rate_factors;
  options.precision = f.precision;
  options.confirm_s = confirm_seconds(f, options.serve, workload);
  show_progress(f, options.serve);
  // The chart's file is opened before the search, which may run for minutes.
  std::ofstream svg;
  if (!f.trace.empty()) {
    svg.open(f.trace);
    if (!svg) throw InputError({f.trace, 0, "--svg"}, "cannot write the chart file");
  }
  SharedStepTimes steps(catalog, m);  // variants that time steps alike share them
  const std::vector<LoadCapacity> capacities =
      find_load_capacities(catalog, m, variants, workload, options, &steps);
  const std::vector<CapacityReport> reports =
      capacity_reports(m.spec.name, variants, workload, options, capacities);
  if (svg.is_open()) svg << capacity_svg(reports);
  if (f.json) {
    nlohmann::json json{{"variants", nlohmann::json::array()}};
    for (const CapacityReport& r : reports) json["variants"].push_back(capacity_json(r));
    out << json.dump(2) << "\n";
    return;
  }
  std::vector<Table> tables;
  for (const CapacityReport& r : reports) {
    if (r.capacity.not_run.empty()) tables.push_back(capacity_table(r));
  }
  if (reports.size() > 1) tables.push_back(capacity_summary_table(reports));
  print_tables(out, tables);
}

namespace {

// The files a served run of the deployment reads: model, deployment, workload,
// and each pool's kernel-model files (GpuCostModel::files_read).
std::vector<std::string> files_read_by_run(const Catalog& catalog, const Flags& f, const DeploymentSpec& d,
                                           const WorkloadSpec& w) {
  std::vector<std::string> files{catalog.resolve_model(f.model), catalog.resolve_deployment(f.deployment),
                                 w.file};
  for (const WorkloadMixClass& c : w.mix) files.push_back(c.sessions.file);  // each class's sessions
  const DeploymentCostModels gpus(catalog, d);
  for (const GpuCostModel* pool : {&gpus.prefill, &gpus.decode}) {
    for (std::string& file : pool->files_read(catalog.data_dir())) files.push_back(std::move(file));
  }
  return files;
}

}  // namespace

void run_sensitivity(const Catalog& catalog, const Flags& f, std::ostream& out) {
  require_run_duration(f);
  const ModelAnalysis m = load_model_named(catalog, f.model);
  const DeploymentSpec deployment = load_deployment_by_name(catalog, f.deployment);
  const WorkloadSpec workload = load_workload(catalog, f);
  ServeOptions options = serve_options(f);
  options.drain = true;
  // Everything is loaded again inside each run, so a moved value reaches whatever reads it.
  const auto serve = [&] {
    return serve_deployment(catalog, load_model_named(catalog, f.model),
                            load_deployment_by_name(catalog, f.deployment), load_workload(catalog, f),
                            options);
  };
  const Sensitivity sensitivity =
      assumption_sensitivity(files_read_by_run(catalog, f, deployment, workload), serve, f.swing, f.kinds,
                             sensitivity_progress(f, catalog.data_dir()));
  const SensitivityReport report{m.spec.name, deployment, workload, options, catalog.data_dir(), sensitivity};
  if (f.json) {
    out << sensitivity_json(report).dump(2) << "\n";
  } else {
    out << sensitivity_table(report).to_text();
  }
}

}  // namespace v41sim::cli
