#include "sim/serving/pool_setup.h"

#include <cmath>

#include "sim/capacity/memory_fit.h"
#include "sim/graph/expert_load.h"

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
  s.overlap_communication = pool.overlap != PoolSpec::Overlap::kOff;
  s.fuse_input_projections = pool.fuse_input_projections;
  s.include_draft = pool.speculative_decoding;
  s.ep_load_imbalance = ep_load_imbalance(model.spec, pool.ep, pool.routing_skew, pool.redundant_experts);
  return s;
}

StepTimeCache deployment_step_times(const ModelAnalysis& model, const KernelCostModel& prefill_cost,
                                    const KernelCostModel& decode_cost, const DeploymentSpec& deployment) {
  return StepTimeCache(model, prefill_cost, decode_cost,
                       pool_step_template(model, deployment.prefill, prefill_cost.gpu()),
                       pool_step_template(model, deployment.decode, decode_cost.gpu()),
                       deployment.prefill.overlap == PoolSpec::Overlap::kWhenFaster,
                       deployment.decode.overlap == PoolSpec::Overlap::kWhenFaster);
}

double kv_bytes_per_gpu(const ModelAnalysis& model, const DeploymentSpec& deployment, const PoolSpec& pool,
                        const GpuProfile& gpu) {
  require_even_expert_slots(model, pool);
  const FitRequest fit{
      pool.gpus_per_instance,
      pool.ep,
      1,
      model.spec.weights,
      DensePlacement::kReplicated,
      SourcedValue::assumed(deployment.reserve_fraction, "reserve_fraction of " + deployment.file),
      pool.redundant_experts,
      pool.ep_at,
      "a larger ep (more GPUs to an instance), a GPU with more HBM or a smaller reserve_fraction"};
  return fit_memory(model, gpu, fit).kv_bytes_per_gpu;
}

int64_t sessions_per_decode_gpu(const ModelAnalysis& model, const DeploymentSpec& deployment,
                                const GpuProfile& decode_gpu, int64_t context) {
  return static_cast<int64_t>(std::floor(kv_bytes_per_gpu(model, deployment, deployment.decode, decode_gpu) /
                                         model.kv.session_bytes(context)));
}

}  // namespace v41sim
