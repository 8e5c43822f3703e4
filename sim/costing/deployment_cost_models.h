// The kernel cost models of a deployment's two pools, loaded together:
// prefill launches its kernels, decode replays a CUDA graph. A served run,
// the context sweep and the decode frontier all time a deployment through
// these, so they read the same models. With priors_only, both pools use the
// published priors whatever calibrations exist (published_band_derivation.h).
#pragma once

#include "sim/common/catalog.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/serving/deployment_spec.h"

namespace v41sim {

struct DeploymentCostModels {
  DeploymentCostModels(const Catalog& catalog, const DeploymentSpec& deployment, bool priors_only = false)
      : prefill(catalog.data_dir(), catalog.resolve_gpu(deployment.prefill.gpu, deployment.prefill.gpu_at),
                false, priors_only),
        decode(catalog.data_dir(), catalog.resolve_gpu(deployment.decode.gpu, deployment.decode.gpu_at), true,
               priors_only) {}
  GpuCostModel prefill;
  GpuCostModel decode;
};

}  // namespace v41sim
