#include "sim/serving/deployment_spec.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <tuple>
#include <vector>

#include "sim/common/yaml_reader.h"
#include "sim/graph/tensor_parallel.h"
#include "sim/serving/workload_spec.h"

namespace v41sim {
namespace {

// The SSD tier's figures' plausible ranges (sourced_value.h): its sizes from a
// GB to an exabyte, a client's read rate from a SATA disk's to a few 400G
// NICs' more than a hundred times over.
constexpr PlausibleRange kSsdClientBytesPerS{1e8, 1e13, "bytes per second (40 GB/s is 40e9)"};
constexpr PlausibleRange kUsdPerTbMonth{1e-3, 1e4, "$ per TB-month"};
constexpr PlausibleRange kTierTb{1e-3, 1e6, "TB (20 TB is 20, 1 PB is 1000)"};
// An engine's time between forward steps: from none to a second.
constexpr PlausibleRange kStepOverheadUs{0, 1e6, "us a step (0.56 ms is 560)"};

// A time a tier keeps something: 0 or more seconds, within what the
// simulator's clock holds past a run's end (a longer one would overflow it).
double seconds_a_run_can_hold(const YamlNode& node) {
  const double s = node.as_non_negative_double();
  if (s > longest_run_s()) {
    node.fail(fmt::format(
        "expected at most {:.0f} s (about {:.0f} days, what the simulator's clock holds), got {:g}",
        longest_run_s(), longest_run_s() / 86400, s));
  }
  return s;
}

PoolSpec read_pool(const YamlNode& node, bool prefill, const YamlNode& deployment_gpu) {
  if (prefill) {
    node.expect_only({"instances", "gpus_per_instance", "ep", "attention_tp", "routed_experts_split",
                      "max_tokens_per_step", "context_parallel_min_tokens", "routing_skew",
                      "redundant_experts", "overlap_communication", "fuse_input_projections",
                      "reindex_scores_pool_only", "routed_expert_math", "mhc_form", "gpu"});
  } else {
    node.expect_only({"instances", "gpus_per_instance", "ep", "attention_tp", "routed_experts_split",
                      "max_batch_per_gpu", "routing_skew", "redundant_experts", "overlap_communication",
                      "fuse_input_projections", "speculative_decoding", "draft_queries_share_index_keys",
                      "reindex_scores_pool_only", "routed_expert_math", "mhc_form", "gpu"});
  }
  PoolSpec p;
  const YamlNode gpu = node.has("gpu") ? node.required("gpu") : deployment_gpu;
  p.gpu = gpu.as_string();
  p.gpu_at = gpu.location();
  p.instances = node.required("instances").as_positive_int();
  p.gpus_per_instance = node.required("gpus_per_instance").as_positive_int();
  // Each GPU is simulated as a rank of its own: a pool past any cluster's size
  // (instances: 1e9 once ran out of memory) is refused.
  if (p.instances > kMostPoolGpus / p.gpus_per_instance) {
    node.required("instances")
        .fail(fmt::format("expected at most {} GPUs in a pool, got {} instances of {}", kMostPoolGpus,
                          p.instances, p.gpus_per_instance));
  }
  const YamlNode ep = node.required("ep");
  p.ep = ep.as_positive_int();
  if (p.ep != p.gpus_per_instance) {
    ep.fail("the EP group spans one instance: ep must equal gpus_per_instance");
  }
  p.routing_skew = node.required("routing_skew").as_non_negative_double();
  p.ep_at = ep.location();
  p.attention_tp_at = node.location();
  if (const auto tp = node.optional("attention_tp")) {
    p.attention_tp = tp->as_positive_int();
    p.attention_tp_at = tp->location();
    if (p.gpus_per_instance % p.attention_tp != 0) {
      tp->fail(fmt::format("expected a GPU count that divides gpus_per_instance ({}), got {}",
                           p.gpus_per_instance, p.attention_tp));
    }
  }
  if (const auto split = node.optional("routed_experts_split")) {
    const std::string how = split->as_string();
    if (how != "experts" && how != "columns") split->fail("expected experts or columns");
    p.experts_split_by_columns = how == "columns";
    p.experts_split_at = split->location();
  }
  const YamlNode redundant = node.required("redundant_experts");
  p.redundant_experts = redundant.as_non_negative_int();
  p.redundant_experts_at = redundant.location();
  const YamlNode overlap = node.required("overlap_communication");
  const std::string policy = overlap.as_string();
  if (policy == "when_faster") {
    p.overlap = PoolSpec::Overlap::kWhenFaster;
  } else if (policy == "true" || policy == "false") {
    p.overlap = overlap.as_bool() ? PoolSpec::Overlap::kOn : PoolSpec::Overlap::kOff;
  } else {
    overlap.fail("expected true, false or when_faster");
  }
  if (const auto fuse = node.optional("fuse_input_projections")) p.fuse_input_projections = fuse->as_bool();
  if (!prefill) p.speculative_decoding = node.required("speculative_decoding").as_bool();
  if (const auto share = node.optional("draft_queries_share_index_keys")) {
    p.engine.draft_queries_share_index_keys = share->as_bool();
  }
  if (const auto pool_only = node.optional("reindex_scores_pool_only")) {
    p.engine.reindex_scores_pool_only = pool_only->as_bool();
  }
  if (const auto math = node.optional("routed_expert_math")) {
    const std::string name = math->as_string();
    if (name != "fp8" && name != "bf16") math->fail("expected fp8 or bf16");
    p.engine.experts_bf16_math = name == "bf16";
  }
  if (const auto form = node.optional("mhc_form")) {
    const std::string name = form->as_string();
    if (name != "single_pass" && name != "three_kernel") form->fail("expected single_pass or three_kernel");
    p.engine.mhc_form = name == "single_pass" ? MhcForm::kSinglePass : MhcForm::kThreeKernel;
    p.mhc_form_at = form->location();
  }
  if (prefill) {
    const YamlNode chunk = node.required("max_tokens_per_step");
    p.max_tokens_per_step = chunk.as_positive_int();
    p.max_tokens_per_step_at = chunk.location();
    if (const auto cp = node.optional("context_parallel_min_tokens")) {
      p.context_parallel_min_tokens = cp->as_non_negative_int();
      if (p.context_parallel_min_tokens > 0 && p.attention_ranks() < 2) {
        cp->fail(p.attention_tp > 1 ? "context parallelism needs an instance of at least 2 attention ranks"
                                    : "context parallelism needs an instance of at least 2 GPUs");
      }
    }
  } else {
    p.max_batch_per_gpu = node.required("max_batch_per_gpu").as_positive_int();
  }
  return p;
}

}  // namespace

DeploymentSpec load_deployment_by_name(const Catalog& catalog, const std::string& name_or_path,
                                       const InputLocation& named_at) {
  DeploymentSpec d = load_deployment_file(catalog.resolve_deployment(name_or_path, named_at));
  d.file = path_in_data_dir(d.file, catalog.data_dir());
  return d;
}

DeploymentSpec load_deployment_file(const std::string& path) {
  const YamlNode root = YamlNode::load_file(path);
  root.expect_only({"name", "source", "gpu", "disaggregated", "aggregated_steps", "prefill_delay_steps",
                    "routing", "prefill", "decode", "kv_tiers", "sla", "reserve_fraction",
                    "step_overhead_us"});
  DeploymentSpec d;
  d.file = path;
  d.name = root.required("name").as_string();
  root.required("source").as_string();
  const YamlNode gpu = root.required("gpu");
  d.gpu = gpu.as_string();
  const YamlNode disaggregated = root.required("disaggregated");
  d.disaggregated = disaggregated.as_bool();
  d.prefill = read_pool(root.required("prefill"), true, gpu);
  d.decode = read_pool(root.required("decode"), false, gpu);
  if (!d.disaggregated) {
    // Aggregated: the prefill block describes how the same instances prefill.
    const bool same = d.prefill.instances == d.decode.instances && d.prefill.gpu == d.decode.gpu &&
                      d.prefill.gpus_per_instance == d.decode.gpus_per_instance &&
                      d.prefill.ep == d.decode.ep && d.prefill.attention_tp == d.decode.attention_tp &&
                      d.prefill.experts_split_by_columns == d.decode.experts_split_by_columns;
    if (!same) {
      root.required("prefill").fail(
          "aggregated serving runs prefill on the decode instances: instances, gpus_per_instance, ep, "
          "attention_tp and routed_experts_split must match the decode block");
    }
    const YamlNode steps = root.required("aggregated_steps");
    const auto schedule = parse_aggregated_steps(steps.as_string());
    if (!schedule) steps.fail("expected prefill_first or mixed");
    d.aggregated_steps = *schedule;
  } else if (const auto steps = root.optional("aggregated_steps")) {
    steps->fail(
        "only an aggregated deployment (disaggregated: false) shares its steps between prefill and decode");
  }
  if (const auto delay = root.optional("prefill_delay_steps")) {
    d.prefill_delay_steps = delay->as_non_negative_int();
    if (d.prefill_delay_steps > 0 && (d.disaggregated || d.mixes_prompt_chunks())) {
      delay->fail(
          "expected 0: prompts are held for the other ranks' only where an aggregated deployment runs them "
          "first (aggregated_steps: prefill_first)");
    }
  }
  if (const auto routing = root.optional("routing")) {
    const auto policy = parse_routing(routing->as_string());
    if (!policy) routing->fail("expected least_load, least_requests or round_robin");
    d.routing = *policy;
    d.routing_named = true;
  }
  const YamlNode kv = root.required("kv_tiers");
  kv.expect_only({"ssd_read_bytes_per_s", "ssd_usd_per_tb_month", "ssd_capacity_tb", "retention_s",
                  "host_pool_fraction", "host_ttl_s", "bounded_replay"});
  d.kv.ssd_read_bytes_per_s = read_plausible_value(kv.required("ssd_read_bytes_per_s"), kSsdClientBytesPerS);
  d.kv.ssd_usd_per_tb_month = read_plausible_value(kv.required("ssd_usd_per_tb_month"), kUsdPerTbMonth);
  const YamlNode capacity = kv.required("ssd_capacity_tb");
  if (capacity.is_scalar()) {
    if (capacity.as_string() != "unbounded") {
      capacity.fail("expected unbounded or a sourced size in TB ({value: 20, assumed: \"...\"})");
    }
  } else {
    d.kv.ssd_capacity_tb = read_plausible_value(capacity, kTierTb);
  }
  // 0 keeps nothing (no SSD tier; no window-state pool), as plan's variants may say.
  d.kv.retention_s = seconds_a_run_can_hold(kv.required("retention_s"));
  const YamlNode host_pool = kv.required("host_pool_fraction");
  d.kv.host_pool_fraction = host_pool.as_non_negative_double();
  d.kv.host_pool_fraction_at = host_pool.location();
  if (d.kv.host_pool_fraction >= 1) host_pool.fail("expected a fraction below 1");
  d.kv.host_ttl_s = seconds_a_run_can_hold(kv.required("host_ttl_s"));
  d.kv.bounded_replay = kv.required("bounded_replay").as_bool();
  const YamlNode sla = root.required("sla");
  sla.expect_only({"ttft_ms", "tpot_ms", "itl_ms"});
  d.sla.ttft_ms = sla.required("ttft_ms").as_positive_double();
  d.sla.tpot_ms = sla.required("tpot_ms").as_positive_double();
  if (const auto itl = sla.optional("itl_ms")) d.sla.itl_ms = itl->as_positive_double();  // absent: no limit
  const YamlNode reserve = root.required("reserve_fraction");
  d.reserve_fraction = reserve.as_non_negative_double();
  d.reserve_fraction_at = reserve.location();
  if (d.reserve_fraction >= 1) reserve.fail("expected a fraction below 1");
  if (const auto overhead = root.optional("step_overhead_us")) {
    d.step_overhead_us = read_plausible_value(*overhead, kStepOverheadUs, ValueRange::kNonNegative);
    if (!d.step_overhead_us->known())
      overhead->fail("expected a figure (a step is timed with it; leave the field out to count none)");
  }
  return d;
}

std::string step_overhead_note(const DeploymentSpec& d) {
  if (!d.step_overhead_us) {
    return "engine time outside the forward steps: none counted (" + d.file +
           " states no step_overhead_us; each step takes what its kernels and transfers take)";
  }
  return fmt::format(
      "engine time outside the forward steps: {:g} us after each step's forward, before its tokens are out "
      "and the next step starts, whatever its batch ({}; step_overhead_us in {})",
      d.step_overhead_us->value(), d.step_overhead_us->provenance().label(), d.file);
}

std::optional<DeploymentSpec::Routing> parse_routing(std::string_view text) {
  if (text == "least_load") return DeploymentSpec::Routing::kLeastLoad;
  if (text == "round_robin") return DeploymentSpec::Routing::kRoundRobin;
  if (text == "least_requests") return DeploymentSpec::Routing::kLeastRequests;
  return std::nullopt;
}

std::string routing_note(const DeploymentSpec& d) {
  // Where a prompt goes, how the decode side then places it (disaggregated),
  // and whose rule it is.
  struct Rule {
    std::string prompts, decode, source;
  };
  Rule rule;
  if (d.routing == DeploymentSpec::Routing::kRoundRobin) {
    rule = {"to the next instance, then to the next of its ranks, in turn", "the next in turn",
            "round_robin in " + d.file + ", SGLang's default"};
  } else if (d.routing == DeploymentSpec::Routing::kLeastRequests) {
    rule = {
        "to the instance, then the rank, with the least 4 x waiting + running requests (vLLM's "
        "data-parallel balancer)",
        "the one running the fewest requests", "least_requests in " + d.file};
  } else {
    rule = {
        "to the instance, then the rank, with the least load (prompt tokens to compute plus tokens of KV "
        "held, weighted alike, as NVIDIA Dynamo's KV router)",
        "the one holding the least KV",
        d.routing_named ? "least_load in " + d.file : "assumed: " + d.file + " names no routing"};
  }
  const std::string ranks =
      d.prefill.attention_tp == 1 && d.decode.attention_tp == 1
          ? "data-parallel attention, as SGLang and vLLM serve DeepSeek"
          : "an attention rank: a GPU, or the attention_tp GPUs of a tensor-parallel one";
  const std::string placement =
      d.disaggregated
          ? "; it is prefilled on that rank (" + ranks +
                "), then decodes where the same rule places it: of a decode instance's ranks with "
                "room, " +
                rule.decode
          : "; it is prefilled, holds its KV and decodes on that rank (" + ranks + ")";
  return "routing: each prompt goes " + rule.prompts + placement + " (" + rule.source + ")";
}

namespace {

// A pool's kernels that differ from the step model's assumed ones, each with the key that says so.
std::vector<std::string> kernels_not_assumed(const PoolSpec& p, bool decode) {
  std::vector<std::string> out;
  if (decode && !p.engine.draft_queries_share_index_keys)
    out.push_back(
        "a sequence's drafts read its index keys apart from its token (draft_queries_share_index_keys)");
  if (!p.engine.reindex_scores_pool_only)
    out.push_back("Reindex layers score every position and mask (reindex_scores_pool_only)");
  if (p.engine.experts_bf16_math)
    out.push_back("the routed experts as W4A16, BF16 math (routed_expert_math)");
  if (!p.fuse_input_projections) out.push_back("each projection its own GEMM (fuse_input_projections)");
  if (p.engine.mhc_form == MhcForm::kThreeKernel) out.push_back("mHC as three kernels (mhc_form)");
  if (p.engine.mhc_form == MhcForm::kSinglePass)
    out.push_back("mHC in one pass a block, whatever the model file says (mhc_form)");
  return out;
}

}  // namespace

std::string engine_kernels_note(const DeploymentSpec& d) {
  std::string out;
  for (const auto& [name, pool, decode] :
       {std::tuple{d.disaggregated ? "prefill pool" : "prompt steps", &d.prefill, false},
        std::tuple{d.disaggregated ? "decode pool" : "decode steps", &d.decode, true}}) {
    const std::vector<std::string> kernels = kernels_not_assumed(*pool, decode);
    if (kernels.empty()) continue;
    out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", name, fmt::join(kernels, ", "));
  }
  if (out.empty()) return out;
  return "kernels other than the step model assumes, as " + d.file +
         " says (README, \"How the step model works\"): " + out;
}

std::string attention_layout_note(const DeploymentSpec& d) {
  std::string out;
  for (const auto& [name, pool] : {std::pair{d.disaggregated ? "prefill pool" : "prompt steps", &d.prefill},
                                   std::pair{d.disaggregated ? "decode pool" : "decode steps", &d.decode}}) {
    if (pool->attention_tp == 1) continue;
    out +=
        fmt::format("{}{}: attention ranks of {} GPUs{}", out.empty() ? "" : "; ", name, pool->attention_tp,
                    pool->experts_split_by_columns ? ", the routed experts split by columns over them" : "");
  }
  if (out.empty()) return out;
  const bool columns = d.prefill.experts_split_by_columns || d.decode.experts_split_by_columns;
  const auto scattered = [](const PoolSpec& p) { return ranks_share_ep_group(p.attention_tp, p.ep); };
  return out + " (" + d.file + "); " + kTensorParallelAssumption +
         (columns ? std::string("; ") + kExpertsByColumnsAssumption : std::string()) +
         (scattered(d.prefill) || scattered(d.decode) ? std::string("; ") + kScatteredRanksAssumption
                                                      : std::string());
}

std::optional<DeploymentSpec::AggregatedSteps> parse_aggregated_steps(std::string_view text) {
  if (text == "prefill_first") return DeploymentSpec::AggregatedSteps::kPrefillFirst;
  if (text == "mixed") return DeploymentSpec::AggregatedSteps::kMixed;
  return std::nullopt;
}

std::string_view aggregated_steps_phrase(DeploymentSpec::AggregatedSteps steps) {
  return steps == DeploymentSpec::AggregatedSteps::kMixed ? "prompts mixed into decode steps"
                                                          : "prompts in steps of their own";
}

std::string_view aggregated_steps_name(DeploymentSpec::AggregatedSteps steps) {
  return steps == DeploymentSpec::AggregatedSteps::kMixed ? "mixed" : "prefill_first";
}

}  // namespace v41sim
