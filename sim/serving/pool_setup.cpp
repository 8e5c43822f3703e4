#include "sim/serving/pool_setup.h"

#include <fmt/format.h>

#include <cmath>

#include "sim/capacity/memory_fit.h"
#include "sim/common/input_error.h"
#include "sim/graph/expert_load.h"
#include "sim/graph/residual_mixing.h"
#include "sim/graph/tensor_parallel.h"

namespace v41sim {
namespace {

// The file's own line, before the memory fit or the graph name a flag.
void require_even_expert_slots(const ModelAnalysis& model, const PoolSpec& pool) {
  require_ep_divides_expert_slots(model.spec, pool.ep, pool.redundant_experts, pool.ep_at,
                                  pool.redundant_experts_at);
}

}  // namespace

StepShape pool_step_template(const ModelAnalysis& model, const PoolSpec& pool, const GpuProfile& gpu) {
  require_even_expert_slots(model, pool);
  StepShape s;
  s.ep = pool.ep;
  s.redundant_experts = pool.redundant_experts;
  s.ep_per_node = gpu.nvlink_domain();
  require_attention_tp_fits(model.spec, pool.attention_tp, pool.ep, s.ep_per_node, pool.attention_tp_at);
  if (pool.context_parallel_min_tokens > 0 && pool.attention_ranks() < 2) {
    throw InputError(
        pool.attention_tp_at,
        fmt::format("context parallelism (context_parallel_min_tokens {}) needs at least 2 attention "
                    "ranks an instance, and a rank of {} GPUs is the whole instance",
                    pool.context_parallel_min_tokens, pool.attention_tp));
  }
  s.attention_tp = pool.attention_tp;
  if (pool.experts_split_by_columns)
    require_column_split_fits(model.spec, pool.attention_tp, pool.ep, pool.redundant_experts,
                              pool.experts_split_at);
  s.experts_split_by_columns = pool.experts_split_by_columns;
  s.overlap_communication = pool.overlap != PoolSpec::Overlap::kOff;
  s.fuse_input_projections = pool.fuse_input_projections;
  s.include_draft = pool.speculative_decoding;
  require_mhc_for_form(model.spec, pool.engine.mhc_form, pool.mhc_form_at);
  s.engine = pool.engine;
  // Split by columns, every GPU runs every expert's slice: no rank is busier.
  if (!pool.experts_split_by_columns)
    s.ep_load_imbalance = ep_load_imbalance(model.spec, pool.ep, pool.routing_skew, pool.redundant_experts);
  return s;
}

StepTimeCache deployment_step_times(const ModelAnalysis& model, const KernelCostModel& prefill_cost,
                                    const KernelCostModel& decode_cost, const DeploymentSpec& deployment) {
  return StepTimeCache(
      model, prefill_cost, decode_cost, pool_step_template(model, deployment.prefill, prefill_cost.gpu()),
      pool_step_template(model, deployment.decode, decode_cost.gpu()),
      deployment.prefill.overlap == PoolSpec::Overlap::kWhenFaster,
      deployment.decode.overlap == PoolSpec::Overlap::kWhenFaster, deployment.step_overhead());
}

double kv_bytes_per_gpu(const ModelAnalysis& model, const DeploymentSpec& deployment, const PoolSpec& pool,
                        const GpuProfile& gpu) {
  require_even_expert_slots(model, pool);
  FitRequest fit{pool.gpus_per_instance,
                 pool.ep,
                 1,
                 model.spec.weights,
                 DensePlacement::kReplicated,
                 SourcedValue::assumed(deployment.reserve_fraction, "reserve_fraction of " + deployment.file),
                 pool.redundant_experts,
                 pool.ep_at};
  fit.attention_tp = pool.attention_tp;
  const FitResult laid_out = lay_out_memory(model, gpu, fit);
  if (laid_out.kv_bytes_per_gpu > 0) return laid_out.kv_bytes_per_gpu;
  // It does not fit: fit_memory refuses it, naming the remedies; where the
  // weights alone fit, the reserve that would leave room for KV. The field
  // blamed is the reserve where the weights fit beside the assumed default
  // one (the file's larger reserve is what overflows), else the pool's EP.
  const double free_share = 1.0 - laid_out.weight_bytes_per_gpu / laid_out.hbm_bytes_per_gpu;
  if (free_share > default_reserve_fraction().value() && deployment.reserve_fraction_at.line > 0)
    fit.asked_at = deployment.reserve_fraction_at;
  fit.remedies =
      "a larger ep (more GPUs to an instance), a GPU with more HBM or " +
      (free_share > 0 ? fmt::format("a reserve_fraction below {:.4g}", std::floor(free_share * 1e4) / 1e4)
                      : std::string("a smaller reserve_fraction"));
  return fit_memory(model, gpu, fit).kv_bytes_per_gpu;
}

PoolKvRoom servable_kv_room(const ModelAnalysis& model, const DeploymentSpec& deployment,
                            const GpuProfile& prefill_gpu, const GpuProfile& decode_gpu) {
  PoolKvRoom room;
  room.decode_bytes_per_gpu = kv_bytes_per_gpu(model, deployment, deployment.decode, decode_gpu);
  if (deployment.disaggregated)
    room.prefill_bytes_per_gpu = kv_bytes_per_gpu(model, deployment, deployment.prefill, prefill_gpu);
  require_prefill_chunk_fits_reserve(model, deployment, deployment.disaggregated ? prefill_gpu : decode_gpu);
  require_host_pool_fits_beside_host_weights(model, deployment, decode_gpu);
  if (deployment.disaggregated) require_host_pool_fits_beside_host_weights(model, deployment, prefill_gpu);
  return room;
}

void require_prefill_chunk_fits_reserve(const ModelAnalysis& model, const DeploymentSpec& deployment,
                                        const GpuProfile& prefill_gpu) {
  const PoolSpec& pool = deployment.prefill;
  const double per_token = residual_bytes_per_token(model.spec);
  const double streams = static_cast<double>(pool.max_tokens_per_step) * per_token;
  const double reserve = reserve_bytes_per_gpu(prefill_gpu, deployment.reserve_fraction);
  if (streams <= reserve) return;
  throw InputError(
      pool.max_tokens_per_step_at,
      fmt::format("a step of {} prompt tokens holds {:.1f} GB of residual streams ({:g} B a token "
                  "of {}), more than the {:.1f} GB a GPU of {} keeps for activations "
                  "(reserve_fraction {:g} of its HBM): expected at most {} tokens a step, or a "
                  "larger reserve_fraction",
                  pool.max_tokens_per_step, streams / 1e9, per_token, model.spec.name, reserve / 1e9,
                  prefill_gpu.name, deployment.reserve_fraction,
                  static_cast<int64_t>(std::floor(reserve / per_token))));
}

void require_host_pool_fits_beside_host_weights(const ModelAnalysis& model, const DeploymentSpec& deployment,
                                                const GpuProfile& gpu) {
  const double dram = gpu.host_dram_bytes_per_node.value();
  const double pool = dram * deployment.kv.host_pool_fraction;
  if (pool + model.weights.host <= dram) return;
  if (model.weights.host > dram) {
    throw InputError({gpu.file, 0, "host_dram_bytes_per_node"},
                     fmt::format("{}'s {:.1f} GB of DRAM a node cannot hold {}'s {:.1f} GB of host-resident "
                                 "weights (its Engram tables, a copy a node)",
                                 gpu.name, dram / 1e9, model.spec.name, model.weights.host / 1e9));
  }
  throw InputError(deployment.kv.host_pool_fraction_at,
                   fmt::format("{:g} of a node's {:.1f} GB of DRAM ({}) for window state leaves {:.1f} GB, "
                               "less than the {:.1f} GB of {}'s host-resident weights (its Engram tables, a "
                               "copy a node): expected a fraction of at most {:.4g}",
                               deployment.kv.host_pool_fraction, dram / 1e9, gpu.name, (dram - pool) / 1e9,
                               model.weights.host / 1e9, model.spec.name,
                               std::floor((1.0 - model.weights.host / dram) * 1e4) / 1e4));
}

int64_t sessions_per_decode_rank(const ModelAnalysis& model, const DeploymentSpec& deployment,
                                 const GpuProfile& decode_gpu, int64_t context) {
  return static_cast<int64_t>(std::floor(kv_bytes_per_gpu(model, deployment, deployment.decode, decode_gpu) /
                                         model.kv.session_bytes(context)));
}

}  // namespace v41sim
