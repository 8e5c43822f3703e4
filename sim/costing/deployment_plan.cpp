#include "sim/costing/deployment_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <optional>
#include <unordered_set>
#include <utility>

#include "sim/common/input_error.h"
#include "sim/common/parallel_for.h"
#include "sim/costing/confirmation.h"
#include "sim/costing/shared_step_times.h"

namespace v41sim {
namespace {

template <typename T>
std::vector<T> or_base(const std::vector<T>& values, T base) {
  return values.empty() ? std::vector<T>{base} : values;
}

void require_positive(const std::vector<int64_t>& values, const char* flag) {
  for (const int64_t v : values) {
    if (v <= 0) throw InputError({"", 0, flag}, fmt::format("expected positive integers, got {}", v));
  }
}

// One pool at EP size `ep`: one EP group per instance. Its redundant experts
// stay as many per rank where they are a whole number per rank and both sizes
// divide the routed experts (the base's layout scaled; 0 routed: not known),
// else as many in all (an EP size only replicas make possible, as DeepSeek's
// 32 over EP 144), which the model then checks deal the slots evenly. A pool
// of tensor-parallel attention stays one rank an instance (its EP group).
void set_ep(PoolSpec& pool, int64_t ep, int64_t routed_experts) {
  if (ep == pool.ep) return;
  const bool divide = routed_experts == 0 || (routed_experts % ep == 0 && routed_experts % pool.ep == 0);
  if (divide && pool.redundant_experts % pool.ep == 0)
    pool.redundant_experts = pool.redundant_experts / pool.ep * ep;
  pool.ep = ep;
  pool.gpus_per_instance = ep;
  pool.ep_at = {"", 0, "--ep"};
  if (pool.attention_tp > 1) {
    pool.attention_tp = ep;
    pool.attention_tp_at = pool.ep_at;
  }
}

void require_in(const std::vector<double>& values, double lo, double below, const char* flag,
                const char* expected) {
  for (const double v : values) {
    if (!(v >= lo && v < below))
      throw InputError({"", 0, flag}, fmt::format("expected {}, got {}", expected, v));
  }
}

// What the grid changed in the KV tiers, for the variant's name.
std::string kv_tiers_name(const DeploymentSpec& d, const PlanGrid& grid) {
  std::string out;
  if (!grid.kv_retentions_h.empty()) {
    out += d.kv.retention_s > 0 ? fmt::format(", global KV kept {:g} h", d.kv.retention_s / 3600)
                                : std::string(", no persistent KV tier");
  }
  if (!grid.swa_pool_fractions.empty()) {
    out += d.kv.host_pool_fraction > 0
               ? fmt::format(", window state in {:g}% of host DRAM", 100 * d.kv.host_pool_fraction)
               : std::string(", no window-state pool");
  }
  if (!grid.ssd_capacities_tb.empty()) {
    out += d.kv.ssd_capacity_tb ? fmt::format(", SSD tier of {:g} TB", d.kv.ssd_capacity_tb->value())
                                : std::string(", SSD tier unbounded");
  }
  return out;
}

std::string pool_name(const PoolSpec& p) {
  return fmt::format("{} x {} {}", p.instances, p.gpus_per_instance, p.gpu);
}

std::string variant_name(const DeploymentSpec& d) {
  if (!d.disaggregated) return fmt::format("{}, aggregated, EP {}", pool_name(d.decode), d.decode.ep);
  return fmt::format("prefill {}, decode {}, EP {}", pool_name(d.prefill), pool_name(d.decode), d.decode.ep);
}

// The (prefill, decode) GPU pairs to try; empty names keep each pool's own.
std::vector<std::pair<std::string, std::string>> gpu_pairs(const DeploymentSpec& base, const PlanGrid& grid) {
  const bool per_pool = !grid.prefill_gpus.empty() || !grid.decode_gpus.empty();
  const char* per_pool_flag = grid.prefill_gpus.empty() ? "--decode-hw" : "--prefill-hw";
  if (per_pool && !grid.gpus.empty()) {
    throw InputError({"", 0, per_pool_flag},
                     "give --hw for both pools or --prefill-hw / --decode-hw, not both");
  }
  if (per_pool && !base.disaggregated) {
    throw InputError({base.file, 0, per_pool_flag},
                     "the deployment is aggregated: one pool, whose GPU --hw sets");
  }
  std::vector<std::pair<std::string, std::string>> out;
  if (!per_pool) {
    for (const std::string& gpu : or_base(grid.gpus, std::string())) out.emplace_back(gpu, gpu);
    return out;
  }
  for (const std::string& prefill : or_base(grid.prefill_gpus, base.prefill.gpu)) {
    for (const std::string& decode : or_base(grid.decode_gpus, base.decode.gpu))
      out.emplace_back(prefill, decode);
  }
  return out;
}

// Serves one variant into its row; where the model cannot run it (it does
// not fit, its EP size does not divide the experts), returns why.
std::optional<InputError> serve_variant(const DeploymentSteps& shared, const ModelAnalysis& model,
                                        const WorkloadSpec& workload, const ServeOptions& options,
                                        double min_within_sla, PlanRow& row) {
  try {
    row.run = serve_deployment(shared.gpus, shared.steps, model, row.deployment, workload, options);
  } catch (const InputError& e) {
    return e;
  }
  row.meets_sla = row.run.meets_sla(min_within_sla);
  return std::nullopt;
}

// The base laid out on other GPUs, EP size and instance counts.
DeploymentSpec layout(const DeploymentSpec& base, const std::string& prefill_gpu,
                      const std::string& decode_gpu, int64_t ep, int64_t routed_experts,
                      int64_t prefill_instances, int64_t decode_instances) {
  DeploymentSpec d = base;
  // The names come from the flags, checked before any variant is laid out.
  if (!prefill_gpu.empty()) {
    d.prefill.gpu = prefill_gpu;
    d.prefill.gpu_at = {"", 0, "--hw/--prefill-hw"};
  }
  if (!decode_gpu.empty()) {
    d.gpu = d.decode.gpu = decode_gpu;
    d.decode.gpu_at = {"", 0, "--hw/--decode-hw"};
  }
  set_ep(d.decode, ep, routed_experts);
  d.decode.instances = decode_instances;
  if (d.disaggregated) {
    set_ep(d.prefill, ep, routed_experts);
    d.prefill.instances = prefill_instances;
  } else {  // one pool: prefill mirrors decode
    d.prefill.instances = d.decode.instances;
    d.prefill.gpus_per_instance = d.decode.gpus_per_instance;
    d.prefill.ep = d.decode.ep;
    d.prefill.attention_tp = d.decode.attention_tp;
    d.prefill.attention_tp_at = d.decode.attention_tp_at;
    d.prefill.redundant_experts = d.decode.redundant_experts;
    d.prefill.ep_at = d.decode.ep_at;
    d.prefill.redundant_experts_at = d.decode.redundant_experts_at;
  }
  for (const auto& [pool, flag] :
       {std::pair{&d.decode, "--decode-instances"}, {&d.prefill, "--prefill-instances"}}) {
    if (pool->instances > kMostPoolGpus / pool->gpus_per_instance) {
      throw InputError({base.file, 0, flag},
                       fmt::format("expected at most {} GPUs in a pool, got {} instances of {}",
                                   kMostPoolGpus, pool->instances, pool->gpus_per_instance));
    }
  }
  if (d.prefill.context_parallel_min_tokens > 0 && d.prefill.attention_ranks() < 2) {
    throw InputError(
        {base.file, 0, "--ep"},
        "the deployment's prefill uses context parallelism, which needs at least 2 attention ranks "
        "an instance (EP of at least 2, data-parallel attention)");
  }
  return d;
}

// The EP sizes to try on one decode GPU: the grid's (or, with neither the
// grid's nor a domain asked, the base's), and its NVLink domain where asked
// and not among them; `domain` is set to that size (0: none added).
std::vector<int64_t> eps_on(const DeploymentSpec& base, const PlanGrid& grid, const std::string& decode_gpu,
                            int64_t& domain) {
  std::vector<int64_t> eps = grid.eps.empty() && !grid.domain_eps.empty() ? std::vector<int64_t>{}
                                                                          : or_base(grid.eps, base.decode.ep);
  domain = 0;
  const auto it = grid.domain_eps.find(decode_gpu.empty() ? base.decode.gpu : decode_gpu);
  if (it != grid.domain_eps.end() && std::find(eps.begin(), eps.end(), it->second) == eps.end()) {
    domain = it->second;
    eps.push_back(domain);
  }
  return eps;
}

// A pool run as one EP group over an NVLink domain: the fewest replicas, no
// fewer than it has, that deal the routed experts over the group (as many
// as the experts at most: past that the model refuses the variant, saying why).
void deal_over_domain(PoolSpec& pool, int64_t routed_experts) {
  if (routed_experts == 0) return;
  const int64_t replicas = replicas_to_deal(routed_experts, pool.ep, pool.redundant_experts);
  if (replicas == pool.redundant_experts || replicas > routed_experts) return;
  pool.redundant_experts = replicas;
  pool.redundant_experts_at = {"", 0, "--ep domain"};
}

// A pool's instance counts to try at EP size `ep`: the grid's (else the
// base's), or with keep_gpus the one that keeps the base pool's GPUs.
std::vector<int64_t> instances_at(const DeploymentSpec& base, const PoolSpec& pool,
                                  const std::vector<int64_t>& counts, int64_t ep, bool keep_gpus,
                                  const char* which) {
  if (!keep_gpus) return or_base(counts, pool.instances);
  const int64_t gpus = pool.instances * pool.gpus_per_instance;
  if (gpus % ep != 0) {
    throw InputError({base.file, 0, "--keep-gpus"},
                     fmt::format("EP {} does not divide the {}'s {} GPUs ({} x {})", ep, which, gpus,
                                 pool.instances, pool.gpus_per_instance));
  }
  return {gpus / ep};
}

// Every layout of the grid: GPUs, then EP, prefill and decode instances.
std::vector<DeploymentSpec> layouts(const DeploymentSpec& base, const PlanGrid& grid) {
  std::vector<DeploymentSpec> out;
  for (const auto& [prefill_gpu, decode_gpu] : gpu_pairs(base, grid)) {
    int64_t domain = 0;
    for (const int64_t ep : eps_on(base, grid, decode_gpu, domain)) {
      // An aggregated base's prefill mirrors its decode pool (layout): only the decode pool is kept.
      for (const int64_t prefill : instances_at(base, base.prefill, grid.prefill_instances, ep,
                                                grid.keep_gpus && base.disaggregated, "prefill pool")) {
        for (const int64_t decode : instances_at(base, base.decode, grid.decode_instances, ep, grid.keep_gpus,
                                                 base.disaggregated ? "decode pool" : "pool")) {
          for (const auto steps : or_base(grid.aggregated_steps, base.aggregated_steps)) {
            for (const auto routing : or_base(grid.routings, base.routing)) {
              DeploymentSpec& d = out.emplace_back(
                  layout(base, prefill_gpu, decode_gpu, ep, grid.routed_experts, prefill, decode));
              if (ep == domain) {
                for (PoolSpec* pool : {&d.decode, &d.prefill}) deal_over_domain(*pool, grid.routed_experts);
              }
              d.aggregated_steps = steps;
              d.routing = routing;
              d.routing_named = base.routing_named || !grid.routings.empty();
            }
          }
        }
      }
    }
  }
  return out;
}

// Each variant once per value of one more dimension of the grid, `apply`
// setting it (the variants as they are where the grid gives no values);
// the earlier dimensions vary slowest, as in nested loops.
template <typename T, typename Apply>
std::vector<DeploymentSpec> times(std::vector<DeploymentSpec> variants, const std::vector<T>& values,
                                  Apply apply) {
  if (values.empty()) return variants;
  std::vector<DeploymentSpec> out;
  for (const DeploymentSpec& v : variants) {
    for (const T& value : values) apply(out.emplace_back(v), value);
  }
  return out;
}

// The schedulers' limits, where the grid varies them.
std::string scheduler_name(const DeploymentSpec& d, const PlanGrid& grid) {
  std::string out;
  if (!grid.max_tokens_per_step.empty())
    out += fmt::format(", {} prompt token{} a step", d.prefill.max_tokens_per_step,
                       d.prefill.max_tokens_per_step == 1 ? "" : "s");
  if (!grid.max_batch_per_gpu.empty()) out += fmt::format(", decode batch <= {}", d.decode.max_batch_per_gpu);
  if (!grid.prefill_delay_steps.empty() && !d.mixes_prompt_chunks()) {
    out += d.prefill_delay_steps == 0 ? std::string(", no prefill delay")
                                      : fmt::format(", prefill delay up to {} step{}", d.prefill_delay_steps,
                                                    d.prefill_delay_steps == 1 ? "" : "s");
  }
  return out;
}

// The EPLB replicas, where the grid varies them.
std::string replicas_name(const DeploymentSpec& d, const PlanGrid& grid) {
  if (grid.redundant_experts.empty() && grid.domain_eps.empty()) return "";
  return fmt::format(", {} redundant expert{}", d.decode.redundant_experts,
                     d.decode.redundant_experts == 1 ? "" : "s");
}

// How an aggregated variant schedules prompts, where the grid varies it or it mixes.
std::string steps_name(const DeploymentSpec& d, const PlanGrid& grid) {
  if (d.disaggregated || (!d.mixes_prompt_chunks() && grid.aggregated_steps.empty())) return "";
  return fmt::format(", {}", aggregated_steps_phrase(d.aggregated_steps));
}

// How a variant lays out attention, where the grid varies it or a pool is tensor-parallel.
std::string attention_name(const DeploymentSpec& d, const PlanGrid& grid) {
  const auto layout = [](const PoolSpec& pool) {
    return pool.attention_tp > 1 ? fmt::format("attention TP {}", pool.attention_tp)
                                 : std::string("data-parallel attention");
  };
  if (grid.attention_layouts.empty() && d.prefill.attention_tp == 1 && d.decode.attention_tp == 1) return "";
  if (!d.disaggregated || d.prefill.attention_tp == d.decode.attention_tp) return ", " + layout(d.decode);
  return fmt::format(", prefill {}, decode {}", layout(d.prefill), layout(d.decode));
}

// How a variant routes its prompts, where the grid varies it.
std::string routing_name(const DeploymentSpec& d, const PlanGrid& grid) {
  if (grid.routings.empty()) return "";
  switch (d.routing) {
    case DeploymentSpec::Routing::kRoundRobin:
      return ", round-robin routing";
    case DeploymentSpec::Routing::kLeastRequests:
      return ", least-requests routing";
    case DeploymentSpec::Routing::kLeastLoad:
      break;
  }
  return ", least-load routing";
}

// Meeting rows first, those that hold the SLA before those whose window was
// still moving or whose longer run missed (met for the window, perhaps not
// for hours: an overloaded variant's queue grows past what the window saw),
// then by known price and cost; the rest by share within the SLA.
bool ranks_before(const PlanRow& a, const PlanRow& b) {
  if (a.meets_sla != b.meets_sla) return a.meets_sla;
  if (a.meets_sla) {
    if (a.holds() != b.holds()) return a.holds();
    if (a.run.cost.known != b.run.cost.known) return a.run.cost.known;
    const auto price = &SeedOutcome::usd_per_million_output;
    return a.run.cost.known && a.run.spread(price).mean < b.run.spread(price).mean;
  }
  return a.run.within_sla() > b.run.within_sla();
}

}  // namespace

std::vector<DeploymentSpec> plan_variants(const DeploymentSpec& base, const PlanGrid& grid) {
  require_positive(grid.eps, "--ep");
  require_positive(grid.prefill_instances, "--prefill-instances");
  require_positive(grid.decode_instances, "--decode-instances");
  require_positive(grid.max_tokens_per_step, "--max-tokens-per-step");
  require_positive(grid.max_batch_per_gpu, "--max-batch-per-gpu");
  for (const int64_t r : grid.redundant_experts) {
    if (r < 0)
      throw InputError({"", 0, "--redundant-experts"}, fmt::format("expected 0 or more replicas, got {}", r));
  }
  // As a deployment file's retention_s: within what the simulator's clock holds past a run.
  const double longest_h = longest_run_s() / 3600;
  require_in(grid.kv_retentions_h, 0, std::nextafter(longest_h, INFINITY), "--kv-retention-h",
             fmt::format("hours in [0, {:.1f}]", longest_h).c_str());
  require_in(grid.swa_pool_fractions, 0, 1, "--swa-pool-fraction", "a share in [0, 1)");
  require_in(grid.ssd_capacities_tb, 0, INFINITY, "--ssd-capacity-tb", "unbounded or TB above 0");
  if (grid.keep_gpus && (!grid.prefill_instances.empty() || !grid.decode_instances.empty())) {
    throw InputError(
        {"", 0, "--keep-gpus"},
        "it sets the instance counts: give it or --prefill-instances / --decode-instances, not both");
  }
  if (!base.disaggregated && !grid.prefill_instances.empty()) {
    throw InputError({base.file, 0, "--prefill-instances"},
                     "the deployment is aggregated: prefill runs on the decode instances");
  }
  if (base.disaggregated && !grid.aggregated_steps.empty()) {
    throw InputError({base.file, 0, "--aggregated-steps"},
                     "the deployment is disaggregated: its prefill and decode never share a step");
  }
  for (const int64_t steps : grid.prefill_delay_steps) {
    if (steps < 0)
      throw InputError({"", 0, "--prefill-delay-steps"},
                       fmt::format("expected 0 or more steps, got {}", steps));
  }
  if (base.disaggregated && !grid.prefill_delay_steps.empty()) {
    throw InputError({base.file, 0, "--prefill-delay-steps"},
                     "the deployment is disaggregated: no decode runs while its prompts wait");
  }
  std::vector<DeploymentSpec> out = layouts(base, grid);
  // A rank that does not divide a variant's instance leaves that variant
  // unable to run, saying why (its memory fit refuses it).
  out = times(std::move(out), grid.attention_layouts, [](DeploymentSpec& d, AttentionLayout layout) {
    for (PoolSpec* pool : {&d.prefill, &d.decode}) {
      const bool whole = layout.gpus_per_rank == AttentionLayout::kWholeInstance;
      pool->attention_tp = whole ? pool->gpus_per_instance : layout.gpus_per_rank;
      pool->attention_tp_at = {"", 0, "--attention"};
      // Only a rank that is its own EP group splits its experts by columns.
      if (pool->attention_tp != pool->ep) pool->experts_split_by_columns = false;
    }
  });
  out = times(std::move(out), grid.redundant_experts, [](DeploymentSpec& d, int64_t replicas) {
    for (PoolSpec* pool : {&d.prefill, &d.decode}) {
      pool->redundant_experts = replicas;
      pool->redundant_experts_at = {"", 0, "--redundant-experts"};
    }
  });
  out = times(std::move(out), grid.max_tokens_per_step, [](DeploymentSpec& d, int64_t tokens) {
    d.prefill.max_tokens_per_step = tokens;
    d.prefill.max_tokens_per_step_at = {"", 0, "--max-tokens-per-step"};
  });
  out = times(std::move(out), grid.max_batch_per_gpu,
              [](DeploymentSpec& d, int64_t batch) { d.decode.max_batch_per_gpu = batch; });
  // Prompts mixed into decode steps are never held: such a variant runs
  // once, without a delay (whatever its base said).
  std::vector<DeploymentSpec> delayed;
  for (const DeploymentSpec& v : out) {
    if (v.mixes_prompt_chunks()) {
      delayed.emplace_back(v).prefill_delay_steps = 0;
    } else if (grid.prefill_delay_steps.empty()) {
      delayed.push_back(v);
    } else {
      for (const int64_t steps : grid.prefill_delay_steps)
        delayed.emplace_back(v).prefill_delay_steps = steps;
    }
  }
  out = std::move(delayed);
  out = times(std::move(out), grid.kv_retentions_h,
              [](DeploymentSpec& d, double h) { d.kv.retention_s = h * 3600; });
  out = times(std::move(out), grid.swa_pool_fractions, [](DeploymentSpec& d, double share) {
    d.kv.host_pool_fraction = share;
    d.kv.host_pool_fraction_at = {"", 0, "--swa-pool-fraction"};
  });
  out = times(std::move(out), grid.ssd_capacities_tb, [](DeploymentSpec& d, double tb) {
    if (tb == 0) d.kv.ssd_capacity_tb.reset();  // unbounded
    if (tb > 0) d.kv.ssd_capacity_tb = SourcedValue::assumed(tb, "plan --ssd-capacity-tb");
  });
  for (DeploymentSpec& d : out) {
    d.name = variant_name(d) + attention_name(d, grid) + steps_name(d, grid) + routing_name(d, grid) +
             replicas_name(d, grid) + scheduler_name(d, grid) + kv_tiers_name(d, grid);
  }
  // Two values of the grid may lay a variant out alike (--attention tp and 4
  // at EP 4): such a variant, named alike, runs once.
  std::vector<DeploymentSpec> unique;
  std::unordered_set<std::string> names;
  for (DeploymentSpec& d : out) {
    if (names.insert(d.name).second) unique.push_back(std::move(d));
  }
  return unique;
}

std::optional<AttentionLayout> parse_attention_layout(std::string_view text) {
  if (text == "dp") return AttentionLayout{1};
  if (text == "tp") return AttentionLayout{AttentionLayout::kWholeInstance};
  int64_t gpus = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), gpus);
  if (error != std::errc() || end != text.data() + text.size() || gpus < 1) return std::nullopt;
  return AttentionLayout{gpus};
}

