#include "sim/cli/commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>

#include "sim/cli/flags.h"
#include "sim/costing/context_sweep.h"
#include "sim/costing/decode_frontier.h"
#include "sim/costing/served_run.h"
#include "sim/model/model_loader.h"

namespace v41sim {
namespace cli {

ModelAnalysis load_model_named(const Catalog& catalog, const std::string& name) {
  return analyze_model(load_model_by_name(catalog, name));
}

void print_tables(std::ostream& out, const std::vector<Table>& tables) {
  for (const Table& t : tables) out << t.to_text() << "\n";
}

}  // namespace cli

using cli::Flags;
using cli::run_calibrate;
using cli::run_capacity;
using cli::run_claims;
using cli::run_compare_layers;
using cli::run_context;
using cli::run_fit;
using cli::run_frontier;
using cli::run_kv;
using cli::run_params;
using cli::run_plan;
using cli::run_report;
using cli::run_sensitivity;
using cli::run_serving;
using cli::run_step;
using cli::run_step_log;
using cli::run_targets;
using cli::run_validate;

namespace {

using CommandFn = void (*)(const Catalog&, const Flags&, std::ostream&);

// What registering a subcommand takes: the app, the one Flags every command
// fills (only the chosen command's are read), and where the chosen command's
// action goes. The options that several commands share are added here, once.
class CommandRegistrar {
 public:
  CommandRegistrar(CLI::App& app, const GlobalOptions& global, std::function<void()>& run, std::ostream& out)
      : app_(app), global_(global), run_(run), out_(out), flags_(std::make_shared<Flags>()) {}

  CLI::App* add(const char* name, const std::string& description) const {
    return app_.add_subcommand(name, description);
  }
  Flags& flags() const { return *flags_; }
  const std::shared_ptr<Flags>& shared_flags() const { return flags_; }

  // Last, after the command's own options: --json, and the action that runs it.
  void bind(CLI::App* cmd, CommandFn fn) const {
    cmd->add_flag("--json", flags_->json, "print one JSON object instead of tables");
    cmd->callback([&global = global_, &run = run_, &out = out_, flags = flags_, fn] {
      run = [&global, &out, flags, fn] { fn(Catalog(global.data_dir), *flags, out); };
    });
  }

  void add_model(CLI::App* cmd) const {
    cmd->add_option("--model", flags_->model, "model name (file stem or name:) or path")
        ->capture_default_str();
  }
  void add_session_context(CLI::App* cmd) const {
    cmd->add_option("--context", flags_->session_context,
                    "tokens per session (default: the model's max_context)");
  }
  void add_reserve(CLI::App* cmd) const {
    cmd->add_option("--reserve-fraction", flags_->reserve_fraction,
                    "fraction of HBM held for activations and workspace (default 0.10, an assumption)");
  }
  // A step's shape and the deployment it runs on: step and compare-layers.
  void add_step_flags(CLI::App* cmd) const;
  // The deployment a step runs on (GPU, EP, mHC form, launch, overlap,
  // projections): step, compare-layers and step-log.
  void add_step_deployment_flags(CLI::App* cmd) const;
  // EPLB's replicas and how the routing falls: step and step-log.
  void add_expert_placement_flags(CLI::App* cmd) const;
  // A deployment serving a workload: what run, plan, capacity and sensitivity take.
  void add_serving_flags(CLI::App* cmd, const char* deployment, const char* duration, const char* seed) const;
  // plan, capacity and sensitivity serve runs for minutes: each says so as it ends.
  void add_progress_flag(CLI::App* cmd, const char* line) const {
    cmd->add_flag(
        "--progress", flags_->progress,
        std::string("a line to stderr as each run ends (") + line +
            "); shown without this flag where stderr is a terminal; the output is the same either way");
  }
  // EPLB replica counts to try (plan, capacity, context and frontier).
  void add_replicas_flag(CLI::App* cmd) const {
    cmd->add_option(
           "--redundant-experts", flags_->plan_redundant_experts,
           "EPLB replicas of the hottest experts per EP group, both pools, to try (0: none); an EP size "
           "need only divide routed + redundant; comma-separated")
        ->delimiter(',');
  }
  // --ttft-ms, --tpot-ms and --itl-ms: limits other than the deployment's
  // (`whose`), each replacing one; a mix's class with its own keeps it.
  void add_sla_flags(CLI::App* cmd, const std::string& whose) const;
  // plan and capacity: the SLA, the share of requests that must meet it, and
  // what --confirm-seconds does (`confirm_what`) and which values it takes.
  void add_verdict_flags(CLI::App* cmd, const std::string& whose, const std::string& confirm_what) const;
  // What plan varies (each a comma-separated list; empty keeps the base's),
  // and capacity asks about variant by variant.
  void add_grid_flags(CLI::App* cmd) const;
  // One deployment (h200_agg_8 unless named) on the GPUs --hw lists: what
  // context and frontier both take. Without --ep and --redundant-experts,
  // each GPU also as one EP group over its NVLink domain where that is
  // larger than the deployment's EP.
  void add_deployment_on_gpus(CLI::App* cmd) const;

