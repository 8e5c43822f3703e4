// The kernel cost models of a deployment's two pools, loaded together:
// prefill launches its kernels, decode replays a CUDA graph. A served run,
// the context sweep and the decode frontier all time a deployment through
// these, so they read the same models.
#pragma once

#include "sim/common/catalog.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/serving/deployment_spec.h"

namespace v41sim {

struct DeploymentCostModels {
  DeploymentCostModels(const Catalog& catalog, const DeploymentSpec& deployment)
      : prefill(catalog.data_dir(), catalog.resolve_gpu(deployment.prefill.gpu, deployment.prefill.gpu_at),
                false),
        decode(catalog.data_dir(), catalog.resolve_gpu(deployment.decode.gpu, deployment.decode.gpu_at),
               true) {}
  GpuCostModel prefill;
  GpuCostModel decode;
};

}  // namespace v41sim
