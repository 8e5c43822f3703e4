#include "sim/costing/shared_step_times.h"

#include <fmt/format.h>

#include "sim/serving/pool_setup.h"

namespace v41sim {
namespace {

// What a pool's step times depend on: its GPU's cost model (by file) and its
// step template, doubles written exactly.
std::string pool_key(const Catalog& catalog, const ModelAnalysis& model, const PoolSpec& pool,
                     const GpuProfile& gpu) {
  const StepShape t = pool_step_template(model, pool, gpu);
  return fmt::format("{}|ep {} of {}|overlap {} {}|fused {}|draft {}|imbalance {:a}",
                     catalog.resolve_gpu(pool.gpu), t.ep, t.ep_per_node, t.overlap_communication,
                     static_cast<int>(pool.overlap), t.fuse_input_projections, t.include_draft,
                     t.ep_load_imbalance);
}

}  // namespace

DeploymentSteps::DeploymentSteps(const Catalog& catalog, const ModelAnalysis& model,
                                 const DeploymentSpec& deployment)
    : gpus(catalog, deployment),
      steps(std::make_shared<StepTimeCache>(
          deployment_step_times(model, gpus.prefill.cost(), gpus.decode.cost(), deployment))) {}

const DeploymentSteps& SharedStepTimes::of(const DeploymentSpec& d) {
  auto loaded = std::make_unique<DeploymentSteps>(catalog_, model_, d);
  const std::string key = pool_key(catalog_, model_, d.prefill, loaded->gpus.prefill.gpu()) + " / " +
                          pool_key(catalog_, model_, d.decode, loaded->gpus.decode.gpu());
  auto [it, inserted] = by_key_.try_emplace(key, nullptr);
  if (inserted) it->second = std::move(loaded);
  return *it->second;
}

}  // namespace v41sim