 private:
  CLI::App& app_;
  const GlobalOptions& global_;
  std::function<void()>& run_;
  std::ostream& out_;
  std::shared_ptr<Flags> flags_;
};

void CommandRegistrar::add_step_flags(CLI::App* cmd) const {
  Flags& f = *flags_;
  cmd->add_option("--phase", f.phase, "prefill or decode")->capture_default_str();
  cmd->add_option("--batch", f.batch, "sequences in the step")->capture_default_str();
  cmd->add_option("--context", f.context, "prefill: prompt tokens each; decode: history tokens each")
      ->required();
  cmd->add_flag("--no-draft", f.no_draft,
                "decode: no speculative decoding (no draft stages, no drafts verified)");
  add_step_deployment_flags(cmd);
}

void CommandRegistrar::add_step_deployment_flags(CLI::App* cmd) const {
  Flags& f = *flags_;
  cmd->add_option("--hw", f.hw, "GPU profile (file stem or name:) or path")->capture_default_str();
  cmd->add_option("--ep", f.ep, "expert-parallel size")->capture_default_str();
  cmd->add_option("--mhc", f.mhc,
                  "mHC form: model (as the model file says), fused (single pass) or three-kernel")
      ->capture_default_str();
  cmd->add_flag("--no-cuda-graph", f.no_cuda_graph,
                "decode: launch kernels instead of replaying a CUDA graph");
  cmd->add_flag("--overlap", f.overlap, "overlap EP all-to-all with compute (two micro-batches)");
  cmd->add_flag("--separate-projections", f.separate_projections,
                "run each projection of one input as its own GEMM (default: one GEMM, weights concatenated)");
  cmd->add_flag("--index-keys-per-query", f.index_keys_per_query,
                "decode: each query reads its index keys, a sequence's drafts apart from its token, as an "
                "engine that splits them into sequences of one (default: a sequence's queries read them "
                "once between them)");
  cmd->add_flag(
      "--reindex-scores-every-position", f.reindex_scores_every_position,
      "a Reindex layer's indexer scores every visible position and masks those outside its candidate "
      "pool, as an engine with no sparse logits kernel does (default: the pool alone)");
  cmd->add_flag("--experts-bf16", f.experts_bf16,
                "the routed experts multiply BF16 activations on BF16 tensor cores, their weights widened to "
                "BF16 (W4A16, as Marlin's MoE kernels: SGLang's and vLLM's path for V4's FP4 experts on "
                "Hopper; default: FP8 activations on FP8 tensor cores, W4A8, as DeepGEMM's kernels)");
}

void CommandRegistrar::add_expert_placement_flags(CLI::App* cmd) const {
  Flags& f = *flags_;
  cmd->add_option(
         "--redundant-experts", f.redundant_experts,
         "replicas of the hottest routed experts over the EP group (EPLB): each rank holds (routed + "
         "redundant) / EP, so sizes that do not divide the experts become possible")
      ->capture_default_str();
  cmd->add_option("--routing-skew", f.routing_skew,
                  "Zipf exponent of expert popularity, placed greedily with the replicas; the busiest rank "
                  "sets the step (default: every expert as popular)");
  cmd->add_flag("--balanced-routing", f.balanced_routing,
                "every EP rank receives exactly its share of the routed tokens, as DeepSeek's published "
                "profiles simulate it (default: each step's routing falls by chance, and the busiest rank "
                "sets the step)");
}

void CommandRegistrar::add_serving_flags(CLI::App* cmd, const char* deployment, const char* duration,
                                         const char* seed) const {
  Flags& f = *flags_;
  add_model(cmd);
  cmd->add_option("--deployment", f.deployment, deployment)->capture_default_str();
  cmd->add_option("--workload", f.workload, "workload (workloads/) name or path")->capture_default_str();
  cmd->add_option(
      "--sessions-per-s", f.sessions_per_s,
      "arrival rate of sessions, replacing the workload's (a trace's row times are scaled to it)");
  cmd->add_option("--concurrency", f.concurrency,
                  "sessions in flight, replacing a closed-loop workload's (arrival process closed_loop: "
                  "each session that ends is followed at once by a new one)");
  cmd->add_option("--duration", f.duration_s, duration)->capture_default_str();
  cmd->add_option(
      "--warm-up", f.warm_up_s,
      fmt::format("simulated seconds of arrivals served before the measured window, to build the "
                  "deployment up from empty, not counted (default: {:g} for drawn sessions, 0 for "
                  "a trace)",
                  kDefaultWarmUpS));
  // An unsigned flag would take "-1" as 2^64 - 1: a negative seed is refused, not wrapped.
  const CLI::Validator not_negative(
      [](std::string& text) {
        return text.starts_with('-') ? "expected a whole number, 0 or more, got " + text : std::string();
      },
      "0 OR MORE");
  cmd->add_option("--seed", f.seed, seed)->check(not_negative)->capture_default_str();
  cmd->add_option("--seeds", f.seeds,
                  "runs with seeds seed, seed + 1, ...: figures as their mean (least-most), SLA verdicts "
                  "on their requests pooled")
      ->capture_default_str();
}

void CommandRegistrar::add_sla_flags(CLI::App* cmd, const std::string& whose) const {
  const std::string keeps = "; a mix's class with its own keeps it)";
  cmd->add_option("--ttft-ms", flags_->sla_ttft_ms, "TTFT limit of the SLA (default: " + whose + keeps);
  cmd->add_option("--tpot-ms", flags_->sla_tpot_ms, "TPOT limit of the SLA (default: " + whose + keeps);
  cmd->add_option("--itl-ms", flags_->sla_itl_ms,
                  "limit on each request's longest gap between streamed chunks, its worst stall (default: " +
                      whose + ", if it sets one" + keeps);
}

void CommandRegistrar::add_verdict_flags(CLI::App* cmd, const std::string& whose,
                                         const std::string& confirm_what) const {
  add_sla_flags(cmd, whose);
  cmd->add_option("--min-within-sla", flags_->min_within_sla,
                  "share of the arrived requests that must finish within the SLA")
      ->capture_default_str();
  cmd->add_option(
      "--confirm-seconds", flags_->confirm_s,
      fmt::format("{} (longer than --duration, or 0: none; default {:g} where longer than --duration)",
                  confirm_what, kDefaultConfirmS));
}

void CommandRegistrar::add_grid_flags(CLI::App* cmd) const {
  Flags& f = *flags_;
  const auto add_list = [cmd](const char* flag, auto& values, const std::string& help) {
    cmd->add_option(flag, values, help + ", comma-separated")->delimiter(',');
  };
  add_list("--hw", f.plan_gpus, "GPU profiles to try for both pools (default: the base's)");
  add_list("--prefill-hw", f.plan_prefill_gpus,
           "GPU profiles to try for the prefill pool only (disaggregated)");
  add_list("--decode-hw", f.plan_decode_gpus, "GPU profiles to try for the decode pool only (disaggregated)");
  add_list("--ep", f.plan_eps,
           "EP sizes to try (= GPUs per instance), or domain: each GPU also as one EP group over its NVLink "
           "domain, with the fewest replicas that deal the experts over it");
  add_list("--prefill-instances", f.plan_prefill_instances,
           "prefill instance counts to try (disaggregated deployments)");
  add_list("--decode-instances", f.plan_decode_instances, "decode instance counts to try");
  cmd->add_flag(
      "--keep-gpus", f.plan_keep_gpus,
      "each pool keeps the base's GPUs at every EP size: its instances are its GPUs over the EP size "
      "(instead of the base's instance count)");
  add_list("--kv-retention-h", f.plan_kv_retentions_h,
           "hours the SSD tier keeps a session's global KV, to try (0: no persistent tier)");
  add_list("--swa-pool-fraction", f.plan_swa_pool_fractions,
           "shares of each node's DRAM that park window state, to try (0: none)");
  add_list("--ssd-capacity-tb", f.plan_ssd_capacities_tb,
           "sizes of the SSD tier in TB, to try (least recently stored out first when full), or unbounded");
  add_list("--aggregated-steps", f.plan_aggregated_steps,
           "how aggregated deployments serve prompts, to try: prefill_first (steps of their own) or mixed "
           "(chunks inside decode steps)");
  add_list("--attention", f.plan_attention,
           "attention layouts to try, both pools: dp (data-parallel: a rank a GPU), tp (tensor-parallel: a "
           "rank an instance, its heads split over the EP group's GPUs) or the GPUs a rank spans (ranks "
           "inside the EP group take slices of their tokens to the experts)");
  add_list("--routing", f.plan_routings,
           "where prompts go among instances and ranks, to try: least_load, least_requests or round_robin");
  add_list("--max-tokens-per-step", f.plan_max_tokens_per_step,
           "prompt tokens a rank runs in one step (the prefill chunk; aggregated and mixed, the decode "
           "step's budget), to try");
  add_list("--max-batch-per-gpu", f.plan_max_batch_per_gpu, "sequences a decode rank holds, to try");
  add_list("--prefill-delay-steps", f.plan_prefill_delay_steps,
           "aggregated, prompts first: decode steps a rank's prompts may wait in a row for the other ranks' "
           "(SGLang's prefill delayer; 0: none), to try");
  add_replicas_flag(cmd);
}

void CommandRegistrar::add_deployment_on_gpus(CLI::App* cmd) const {
  Flags& f = *flags_;
  add_model(cmd);
  cmd->add_option("--deployment", f.context_deployment, "deployment (workloads/deployments/) name or path")
      ->capture_default_str();
  cmd->add_option("--hw", f.plan_gpus,
                  "GPU profiles for both pools, comma-separated (default: the deployment's; each also as one "
                  "EP group over its NVLink domain where that is larger, unless --ep or --redundant-experts "
                  "is given)")
      ->delimiter(',');
  cmd->add_option("--ep", f.plan_eps,
                  "EP sizes, or domain (one EP group over each GPU's NVLink domain), comma-separated "
                  "(default: the deployment's)")
      ->delimiter(',');
  add_replicas_flag(cmd);
}

// kv, params and fit: what the model stores and what fits where.
void register_memory_commands(const CommandRegistrar& r) {
  Flags& f = r.flags();
  CLI::App* kv = r.add("kv", "KV cache bytes per layer and per token");
  r.add_model(kv);
  r.add_session_context(kv);
  r.bind(kv, run_kv);

  CLI::App* params = r.add("params", "total and active parameters, weight bytes");
  r.add_model(params);
  r.bind(params, run_params);

  CLI::App* fit = r.add("fit", "per-GPU memory: weights, reserve, KV, sessions");
  r.add_model(fit);
  r.add_session_context(fit);
  r.add_reserve(fit);
  fit->add_option("--hw", f.hw, "GPU profile (file stem or name:) or path")->capture_default_str();
  fit->add_option("--gpus", f.gpus, "number of GPUs")->capture_default_str();
  fit->add_option("--ep", f.ep, "expert-parallel size")->capture_default_str();
  fit->add_option("--redundant-experts", f.redundant_experts,
                  "replicas of the hottest routed experts over the EP group (EPLB); the EP size must divide "
                  "routed + redundant")
      ->capture_default_str();
  fit->add_option("--weights-dtype", f.weights_dtype, "routed-expert weights: released, fp8 or mxfp4")
      ->capture_default_str();
  fit->add_option("--dense-placement", f.dense_placement,
                  "non-expert weights: replicated (DP attention) or sharded over all GPUs")
      ->capture_default_str();
  fit->add_option("--attention-tp", f.attention_tp,
                  "replicated placement: GPUs one attention rank spans (tensor-parallel attention: each "
                  "holds its share of the per-head projections, shared experts and head, and the rank's "
                  "whole KV; default 1, data-parallel attention)")
      ->capture_default_str();
  r.bind(fit, run_fit);
}

// step and compare-layers: one forward step's kernels.
void register_step_commands(const CommandRegistrar& r) {
  Flags& f = r.flags();
  CLI::App* step = r.add("step", "one forward step: kernels, times, bounds, trace");
  r.add_model(step);
  r.add_step_flags(step);
  step->add_option(
      "--drafts", f.drafts,
      "decode: draft tokens each sequence's step verifies (default: the count that gives the most "
      "expected tokens per second, as serving runs choose it)");
  step->add_option("--prompt-chunks", f.prompt_chunks,
                   "decode: prompts whose chunks ride on the step (an aggregated engine mixing them in)");
  step->add_option("--chunk-tokens", f.chunk_tokens,
                   "new tokens of each chunk: with --prompt-chunks, or in a prefill step (each of --batch "
                   "prompts computes its last this many tokens; the rest is its cached prefix)");
  step->add_option(
      "--chunk-context", f.chunk_context,
      "with --prompt-chunks: tokens of each prompt up to the chunk's end (default: --chunk-tokens)");
  step->add_option(
      "--chunks-continuing", f.chunks_continuing,
      "of the chunks (--prompt-chunks, or a prefill step's --batch), how many are not their "
      "prompt's last (default 0; under CED their decoder layers and sampling wait for the last)");
  r.add_expert_placement_flags(step);
  step->add_option(
      "--prompt-ranks", f.prompt_ranks,
      "prefill: how many of the EP group's ranks run this step's prompts, the others none (their "
      "experts then take that share of the rows; default: every rank, as a busy engine)");
  step->add_flag("--beside-prompts", f.beside_prompts,
                 "decode: the step a rank runs while another rank of its EP group runs a prompt step "
                 "(aggregated, prompts in steps of their own): kernels launched, EP transfers in normal "
                 "mode, as the prompt step's");
  step->add_option("--group-batch", f.group_batch,
                   "decode: the sequences the EP group's ranks decode on average, 1 to --batch (the others "
                   "fewer than this rank; its experts then take the group's tokens; default: every rank "
                   "runs this batch)");
  step->add_option("--attention-tp", f.attention_tp,
                   "GPUs one attention rank spans (tensor-parallel attention: each runs the rank's tokens "
                   "with its share of the heads, the rank its own EP group, --ep equal; default 1, "
                   "data-parallel attention)")
      ->capture_default_str();
  step->add_flag(
      "--experts-by-columns", f.experts_by_columns,
      "with --attention-tp: the routed experts split by columns over the rank's GPUs (each a slice "
      "of every expert, as SGLang's --tp without --ep) instead of whole experts a GPU");
  step->add_option("--trace", f.trace, "write a Chrome/Perfetto trace of the step to this file");
  r.bind(step, run_step);

  CLI::App* compare = r.add("compare-layers", "the same step across model generations, by layer mode");
  r.add_step_flags(compare);
  compare->add_option("--models", f.models, "comma-separated models")->capture_default_str();
  r.bind(compare, run_compare_layers);

  CLI::App* log =
      r.add("step-log", "an engine's logged steps, each timed by the kernel model, against its times");
  r.add_model(log);
  log->add_option(
         "--log", f.step_log,
         "CSV of steps: phase (prefill, decode or mixed),batch,context,new_tokens,drafts, optionally "
         "continuing, chunk_prompts,chunk_tokens,chunk_context (a mixed row's prompt chunks) and "
         "measured_us (one row per step, per GPU; see the README)")
      ->required();
  r.add_step_deployment_flags(log);
  r.add_expert_placement_flags(log);
  r.bind(log, run_step_log);
}

constexpr const char* kServedLine = "its rate, window, share within the SLA and p99s";

// run, plan, capacity and sensitivity: deployments serving a workload over time.
void register_serving_commands(const CommandRegistrar& r) {
  Flags& f = r.flags();
  CLI::App* serve = r.add("run", "simulate a deployment serving a workload over time");
  r.add_serving_flags(serve, "deployment (workloads/deployments/) name or path",
                      "simulated seconds measured, after the warm-up", "random seed");
  serve->add_option("--trace", f.trace, "write a Chrome/Perfetto trace of the run to this file");
  serve
      ->add_option("--trace-seconds", f.trace_seconds,
                   "trace the first this many simulated seconds of the measured window")
      ->capture_default_str();
  serve->add_option("--requests", f.requests_csv,
                    "write every request of the run (of its first seed) to this CSV file: tokens, where it "
                    "went, each stage's time");
  serve->add_option("--steps", f.steps_csv,
                    "write every step of the run's measured window (of its first seed) to this CSV file: "
                    "when, which engine, what it carried, how long it took");
  r.add_sla_flags(serve, "the deployment's");
  r.bind(serve, run_serving);

  CLI::App* plan =
      r.add("plan",
            "the cheapest variant of one or more deployments (GPU, EP size, instances) that serves "
            "a workload within their SLA");
  r.add_serving_flags(plan,
                      "base deployments (workloads/deployments/) names or paths, comma-separated (e.g. an "
                      "aggregated and a disaggregated layout, ranked together)",
                      "simulated seconds of arrivals measured after the warm-up (then each variant drains)",
                      "random seed (the same arrivals for every variant)");
  r.add_grid_flags(plan);
  r.add_verdict_flags(
      plan, "the base deployment's",
      "serve the cheapest variants within the SLA again over this many seconds, in rank order, "
      "two at a time, until one holds it with its window settled");
  r.add_progress_flag(plan, kServedLine);
  r.bind(plan, run_plan);

  CLI::App* capacity =
      r.add("capacity",
            "the largest arrival rate (a closed loop: sessions at a time) each deployment (or "
            "variant) serves within its SLA, and every rate tried");
  r.add_serving_flags(
      capacity,
      "deployments (workloads/deployments/) names or paths, comma-separated; with the grid "
      "flags, each variant is asked in turn",
      "simulated seconds of arrivals measured at each rate after the warm-up (then each drains)",
      "random seed (the same sessions at every rate)");
  r.add_grid_flags(capacity);
  capacity
      ->add_option(
          "--rate-factors", f.rate_factors,
          "multiples of the workload's arrival rate (or --sessions-per-s; a closed loop's sessions at a "
          "time, or --concurrency, rounded) to sweep, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  capacity
      ->add_option("--precision", f.precision,
                   "search until the bracket's ends are within this ratio less one")
      ->capture_default_str();
  capacity->add_option("--svg", f.trace,
                       "also write a chart (SVG) of each variant's TTFT and TPOT p99 (and longest ITL p99, "
                       "with an ITL limit) over the SLA's limits, by rate, to this file");
  r.add_verdict_flags(
      capacity, "the deployment's",
      "serve the rates that met the SLA again over this many seconds, largest first, two at a "
      "time, until one holds it with its window settled, then cut the bracket above it to "
      "--precision");
  r.add_progress_flag(capacity, kServedLine);
  r.bind(capacity, run_capacity);

  CLI::App* sensitivity =
      r.add("sensitivity",
            "which assumed figures (model, deployment, GPU, kernel-model priors, the workload's traffic) "
            "move a served run's $ per token and TPOT: each moved down and up in turn");
  r.add_serving_flags(sensitivity, "deployment (workloads/deployments/) name or path",
                      "simulated seconds of arrivals measured in each run after the warm-up (then it drains)",
                      "random seed (the same traffic drawn in every run)");
  sensitivity->add_option("--swing", f.swing, "how far each assumption moves, as a share of its value")
      ->capture_default_str();
  sensitivity
      ->add_option("--kinds", f.kinds,
                   "which figures to move, by their source: assumed, datasheet, published, measured, "
                   "calibrated; comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  r.add_progress_flag(sensitivity, "which figure it moved to what, and the run's $ per token and TPOT p99");
  r.bind(sensitivity, run_sensitivity);
}

// context and frontier: one deployment's answers without serving it over time.
void register_sweep_commands(const CommandRegistrar& r) {
  Flags& f = r.flags();
  CLI::App* context =
      r.add("context",
            "one deployment with sessions from 8K to 1M tokens: sessions that fit, first token, "
            "decode batch within TPOT, $ per output token");
  r.add_deployment_on_gpus(context);
  context
      ->add_option("--contexts", f.contexts,
                   fmt::format("tokens per session (prompt + output), comma-separated (default: {}, those "
                               "the model's max_context holds, and it where it cuts them short)",
                               fmt::join(kSweptContexts, ",")))
      ->delimiter(',');
  context->add_option("--output-tokens", f.output_tokens, "output tokens of every session (assumed)")
      ->capture_default_str();
  context->add_option("--tpot-ms", f.sla_tpot_ms,
                      "TPOT limit of the decode batch (default: the deployment's SLA)");
  context->add_option("--max-batch-per-gpu", f.max_batch_per_gpu,
                      "decode batch limit per GPU (default: the deployment's; 0: KV memory alone)");
  r.bind(context, run_context);

  CLI::App* frontier =
      r.add("frontier",
            "decode tokens/s per user against tokens/s per GPU, batch by batch, with the Pareto points");
  r.add_deployment_on_gpus(frontier);
  frontier->add_option(
      "--context", f.frontier_context,
      fmt::format("tokens of history per session (default: {}, or the model's max_context if "
                  "shorter)",
                  kFrontierContext));
  frontier->add_option("--svg", f.trace, "also write the chart (SVG) to this file");
  r.bind(frontier, run_frontier);
}

// calibrate, targets and validate: the kernel model against measurements and published figures.
void register_validation_commands(const CommandRegistrar& r) {
  Flags& f = r.flags();
  const std::shared_ptr<Flags>& flags = r.shared_flags();
  CLI::App* calib = r.add("calibrate", "fit the kernel model to measured kernel times");
  calib
      ->add_option("--measurements", f.measurements,
                   "folder of measurement CSVs (validation/measurements/<gpu>)")
      ->required();
  calib->add_option("--hw", f.hw, "GPU profile (default: the measurement folder's name)")
      ->each([flags](const std::string&) { flags->hw_given = true; });
  calib->add_option("--out", f.out_dir, "calibration file (default validation/calibration/<gpu>.yaml)")
      ->each([flags](const std::string&) { flags->out_given = true; });
  r.bind(calib, run_calibrate);

  CLI::App* targets = r.add("targets", "our CUDA kernels' measured rows against their performance targets");
  targets
      ->add_option("--measurements", f.measurements,
                   "folder of measurement CSVs (validation/measurements/<gpu>)")
      ->required();
  r.add_model(targets);
  r.bind(targets, run_targets);

  CLI::App* validate = r.add("validate", "the kernel model against published kernel figures");
  validate->add_flag(
      "--write-published-bands", f.write_published_bands,
      "write the priors' error per kernel class to validation/calibration/published_bands.yaml");
  validate
      ->add_option(
          "--probe", f.validate_probes,
          "list only the references of these probes (gemm, grouped_gemm, attention, stream, moe_layer, "
          "all_to_all, step, held_out_measurement), comma-separated")
      ->delimiter(',');
  validate->add_option("--gpu", f.validate_gpus, "list only the references on these GPUs, comma-separated")
      ->delimiter(',');
  r.bind(validate, run_validate);
}

// claims and report: the seed article's claims, and the whole study.
void register_study_commands(const CommandRegistrar& r) {
  CLI::App* claims = r.add("claims", "check the seed article's quantitative claims");
  r.add_reserve(claims);
  r.bind(claims, run_claims);

  CLI::App* report =
      r.add("report", "write the main study report (Markdown, JSON, and one HTML page with its SVG charts)");
  r.add_reserve(report);
  report->add_option("--out", r.flags().out_dir, "output directory")->capture_default_str();
  r.bind(report, run_report);
}

}  // namespace

void register_commands(CLI::App& app, const GlobalOptions& global, std::function<void()>& run,
                       std::ostream& out) {
  const CommandRegistrar registrar(app, global, run, out);
  register_memory_commands(registrar);
  register_step_commands(registrar);
  register_serving_commands(registrar);
  register_sweep_commands(registrar);
  register_validation_commands(registrar);
  register_study_commands(registrar);
  app.require_subcommand(1);
}

}  // namespace v41sim
