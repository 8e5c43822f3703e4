#include "sim/validation/published_reference.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>

#include "sim/common/yaml_reader.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/cost/step_cost.h"
#include "sim/costing/served_run.h"
#include "sim/graph/expert_load.h"
#include "sim/graph/ffn_block.h"
#include "sim/graph/kernel_factory.h"
#include "sim/graph/residual_mixing.h"
#include "sim/graph/step_graph.h"
#include "sim/graph/tensor_parallel.h"
#include "sim/model/model_loader.h"

namespace v41sim {
namespace {

// The kernels of an MoE layer that a fused dispatch + experts + combine kernel covers.
const std::set<std::string> kMoeKernels{"ep_dispatch", "experts_gate_up", "experts_swiglu_quant",
                                        "experts_down", "ep_combine"};

// The fields a probe's kind requires, the ones it allows besides them, and
// the whole numbers a step's shape needs.
void check_probe_fields(const YamlNode& probe, const PublishedReference& r) {
  static const std::map<std::string, std::vector<std::string>> kRequired{
      {"gemm", {"m", "n", "k"}},
      {"grouped_gemm", {"groups", "m", "n", "k"}},
      {"stream", {"bytes"}},
      {"mhc", {"kernel", "tokens", "streams", "hidden"}},
      {"topk", {"rows", "length", "k"}},
      {"moe_layer", {"ep", "tokens_per_rank"}},
      {"all_to_all", {"tokens", "hidden", "top_k", "ep", "ep_per_node", "bytes_per_value"}},
      {"attention", {"model", "phase", "batch", "context"}},
      {"indexer", {"model", "phase", "batch", "context"}},
      {"step", {"model", "phase", "batch", "context", "ep"}},
      {"serving", {"model", "deployment", "workload"}}};
  const auto needed = kRequired.find(r.probe_kind);
  if (needed == kRequired.end()) {
    std::vector<std::string> kinds;
    for (const auto& [kind, fields] : kRequired) kinds.push_back(kind);
    probe.required("kind").fail(
        fmt::format("unknown probe '{}' (expected {})", r.probe_kind, fmt::join(kinds, ", ")));
  }
  for (const std::string& key : needed->second) probe.required(key);
  // Optional keys: the weights' format (grouped_gemm: FP8 unless it says
  // fp4; moe_layer: the routed experts', the model's unless it says), a fused
  // kernel overlapping its transfers, the experts' math (bf16 for a W4A16
  // kernel, such as Marlin's MoE, EngineChoices::experts_bf16_math) and a
  // benchmark's own MoE shape in place of the model's (routed experts, top-k,
  // hidden size, expert width) (moe_layer), a
  // bandwidth counted over every routed copy, local ones included, as DeepEP
  // V2 reports its "logical" bandwidth, or per node reached, own node included
  // (DeepEP's internode test), timed as the low-latency kernels decode uses,
  // with the experts a token's copies are deduplicated over (all_to_all), the query heads one
  // GPU holds under tensor parallelism and the query tokens of each sequence (attention: e.g.
  // 16 of 128 at TP 8; FlashMLA's s_q, a token and its drafts), and a whole step's
  // two-micro-batch overlap, EPLB replicas, routing skew (none: every expert as popular),
  // balanced routing (1: every rank receives exactly its share, as a profile that simulates
  // it; none: each step's routing falls by chance), the GPUs one tensor-parallel attention rank
  // spans and its routed experts split by columns over them (1: as an engine's TP without EP)
  // (step), and a benchmark's concurrency, prompt
  // count and prompt length in place of its workload's, and its routed experts' format (serving);
  // the engine's own format for the index keys, a cache format the model file defines (step, serving).
  static const std::map<std::string, std::vector<std::string>> kOptional{
      {"gemm", {"math"}},
      {"grouped_gemm", {"weights"}},
      {"stream", {}},
      {"mhc", {}},
      {"topk", {}},
      {"moe_layer", {"model", "overlap", "weights", "math", "experts", "top_k", "hidden", "width"}},
      {"all_to_all", {"count_local", "count_local_node", "low_latency", "experts"}},
      {"attention", {"heads", "topk", "widened_per_head_tile", "queries_per_sequence"}},
      {"indexer", {"queries_per_sequence", "new_tokens"}},
      {"step",
       {"gpus_per_node", "overlap", "redundant_experts", "routing_skew", "balanced_routing", "attention_tp",
        "experts_by_columns", "index_key_cache"}},
      {"serving", {"weights", "index_key_cache", "concurrency", "prompts", "input_tokens"}}};
  for (const auto& [key, value] : probe.entries()) {
    if (key == "kind") continue;
    const auto& required = needed->second;
    const auto& optional = kOptional.at(r.probe_kind);
    if (std::find(required.begin(), required.end(), key) == required.end() &&
        std::find(optional.begin(), optional.end(), key) == optional.end()) {
      value.fail("not a field of a '" + r.probe_kind + "' probe");
    }
  }
  if (r.probe_kind == "gemm") probe.required("math");
  if (r.probe_kind == "moe_layer") probe.required("model");
  // The counts a step or an MoE layer is built from.
  static const std::map<std::string, std::vector<std::string>> kWholeNumbers{
      {"mhc", {"tokens", "streams", "hidden"}},
      {"topk", {"rows", "length", "k"}},
      {"attention", {"batch", "context", "heads", "topk", "queries_per_sequence"}},
      {"indexer", {"batch", "context", "queries_per_sequence", "new_tokens"}},
      {"moe_layer", {"ep", "tokens_per_rank", "experts", "top_k", "hidden", "width"}},
      {"step", {"batch", "context", "ep", "gpus_per_node", "redundant_experts", "attention_tp"}},
      {"serving", {"concurrency", "prompts", "input_tokens"}}};
  if (const auto whole = kWholeNumbers.find(r.probe_kind); whole != kWholeNumbers.end()) {
    for (const std::string& key : whole->second) {
      const auto it = r.probe.find(key);
      if (it != r.probe.end() && it->second != std::floor(it->second))
        probe.required(key).fail("expected a whole number");
    }
  }
}

// The probe: its kind, the model, phase and math it names, and its numbers,
// each checked against the fields its kind requires or allows.
void read_probe(const YamlNode& probe, PublishedReference& r) {
  r.probe_kind = probe.required("kind").as_string();
  for (const auto& [key, value] : probe.entries()) {
    if (key == "kind") continue;
    if (key == "model") {
      r.probe_model = value.as_string();
    } else if (key == "deployment") {
      r.probe_deployment = value.as_string();
    } else if (key == "workload") {
      r.probe_workload = value.as_string();
    } else if (key == "phase") {
      r.probe_phase = value.as_string();
      if (r.probe_phase != "decode" && r.probe_phase != "prefill") value.fail("expected decode or prefill");
    } else if (key == "math") {
      r.probe_math = value.as_string();
      if (r.probe_math != "fp8" && r.probe_math != "bf16") value.fail("expected fp8 or bf16");
    } else if (key == "kernel") {
      r.probe_kernel = value.as_string();
      if (r.probe_kernel != "pre_mix_norm" && r.probe_kernel != "post_merge")
        value.fail("expected pre_mix_norm or post_merge (V4's mHC kernels a benchmark times alone)");
    } else if (key == "index_key_cache") {
      r.probe_index_key_cache = value.as_string();
    } else if (key == "weights") {
      r.probe_weights = value.as_string();
      if (r.probe_weights != "fp8" && r.probe_weights != "fp4") value.fail("expected fp8 or fp4");
    } else {
      r.probe[key] = value.as_positive_double();
    }
  }
  check_probe_fields(probe, r);
}

// The published figure's metric, which the probe's kind decides, and the
// fields a step's metric needs from its probe.
void read_metric(const YamlNode& reference, const YamlNode& probe, PublishedReference& r) {
  reference.expect_only({"metric", "value", "step_ms", "total", "gpus"});
  r.metric = reference.required("metric").as_string();
  if (r.probe_kind == "step") {
    // A serving engine's step is published as throughput, per node (the
    // probe then says how many GPUs a node has) or per GPU: kept as published.
    if (r.metric == "tokens_per_s_per_node") {
      probe.required("gpus_per_node");
    } else if (r.metric == "tokens_per_s_per_gpu") {
      if (const auto per_node = probe.optional("gpus_per_node"))
        per_node->fail("not used by a tokens_per_s_per_gpu figure (only per node)");
    } else {
      reference.required("metric").fail("expected tokens_per_s_per_node or tokens_per_s_per_gpu");
    }
  } else if (r.probe_kind == "serving") {
    // A serving benchmark's means (or median TTFT) over its requests, and its throughput per GPU (input and
    // output tokens).
    if (r.metric != "ttft_ms" && r.metric != "ttft_p50_ms" && r.metric != "tpot_ms" &&
        r.metric != "tokens_per_s_per_gpu")
      reference.required("metric").fail("expected ttft_ms, ttft_p50_ms, tpot_ms or tokens_per_s_per_gpu");
  } else if (r.metric != "tflops" && r.metric != "gbps" && r.metric != "us") {
    reference.required("metric").fail("expected tflops, gbps or us");
  }
}

int64_t as_int(double value) { return static_cast<int64_t>(std::llround(value)); }

// The tokens one GPU of a step probe's rank runs a step: a prefill step's
// prompts' or a decode step's sequences', a tensor-parallel rank's shared by its GPUs.
double step_tokens_per_gpu(const PublishedReference& r) {
  const auto& p = r.probe;
  const double tokens = r.probe_phase == "prefill" ? p.at("batch") * p.at("context") : p.at("batch");
  return tokens / (p.count("attention_tp") ? p.at("attention_tp") : 1.0);
}

// The published figure: its value; for a step published as its time
// (`step_ms`, one reading or several, averaged), the tokens per second per
// GPU that time gives the step's tokens; for a benchmark's throughput
// published for the whole deployment (`total` over its `gpus`), a GPU's share.
double read_reference_value(const YamlNode& reference, PublishedReference& r) {
  const auto step_ms = reference.optional("step_ms");
  const auto total = reference.optional("total");
  if (total) {
    if (reference.optional("value") || step_ms) total->fail("a total, or a value or a step's time, not both");
    if (r.probe_kind != "serving" || r.metric != "tokens_per_s_per_gpu")
      total->fail("a deployment's total tokens/s, only for a serving probe's tokens_per_s_per_gpu");
    const YamlNode gpus = reference.required("gpus");
    r.total_over_gpus = gpus.as_positive_int();
    r.total_over_gpus_at = gpus.location();
    return total->as_positive_double() / static_cast<double>(r.total_over_gpus);
  }
  if (const auto gpus = reference.optional("gpus"))
    gpus->fail("the GPUs a total ran on, which the reference does not give");
  if (!step_ms) return reference.required("value").as_positive_double();
  if (reference.optional("value")) step_ms->fail("a step's time or its value, not both");
  if (r.probe_kind != "step" || r.metric != "tokens_per_s_per_gpu")
    step_ms->fail("a step's time in ms, only for a step probe's tokens_per_s_per_gpu");
  double sum = 0;
  const std::vector<YamlNode> readings = step_ms->elements();
  if (readings.empty()) step_ms->fail("expected one or more readings in ms");
  for (const YamlNode& ms : readings) sum += ms.as_positive_double();
  return step_tokens_per_gpu(r) / (sum / static_cast<double>(readings.size()) * 1e-3);
}

PublishedReference read_reference(const YamlNode& node) {
  node.expect_only(
      {"name", "source", "sets_prior", "model_lacks", "gpu", "probe", "reference", "tolerance_pct"});
  PublishedReference r;
  r.file = node.file();
  r.line = node.line();
  r.name = node.required("name").as_string();
  r.source = node.required("source").as_string();
  if (const auto prior = node.optional("sets_prior")) r.sets_prior = prior->as_string();
  if (const auto lacks = node.optional("model_lacks")) r.model_lacks = lacks->as_string();
  const YamlNode gpu = node.required("gpu");
  r.gpu = gpu.as_string();
  r.gpu_at = gpu.location();
  const YamlNode probe = node.required("probe");
  read_probe(probe, r);
  const YamlNode reference = node.required("reference");
  read_metric(reference, probe, r);
  r.value = read_reference_value(reference, r);
  r.tolerance_pct = node.required("tolerance_pct").as_positive_double();
  return r;
}

// A probe's weights: FP4 as MXFP4 stores it (e2m1, an e8m0 scale per 32)
// where it says fp4, else FP8 (unscaled, as the grouped probe's kernels take them).
BlockScaledFormat probe_weight_format(const std::string& weights) {
  return weights == "fp4" ? BlockScaledFormat{ElementFormat::kFp4E2M1, ElementFormat::kE8M0, 32}
                          : BlockScaledFormat{ElementFormat::kFp8E4M3, std::nullopt, 0};
}

// The engine's index keys, where the probe says it stores them in another of
// the model file's cache formats (SGLang and vLLM keep FP8 keys by default): set
// before the model is analysed, so that its KV bytes and its logits' reads agree.
void apply_probe_index_key_cache(const PublishedReference& r, ModelSpec& spec) {
  if (r.probe_index_key_cache.empty()) return;
  const InputLocation at{r.file, r.line, "probe.index_key_cache"};
  if (!spec.attention.indexer)
    throw InputError(at, spec.name + " has no indexer whose keys an engine stores");
  if (spec.cache_formats.count(r.probe_index_key_cache) == 0) {
    std::vector<std::string> names;
    for (const auto& [name, format] : spec.cache_formats) names.push_back(name);
    throw InputError(at, fmt::format("expected a cache format {} defines ({}), got '{}'", spec.file,
                                     fmt::join(names, ", "), r.probe_index_key_cache));
  }
  spec.attention.indexer->key_cache = r.probe_index_key_cache;
}

// A kernel's figure in the reference's metric: its own FLOPs or bytes over
// its device time (launch overhead excluded, as kernel benchmarks time it), or the time.
double in_metric(const Kernel& k, double busy_us, const std::string& metric) {
  if (metric == "tflops") return k.flops / busy_us / 1e6;
  if (metric == "gbps") return k.hbm_bytes / busy_us / 1e3;
  return busy_us;
}

// A moe_layer probe's own MoE shape, where it gives one (a fused-MoE
// benchmark of a shape no model file has): the routed experts, top-k, hidden
// size and expert width replace the model's; the probe times only the MoE
// kernels, so the rest of the model stays as it is.
void reshape_moe(const PublishedReference& r, ModelSpec& spec) {
  const auto& p = r.probe;
  if (!spec.moe) return;  // refused where the layer is looked for
  MoeSpec& moe = *spec.moe;
  if (p.count("experts")) moe.routed_experts = as_int(p.at("experts"));
  if (p.count("top_k")) moe.top_k = as_int(p.at("top_k"));
  if (p.count("hidden")) spec.hidden_size = as_int(p.at("hidden"));
  if (p.count("width")) moe.expert_intermediate = as_int(p.at("width"));
  if (moe.top_k > moe.routed_experts)
    throw InputError({r.file, r.line, "probe.top_k"}, "more experts a token than routed experts");
}

// The kernel a kernel probe (attention, indexer) times: the first of its
// class in a step of the model at the probe's phase, batch and context, its
// query tokens a sequence where it says (decode), no draft stages (the query
// tokens alone, as a kernel benchmark runs them). Timed alone, as the step
// times it.
Kernel first_kernel_of_step(const PublishedReference& r, const ModelAnalysis& model, const GpuCostModel& g,
                            KernelClass kernel_class) {
  const auto& p = r.probe;
  StepShape shape;
  shape.phase = r.probe_phase == "prefill" ? Phase::kPrefill : Phase::kDecode;
  shape.batch = as_int(p.at("batch"));
  shape.context = as_int(p.at("context"));
  shape.include_draft = false;
  if (p.count("queries_per_sequence")) {
    if (shape.phase != Phase::kDecode)
      throw InputError({r.file, r.line, "probe.queries_per_sequence"},
                       "a decode step's query tokens a sequence");
    shape.decode_tokens_per_sequence = as_int(p.at("queries_per_sequence"));
  }
  if (p.count("new_tokens")) {
    const int64_t new_tokens = as_int(p.at("new_tokens"));
    if (shape.phase != Phase::kPrefill || new_tokens < 1 || new_tokens > shape.context)
      throw InputError(
          {r.file, r.line, "probe.new_tokens"},
          "a prefill step's tokens computed a prompt, 1 to its context (the rest a cached prefix)");
    shape.new_tokens = new_tokens;
  }
  shape.ep_per_node = g.gpu().nvlink_domain();
  for (const LayerKernels& layer : build_step_graph(model, shape).layers) {
    for (const Kernel& k : layer.kernels())
      if (k.kernel_class == kernel_class) return k;
  }
  throw InputError({r.file, r.line, "probe.model"},
                   fmt::format("the model's step has no {} kernel", class_key(kernel_class)));
}

// indexer: the first indexer logits kernel of a step of the model (a paged
// MQA logits benchmark times one call), in us or TFLOP/s of its own FLOPs:
// `context` the step's tokens, so its keys are the context over the layer's
// compression ratio; `queries_per_sequence` the benchmark's next_n (decode);
// `new_tokens` a prefill benchmark's query tokens, the last of its `context`
// keys (DeepGEMM's mqa_logits with a causal end per query).
double predict_indexer(const PublishedReference& r, const GpuCostModel& g, const Catalog& catalog) {
  const ModelAnalysis model =
      analyze_model(load_model_file(catalog.resolve_model(r.probe_model, {r.file, r.line, "probe.model"})));
  const Kernel k = first_kernel_of_step(r, model, g, KernelClass::kIndexer);
  return in_metric(k, g.cost().time(k).busy_us, r.metric);
}

// attention: the first attention kernel of a step of the model (as FlashMLA's
// benchmarks time one call), in TFLOP/s or GB/s of its own FLOPs and bytes
// over its device time. `heads` stands for tensor parallelism: the query
// heads one GPU holds; `queries_per_sequence` for a decode benchmark's query
// tokens a sequence (FlashMLA's s_q: a token and the drafts it verifies);
// `topk` for a benchmark's own top-k (sparse models);
// `widened_per_head_tile` for a kernel that does not share its widened entries
// between the CTAs of one token's head tiles.
double predict_attention(const PublishedReference& r, const GpuCostModel& g, const Catalog& catalog) {
  const auto& p = r.probe;
  ModelSpec spec = load_model_file(catalog.resolve_model(r.probe_model, {r.file, r.line, "probe.model"}));
  if (p.count("heads")) {
    const int64_t heads = as_int(p.at("heads"));
    if (heads > spec.attention.num_heads) {
      throw InputError({r.file, r.line, "probe.heads"}, "more query heads than the model has (" +
                                                            std::to_string(spec.attention.num_heads) + ")");
    }
    spec.attention.num_heads = heads;
  }
  if (p.count("topk")) {
    if (!spec.attention.indexer) {
      throw InputError({r.file, r.line, "probe.topk"}, "the model has no indexer to select a top-k");
    }
    spec.attention.indexer->topk = as_int(p.at("topk"));
  }
  Kernel k = first_kernel_of_step(r, analyze_model(spec), g, KernelClass::kAttention);
  if (p.count("widened_per_head_tile")) {
    // A kernel whose CTAs for one token's head tiles each widen every
    // entry themselves (FlashMLA's FP8 decode before its "crossover").
    const double tiles = std::ceil(static_cast<double>(spec.attention.num_heads) /
                                   static_cast<double>(g.cost().params().of(KernelClass::kAttention).tile_m));
    k.narrow.fp8 *= tiles;
    k.narrow.fp4 *= tiles;
  }
  return in_metric(k, g.cost().time(k).busy_us, r.metric);
}

// step: a whole forward step of the model on the reference's GPU, as a
// serving engine runs it (decode replays a CUDA graph; no speculative draft),
// in tokens per second per GPU or per node: prompt tokens computed (prefill)
// or one token per sequence (decode), times the node's GPUs where the figure
// is per node, over the step's time.
double predict_step(const PublishedReference& r, const GpuCostModel& g, const Catalog& catalog) {
  const auto& p = r.probe;
  ModelSpec spec = load_model_file(catalog.resolve_model(r.probe_model, {r.file, r.line, "probe.model"}));
  apply_probe_index_key_cache(r, spec);
  const ModelAnalysis model = analyze_model(spec);
  StepShape shape;
  shape.phase = r.probe_phase == "prefill" ? Phase::kPrefill : Phase::kDecode;
  shape.batch = as_int(p.at("batch"));
  shape.context = as_int(p.at("context"));
  shape.ep = as_int(p.at("ep"));
  shape.ep_per_node = g.gpu().nvlink_domain();
  shape.include_draft = false;
  shape.overlap_communication = p.count("overlap") > 0 && p.at("overlap") > 0;
  shape.redundant_experts = p.count("redundant_experts") ? as_int(p.at("redundant_experts")) : 0;
  shape.routed_by_chance = !(p.count("balanced_routing") > 0 && p.at("balanced_routing") > 0);
  require_ep_divides_expert_slots(model.spec, shape.ep, shape.redundant_experts, {r.file, r.line, "probe.ep"},
                                  {r.file, r.line, "probe.redundant_experts"});
  if (p.count("routing_skew")) {
    shape.ep_load_imbalance =
        ep_load_imbalance(model.spec, shape.ep, p.at("routing_skew"), shape.redundant_experts);
  }
  shape.attention_tp = p.count("attention_tp") ? as_int(p.at("attention_tp")) : 1;
  require_attention_tp_fits(model.spec, shape.attention_tp, shape.ep, shape.ep_per_node,
                            {r.file, r.line, "probe.attention_tp"});
  shape.experts_split_by_columns = p.count("experts_by_columns") > 0 && p.at("experts_by_columns") > 0;
  if (shape.experts_split_by_columns)
    require_column_split_fits(model.spec, shape.attention_tp, shape.ep, shape.redundant_experts,
                              {r.file, r.line, "probe.experts_by_columns"});
  const StepTiming timing = time_step(build_step_graph(model, shape), g.cost());
  return step_tokens_per_gpu(r) * gpus_in_figure(r) / (timing.total_us * 1e-6);
}

// A file a probe names: by a path, beside the reference's file (as a
// workload's trace is read beside the workload); by a name, from the catalog.
std::string probe_file(const PublishedReference& r, const std::string& named, const std::string& field,
                       const std::function<std::string(const InputLocation&)>& by_name) {
  const InputLocation at{r.file, r.line, field};
  if (named.find('/') == std::string::npos && !named.ends_with(".yaml")) return by_name(at);
  const std::string path = (std::filesystem::path(r.file).parent_path() / named).string();
  if (!std::filesystem::exists(path)) throw InputError(at, "no file at " + path);
  return path;
}

// serving: the benchmark the probe names run to its last prompt from an
// empty deployment (its workload a closed loop, its concurrency and prompt
// count as the probe says where it does), the routed experts in the format it
// says (an engine that requantizes them at load), in the reference's metric.
double predict_serving(const PublishedReference& r, const Catalog& catalog, bool priors_only,
                       std::string* kernel_model) {
  const auto& p = r.probe;
  ModelSpec spec = load_model_file(catalog.resolve_model(r.probe_model, {r.file, r.line, "probe.model"}));
  if (!r.probe_weights.empty()) spec.weights.routed_experts = probe_weight_format(r.probe_weights);
  apply_probe_index_key_cache(r, spec);
  const ModelAnalysis model = analyze_model(spec);
  DeploymentSpec deployment = load_deployment_file(probe_file(
      r, r.probe_deployment, "probe.deployment",
      [&](const InputLocation& at) { return catalog.resolve_deployment(r.probe_deployment, at); }));
  deployment.file = path_in_data_dir(deployment.file, catalog.data_dir());
  const std::string gpu = catalog.resolve_gpu(r.gpu, r.gpu_at);
  for (const PoolSpec* pool : {&deployment.prefill, &deployment.decode}) {
    if (catalog.resolve_gpu(pool->gpu, pool->gpu_at) != gpu)
      throw InputError(r.gpu_at, "the deployment '" + deployment.name + "' runs on " + pool->gpu +
                                     ", not on the reference's " + r.gpu);
  }
  WorkloadSpec workload =
      load_workload_file(probe_file(r, r.probe_workload, "probe.workload", [&](const InputLocation& at) {
        return catalog.resolve_workload(r.probe_workload, at);
      }));
  const InputLocation prompts_at{r.file, r.line, "probe.prompts"};
  if (workload.arrival != WorkloadSpec::Arrival::kClosedLoop)
    throw InputError({r.file, r.line, "probe.workload"},
                     "a serving probe runs a benchmark: expected a closed loop");
  if (p.count("concurrency"))
    workload = at_concurrency(std::move(workload), as_int(p.at("concurrency")),
                              {r.file, r.line, "probe.concurrency"});
  if (p.count("prompts")) {
    workload.prompts = as_int(p.at("prompts"));
    workload.prompts_where = prompts_at;
  }
  if (p.count("input_tokens")) workload.first_input_tokens = Distribution::fixed(p.at("input_tokens"));
  if (workload.prompts <= 0)
    throw InputError(prompts_at,
                     "a benchmark ends with its prompts: expected a prompt count (the workload has none)");
  ServeOptions options;
  options.warm_up_s = 0;  // measured from an empty server, as the client's warm-up requests end first
  options.duration_s = longest_run_s();
  options.drain = true;
  const ServedRun run = serve_deployment(catalog, model, deployment, workload, options, priors_only);
  *kernel_model = run.decode_kernel_model;
  const ServingResult& x = run.result;
  if (!x.window_ends_with_prompts)
    throw InputError(prompts_at, "the benchmark's prompts did not all end within the longest run");
  if (r.total_over_gpus > 0 && x.gpus != r.total_over_gpus) {
    throw InputError(r.total_over_gpus_at,
                     fmt::format("the benchmark's total ran on {} GPUs, where the deployment has {}",
                                 r.total_over_gpus, x.gpus));
  }
  if (r.metric == "ttft_ms") return x.ttft_ms.mean;
  if (r.metric == "ttft_p50_ms") return x.ttft_ms.p50;
  if (r.metric == "tpot_ms") return x.tpot_ms.mean;
  return x.input_tokens_per_s_per_gpu + x.output_tokens_per_s_per_gpu;
}

// What the model says, in the reference's metric.
double predict(const PublishedReference& r, const Catalog& catalog, bool priors_only,
               std::string* kernel_model) {
  // A whole benchmark's deployment loads its own pools' cost models.
  if (r.probe_kind == "serving") return predict_serving(r, catalog, priors_only, kernel_model);
  const bool in_graph = r.probe_kind == "moe_layer" || (r.probe_kind == "step" && r.probe_phase == "decode");
  const GpuCostModel g(catalog.data_dir(), catalog.resolve_gpu(r.gpu, r.gpu_at), in_graph, priors_only);
  *kernel_model = g.cost().params().label();
  const auto& p = r.probe;
  if (r.probe_kind == "gemm") {
    std::vector<Kernel> kernels;
    const bool fp8 = r.probe_math == "fp8";
    const BlockScaledFormat weights{fp8 ? ElementFormat::kFp8E4M3 : ElementFormat::kBf16, std::nullopt, 0};
    const Kernel& k = KernelFactory(kernels).gemm("gemm", p.at("m"), p.at("n"), p.at("k"), weights,
                                                  fp8 ? MathType::kFp8 : MathType::kBf16);
    return in_metric(k, g.cost().time(k).busy_us, r.metric);
  }
  if (r.probe_kind == "grouped_gemm") {  // FP8 activations, groups of m rows each, every group's weights read
    std::vector<Kernel> kernels;
    const BlockScaledFormat weights = probe_weight_format(r.probe_weights);
    const Kernel& k = KernelFactory(kernels).grouped_gemm("grouped_gemm", p.at("groups") * p.at("m"),
                                                          p.at("groups"), p.at("n"), p.at("k"), weights);
    return in_metric(k, g.cost().time(k).busy_us, r.metric);
  }
  if (r.probe_kind == "stream") {
    std::vector<Kernel> kernels;
    const Kernel& k =
        KernelFactory(kernels).elementwise("stream", p.at("bytes") / 4096.0, 4096.0, p.at("bytes"));
    return in_metric(k, g.cost().time(k).busy_us, r.metric);
  }
  if (r.probe_kind == "mhc") {  // one kernel of V4's three-kernel mHC, as the layers' graphs build it
    std::vector<Kernel> kernels;
    KernelFactory f(kernels);
    const MhcStreams streams{p.at("streams"), p.at("hidden")};
    const Kernel& k = r.probe_kernel == "post_merge"
                          ? add_mhc_post_merge(f, "mhc_post_merge", p.at("tokens"), streams)
                          : add_mhc_pre_mix_norm(f, "mhc_pre_mix_norm", p.at("tokens"), streams);
    return in_metric(k, g.cost().time(k).busy_us, r.metric);
  }
  if (r.probe_kind == "topk") {  // rows of `length` FP32 scores, each its top k, as the indexer's selection
    if (p.at("k") > p.at("length"))
      throw InputError({r.file, r.line, "probe.k"}, "a top-k of more values than a row holds");
    std::vector<Kernel> kernels;
    const Kernel& k = KernelFactory(kernels).topk("topk", as_int(p.at("rows")), as_int(p.at("length")),
                                                  p.at("rows") * p.at("length"), p.at("rows") * p.at("k"));
    return in_metric(k, g.cost().time(k).busy_us, r.metric);
  }
  if (r.probe_kind == "all_to_all") {
    const Kernel k = make_all_to_all(
        "all_to_all", {p.at("tokens"), as_int(p.at("top_k")), as_int(p.at("hidden")), p.at("bytes_per_value"),
                       as_int(p.at("ep")), as_int(p.at("ep_per_node")), 1.0,
                       p.count("low_latency") > 0 && p.at("low_latency") > 0,
                       p.count("experts") > 0 ? as_int(p.at("experts")) : 0});
    const double us = g.cost().time(k).time_us;
    if (r.metric == "us") return us;
    if (p.count("count_local") && p.at("count_local") > 0) {
      return p.at("tokens") * p.at("top_k") * p.at("hidden") * p.at("bytes_per_value") / us / 1e3;
    }
    const double off = k.link_bytes * k.off_node_fraction;
    if (p.count("count_local_node") && p.at("count_local_node") > 0 && off > 0) {
      // DeepEP's internode test counts a token once per node it reaches, its own included.
      const double nodes = std::ceil(p.at("ep") / p.at("ep_per_node"));
      return off * nodes / (nodes - 1.0) / us / 1e3;
    }
    return (off > 0 ? off : k.link_bytes) / us / 1e3;
  }
  if (r.probe_kind == "attention") return predict_attention(r, g, catalog);
  if (r.probe_kind == "indexer") return predict_indexer(r, g, catalog);
  if (r.probe_kind == "step") return predict_step(r, g, catalog);
  // moe_layer: a decode step's MoE kernels in the first MoE layer.
  ModelSpec spec = load_model_file(catalog.resolve_model(r.probe_model, {r.file, r.line, "probe.model"}));
  if (!r.probe_weights.empty()) spec.weights.routed_experts = probe_weight_format(r.probe_weights);
  reshape_moe(r, spec);
  const ModelAnalysis model = analyze_model(spec);
  StepShape shape;
  shape.engine.experts_bf16_math = r.probe_math == "bf16";
  shape.phase = Phase::kDecode;
  shape.batch = as_int(p.at("tokens_per_rank"));
  shape.context = 4096;
  shape.ep = as_int(p.at("ep"));
  shape.include_draft = false;
  shape.ep_per_node = g.gpu().nvlink_domain();
  const StepGraph graph = build_step_graph(model, shape);
  const StepTiming timing = time_step(graph, g.cost());
  const int64_t layer = model.spec.dense_mlp.leading_layers;
  if (layer >= static_cast<int64_t>(graph.layers.size()) || !model.spec.is_moe_layer(layer))
    throw InputError({r.file, r.line, "probe.model"},
                     "the model has no MoE layer for a moe_layer probe to time");
  double compute_us = 0;
  double comm_us = 0;
  const LayerKernels& kernels = graph.layers[static_cast<std::size_t>(layer)];
  for (std::size_t i = 0; i < kernels.kernels().size(); ++i) {
    if (!kMoeKernels.count(kernels.kernels()[i].name)) continue;
    const double us = timing.layers[static_cast<std::size_t>(layer)].kernels[i].time_us;
    (kernels.kernels()[i].stream == Stream::kCommunication ? comm_us : compute_us) += us;
  }
  // A fused kernel that overlaps its transfers with its GEMMs (overlap: 1)
  // takes the longer of the two; otherwise they run one after the other.
  const bool overlapped = p.count("overlap") && p.at("overlap") > 0;
  const double us = overlapped ? std::max(compute_us, comm_us) : compute_us + comm_us;
  if (r.metric == "us") return us;
  throw InputError({r.file, r.line, "reference.metric"}, "a moe_layer probe reports us");
}

}  // namespace

double gpus_in_figure(const PublishedReference& reference) {
  return reference.metric == "tokens_per_s_per_node" ? reference.probe.at("gpus_per_node") : 1.0;
}

std::vector<PublishedReference> load_published_references(const Catalog& catalog) {
  std::vector<PublishedReference> out;
  const std::filesystem::path dir = std::filesystem::path(catalog.data_dir()) / "validation" / "published";
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  for (const std::string& file : files) {
    const YamlNode root = YamlNode::load_file(file);
    root.expect_only({"references"});
    for (const YamlNode& node : root.required("references").elements()) out.push_back(read_reference(node));
  }
  return out;
}

ValidationRow validate_reference(const PublishedReference& reference, const Catalog& catalog,
                                 bool priors_only) {
  ValidationRow row;
  row.reference = reference;
  row.predicted = predict(reference, catalog, priors_only, &row.kernel_model);
  row.error_pct = 100.0 * (row.predicted - reference.value) / reference.value;
  row.within_tolerance = std::fabs(row.error_pct) <= reference.tolerance_pct;
  return row;
}

}  // namespace v41sim
