#include "sim/costing/layout_refusal.h"

#include <algorithm>

#include "sim/common/input_error.h"
#include "sim/hw/gpu_profile_loader.h"
#include "sim/serving/pool_setup.h"

namespace v41sim {
namespace {

void require_servable(const Catalog& catalog, const ModelAnalysis& model, const DeploymentSpec& d) {
  const GpuProfile prefill = load_gpu_profile_file(catalog.resolve_gpu(d.prefill.gpu, d.prefill.gpu_at));
  const GpuProfile decode = load_gpu_profile_file(catalog.resolve_gpu(d.decode.gpu, d.decode.gpu_at));
  require_servable_layout(model, d, prefill, decode);
}

}  // namespace

std::optional<std::string> layout_refusal(const Catalog& catalog, const ModelAnalysis& model,
                                          const DeploymentSpec& deployment) {
  try {
    require_servable(catalog, model, deployment);
  } catch (const InputError& e) {
    return message_in_data_dir(e, catalog.data_dir());
  }
  return std::nullopt;
}

void require_one_servable_layout(const Catalog& catalog, const ModelAnalysis& model,
                                 const std::vector<DeploymentSpec>& deployments) {
  const bool none = std::none_of(deployments.begin(), deployments.end(), [&](const DeploymentSpec& d) {
    return !layout_refusal(catalog, model, d).has_value();
  });
  if (none && !deployments.empty()) require_servable(catalog, model, deployments.front());
}

}  // namespace v41sim
