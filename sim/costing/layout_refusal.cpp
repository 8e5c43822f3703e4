#include "sim/costing/layout_refusal.h"

#include <algorithm>

#include "sim/common/input_error.h"
#include "sim/hw/gpu_profile_loader.h"
#include "sim/serving/pool_setup.h"

namespace v41sim {
namespace {

void require_servable(const Catalog& catalog, const ModelAnalysis& model, const DeploymentSpec& d) {
  servable_kv_room(model, d, load_gpu_profile_by_name(catalog, d.prefill.gpu, d.prefill.gpu_at),
                   load_gpu_profile_by_name(catalog, d.decode.gpu, d.decode.gpu_at));
}

}  // namespace

std::vector<std::optional<std::string>> layout_refusals(const Catalog& catalog, const ModelAnalysis& model,
                                                        const std::vector<DeploymentSpec>& deployments) {
  std::vector<std::optional<std::string>> refusals;
  std::optional<InputError> first;
  for (const DeploymentSpec& d : deployments) {
    try {
      require_servable(catalog, model, d);
      refusals.emplace_back();
    } catch (const InputError& e) {
      refusals.emplace_back(message_in_data_dir(e, catalog.data_dir()));
      if (!first) first = e;
    }
  }
  if (first && std::all_of(refusals.begin(), refusals.end(), [](const auto& r) { return r.has_value(); }))
    throw *first;
  return refusals;
}

}  // namespace v41sim
