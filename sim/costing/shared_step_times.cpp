#include "sim/costing/shared_step_times.h"

#include <fmt/format.h>

#include "sim/hw/gpu_profile_loader.h"
#include "sim/serving/pool_setup.h"

namespace v41sim {
namespace {

// What a pool's step times depend on: its GPU's cost model (by file) and its
// step template, doubles written exactly.
std::string pool_key(const Catalog& catalog, const ModelAnalysis& model, const PoolSpec& pool) {
  const std::string file = catalog.resolve_gpu(pool.gpu, pool.gpu_at);
  const StepShape t = pool_step_template(model, pool, load_gpu_profile_file(file));
  return fmt::format(
      "{}|ep {} of {}|attention tp {} {}|replicas {}|overlap {} {}|fused {}|draft {}|"
      "engine {} {} {} {}|imbalance {:a}",
      file, t.ep, t.ep_per_node, t.attention_tp, t.experts_split_by_columns, t.redundant_experts,
      t.overlap_communication, static_cast<int>(pool.overlap), t.fuse_input_projections, t.include_draft,
      t.engine.draft_queries_share_index_keys, t.engine.reindex_scores_pool_only, t.engine.experts_bf16_math,
      static_cast<int>(t.engine.mhc_form), t.ep_load_imbalance);
}

}  // namespace

DeploymentSteps::DeploymentSteps(const Catalog& catalog, const ModelAnalysis& model,
                                 const DeploymentSpec& deployment)
    : gpus(catalog, deployment),
      steps(std::make_shared<StepTimeCache>(
          deployment_step_times(model, gpus.prefill.cost(), gpus.decode.cost(), deployment))) {}

const DeploymentSteps& SharedStepTimes::of(const DeploymentSpec& d) {
  const std::string key =
      pool_key(catalog_, model_, d.prefill) + " / " + pool_key(catalog_, model_, d.decode);
  const std::lock_guard<std::mutex> hold(lock_);
  std::unique_ptr<DeploymentSteps>& steps = by_key_[key];
  if (!steps) steps = std::make_unique<DeploymentSteps>(catalog_, model_, d);
  return *steps;
}

}  // namespace v41sim