int64_t replicas_to_deal(int64_t routed_experts, int64_t ep, int64_t at_least) {
  const int64_t short_of = (routed_experts + at_least) % ep;
  return short_of == 0 ? at_least : at_least + ep - short_of;
}

std::vector<DeploymentSpec> plan_variants(const std::vector<DeploymentSpec>& bases, const PlanGrid& grid) {
  if (bases.empty()) throw InputError({"", 0, "--deployment"}, "expected at least one base deployment");
  for (const DeploymentSpec& base : bases) {
    const SlaSpec& a = base.sla;
    const SlaSpec& b = bases.front().sla;
    if (a.ttft_ms != b.ttft_ms || a.tpot_ms != b.tpot_ms || a.itl_ms != b.itl_ms) {
      // A missing ITL limit reads as 0 ms: none.
      throw InputError(
          {base.file, 0, "sla"},
          fmt::format("TTFT {} ms / TPOT {} ms / longest ITL {} ms differs from {}'s {} / {} / {} ms "
                      "(0: no limit): give --ttft-ms, --tpot-ms and --itl-ms to rank the bases "
                      "against one SLA",
                      a.ttft_ms, a.tpot_ms, a.itl_ms, bases.front().file, b.ttft_ms, b.tpot_ms, b.itl_ms));
    }
  }
  const bool any_disaggregated =
      std::any_of(bases.begin(), bases.end(), [](const DeploymentSpec& b) { return b.disaggregated; });
  const bool any_aggregated =
      std::any_of(bases.begin(), bases.end(), [](const DeploymentSpec& b) { return !b.disaggregated; });
  std::vector<DeploymentSpec> out;
  for (const DeploymentSpec& base : bases) {
    PlanGrid own = grid;
    if (bases.size() > 1 && any_disaggregated && !base.disaggregated) {  // one pool: nothing per pool to vary
      own.prefill_gpus.clear();
      own.decode_gpus.clear();
      own.prefill_instances.clear();
    }
    if (bases.size() > 1 && any_aggregated && base.disaggregated) {  // prefill never shares a step
      own.aggregated_steps.clear();
      own.prefill_delay_steps.clear();
    }
    for (DeploymentSpec& d : plan_variants(base, own)) {
      if (bases.size() > 1) d.name = std::filesystem::path(base.file).stem().string() + ": " + d.name;
      out.push_back(std::move(d));
    }
  }
  return out;
}

