// DeploymentSpec: the hardware and serving layout of a run
// (workloads/deployments/*.yaml): which GPU, the prefill and decode pools,
// their EP sizes and batch limits, the KV tiers and the SLA.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/common/catalog.h"
#include "sim/common/input_error.h"
#include "sim/common/sourced_value.h"
#include "sim/graph/step_shape.h"
#include "sim/serving/sla_spec.h"

namespace v41sim {

// The most GPUs a pool may have: each is simulated as a rank of its own, and
// no serving deployment comes near this many.
inline constexpr int64_t kMostPoolGpus = 65536;

struct PoolSpec {
  std::string gpu;       // hw_profiles stem or name: the deployment's `gpu` unless the pool names its own
  InputLocation gpu_at;  // where that name was said (the pool's field, the deployment's, or a flag)
  int64_t instances = 0;
  int64_t gpus_per_instance = 0;  // one EP group: its attention ranks, of attention_tp GPUs each
  int64_t ep = 0;
  // GPUs one attention rank spans (tensor-parallel attention,
  // sim/graph/tensor_parallel.h); 1: data-parallel attention, a rank a GPU.
  int64_t attention_tp = 1;
  InputLocation attention_tp_at;  // where it was said (file and line; absent: the pool's block)
  // routed_experts_split: columns: a tensor-parallel rank's experts split by
  // columns over its GPUs (StepShape::experts_split_by_columns); absent or
  // experts: whole experts a GPU (EP).
  bool experts_split_by_columns = false;
  InputLocation experts_split_at;
  int64_t max_tokens_per_step = 0;       // prefill: chunk size per attention rank
  InputLocation max_tokens_per_step_at;  // where it was said (file and line, or a flag)
  // prefill: a prompt with at least this many tokens left takes every rank of
  // its instance for a step, each rank a slice of it (context parallelism); 0: off
  int64_t context_parallel_min_tokens = 0;
  int64_t max_batch_per_gpu = 0;  // decode: sequences per attention rank (a GPU, or attention_tp of them)
  double routing_skew = 0;        // Zipf exponent of expert popularity (0 = uniform)
  int64_t redundant_experts = 0;  // extra replicas of the hottest experts per EP group
  // Where ep and redundant_experts were said (file and line, or a flag): the
  // model, known later, checks that they deal the expert slots evenly.
  InputLocation ep_at;
  InputLocation redundant_experts_at;
  // Two micro-batches hiding EP all-to-all behind compute (step_graph.h):
  // never, on every step whose batch splits, or per step shape whichever of
  // the two is faster (an engine that splits only when it pays).
  enum class Overlap { kOff, kOn, kWhenFaster };
  Overlap overlap = Overlap::kOff;
  // Projections of one input run as one GEMM (projection_fusion.h); a file
  // may say false for an engine that runs them apart. Absent: true.
  bool fuse_input_projections = true;
  bool speculative_decoding = false;  // decode: verify draft tokens (needs a draft block in the model)
  // The pool's kernels where engines differ (EngineChoices): a file may say
  // draft_queries_share_index_keys: false (decode), reindex_scores_pool_only:
  // false, routed_expert_math: bf16, mhc_form: three_kernel or single_pass;
  // absent, the assumed ones.
  EngineChoices engine;
  InputLocation mhc_form_at;  // where mhc_form was said: a model without mHC refuses it there
  // The attention ranks of an instance: each runs its own sequences and holds
  // their KV (simulated as a rank of its own).
  int64_t attention_ranks() const { return gpus_per_instance / attention_tp; }
};

struct KvTierSpec {
  SourcedValue ssd_read_bytes_per_s;  // persistent global-KV tier, per client (one on each node)
  SourcedValue ssd_usd_per_tb_month;  // what a TB the tier holds costs a month (10^12 bytes, 730 h)
  // The tier's size (10^12 bytes), least recently stored out first when it
  // is full; nullopt: unbounded, as large as what the retention keeps.
  std::optional<SourcedValue> ssd_capacity_tb;
  double retention_s = 0;               // how long a session's global KV stays
  double host_pool_fraction = 0;        // share of each node's DRAM for SWA state
  InputLocation host_pool_fraction_at;  // where it was said (file and line, or a flag)
  double host_ttl_s = 0;                // how long SWA state stays in the pool
  bool bounded_replay = true;           // SWA miss: replay one window (V4.1) or rebuild exactly
};

struct DeploymentSpec {
  std::string name;
  std::string file;
  std::string gpu;            // hw_profiles stem or name, for pools that do not name their own
  bool disaggregated = true;  // false: prefill and decode share the decode instances
  // Aggregated only: how the shared engine serves waiting prompts. Prefill
  // first runs their chunks as steps of their own between decode steps, the
  // ranks without a prompt decoding inside them (SGLang's default, with
  // data-parallel attention); mixed puts them into the decode steps, each rank
  // up to the prefill block's token budget less its decode tokens (vLLM's
  // chunked prefill, SGLang's --enable-mixed-chunk).
  enum class AggregatedSteps { kPrefillFirst, kMixed };
  AggregatedSteps aggregated_steps = AggregatedSteps::kPrefillFirst;
  // Aggregated, prefill first: while some ranks have prompts waiting and
  // others none, hold the prompts for up to this many decode steps so that
  // the ranks' prompts land in one step (SGLang's --enable-prefill-delayer,
  // --prefill-delayer-max-delay-passes). 0: off, as SGLang's default.
  int64_t prefill_delay_steps = 0;
  // Where a prompt goes among the prefill instances, then among the ranks of
  // the one chosen (data-parallel attention). Least load: prompt tokens to
  // compute plus tokens of KV held, weighted alike (NVIDIA Dynamo's KV
  // router). Least requests: 4 x waiting + running requests (vLLM's
  // data-parallel balancer). Round robin: in turn (SGLang's default
  // --load-balance-method). Ties go to the lowest index. A file that names
  // none gets least load, and outputs say it was assumed.
  enum class Routing { kLeastLoad, kLeastRequests, kRoundRobin };
  Routing routing = Routing::kLeastLoad;
  bool routing_named = false;  // the file says which
  PoolSpec prefill;
  PoolSpec decode;
  KvTierSpec kv;
  SlaSpec sla;
  double reserve_fraction = 0;  // HBM held back for activations and workspace
  InputLocation reserve_fraction_at;
  // Time each of the engine's steps takes outside its forward pass, before its
  // tokens are out and the next step starts (sampling over the vocabulary, the
  // scheduler's host work it does not overlap), per step whatever its batch;
  // none where the file states none (each step as its kernels take it).
  std::optional<SourcedValue> step_overhead_us;
  double step_overhead() const { return step_overhead_us ? step_overhead_us->value() : 0.0; }
  // An aggregated pool that puts prompt chunks into its decode steps.
  bool mixes_prompt_chunks() const { return !disaggregated && aggregated_steps == AggregatedSteps::kMixed; }
  int64_t total_gpus() const {
    const int64_t decode_gpus = decode.instances * decode.gpus_per_instance;
    return disaggregated ? prefill.instances * prefill.gpus_per_instance + decode_gpus : decode_gpus;
  }
};

DeploymentSpec load_deployment_file(const std::string& path);
// By name (workloads/deployments/) or path, its file named as
// path_in_data_dir names it (outputs read the same wherever the data sits).
DeploymentSpec load_deployment_by_name(const Catalog& catalog, const std::string& name_or_path,
                                       const InputLocation& named_at = {"", 0, "--deployment"});

// "least_load" / "round_robin", as deployment files spell them.
std::optional<DeploymentSpec::Routing> parse_routing(std::string_view text);
// What outputs say about how a deployment routes its prompts, and on what it rests.
std::string routing_note(const DeploymentSpec& d);
// What outputs say about the engine's time outside each forward step: its
// figure and source, or that the file states none.
std::string step_overhead_note(const DeploymentSpec& d);
// The kernels a deployment's pools run where the step model assumes others
// (its engine-choice keys), pool by pool; empty where they run the assumed ones.
std::string engine_kernels_note(const DeploymentSpec& d);
// How pools of tensor-parallel attention ranks lay a rank out, pool by pool;
// empty where every rank is a GPU (data-parallel attention).
std::string attention_layout_note(const DeploymentSpec& d);

// "prefill_first" / "mixed", as deployment files and `plan --aggregated-steps` spell them.
std::optional<DeploymentSpec::AggregatedSteps> parse_aggregated_steps(std::string_view text);
std::string_view aggregated_steps_name(DeploymentSpec::AggregatedSteps steps);
// The same in words, for variant names: "prompts mixed into decode steps" / "prompts in steps of their own".
std::string_view aggregated_steps_phrase(DeploymentSpec::AggregatedSteps steps);

}  // namespace v41sim