std::vector<PlanRow> run_plan(const Catalog& catalog, const ModelAnalysis& model,
                              const std::vector<DeploymentSpec>& bases, const PlanGrid& grid,
                              const WorkloadSpec& workload, const ServeOptions& options,
                              double min_within_sla, double confirm_s, SharedStepTimes* shared) {
  if (!(min_within_sla > 0 && min_within_sla <= 1)) {
    throw InputError({"", 0, "--min-within-sla"},
                     fmt::format("expected a share in (0, 1], got {}", min_within_sla));
  }
  for (const auto* gpus : {&grid.gpus, &grid.prefill_gpus, &grid.decode_gpus}) {
    for (const std::string& gpu : *gpus) catalog.resolve_gpu(gpu);  // an unknown name is the user's error
  }
  for (const DeploymentSpec& base : bases) {  // so is one in a file, not a variant that cannot run
    for (const PoolSpec* pool : {&base.prefill, &base.decode}) catalog.resolve_gpu(pool->gpu, pool->gpu_at);
  }
  ServeOptions drained = options;
  drained.drain = true;
  std::vector<PlanRow> rows;
  for (DeploymentSpec& d : plan_variants(bases, grid)) {
    PlanRow row;
    row.deployment = std::move(d);
    rows.push_back(std::move(row));
  }
  // Variants are independent simulations; those that time steps alike share
  // their cost models and step times (loaded here, before the runs start).
  SharedStepTimes own(catalog, model);
  SharedStepTimes& sharing = shared != nullptr ? *shared : own;
  std::vector<const DeploymentSteps*> steps(rows.size(), nullptr);
  std::vector<std::optional<InputError>> refusals(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    try {
      steps[i] = &sharing.of(rows[i].deployment);
    } catch (const InputError& e) {
      refusals[i] = e;
    }
  }
  parallel_for(rows.size(), [&](std::size_t i) {
    if (steps[i] != nullptr)
      refusals[i] = serve_variant(*steps[i], model, workload, drained, min_within_sla, rows[i]);
  });
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (refusals[i]) rows[i].not_run = message_in_data_dir(*refusals[i], catalog.data_dir());
  }
  // Where no variant can run, the input is wrong for all of them (a flag, or
  // every layout asked): the command stops at the first one's line, as
  // capacity and context do.
  if (!refusals.empty() &&
      std::all_of(refusals.begin(), refusals.end(), [](const auto& r) { return r.has_value(); }))
    throw *refusals.front();
  rank_plan_rows(rows);
  if (const std::optional<ServeOptions> longer = confirmation_window(drained, confirm_s)) {
    confirm_in_rank_order(rows, min_within_sla, [&](const PlanRow& row) {
      const DeploymentSteps& variant = sharing.of(row.deployment);
      return serve_deployment(variant.gpus, variant.steps, model, row.deployment, workload, *longer);
    });
  }
  return rows;
}

bool PlanRow::holds() const {
  if (confirmation) return confirmation_holds;
  return !run.asks_settling() || run.seeds_unsettled() == 0;
}

void rank_plan_rows(std::vector<PlanRow>& rows) { std::stable_sort(rows.begin(), rows.end(), ranks_before); }

void confirm_in_rank_order(std::vector<PlanRow>& rows, double min_within_sla,
                           const std::function<ServedRun(const PlanRow&)>& serve_again) {
  std::vector<PlanRow*> within;  // ranked: the rows within the SLA come first
  for (PlanRow& row : rows) {
    if (!row.meets_sla) break;
    within.push_back(&row);
  }
  confirm_two_at_a_time(within, min_within_sla, serve_again);
  rank_plan_rows(rows);
}

}  // namespace v41sim
