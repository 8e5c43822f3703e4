// Which layouts of a grid (capacity's variants, context's and frontier's
// GPUs and EP sizes) the model can run at all. A variant whose weights
// overflow its GPUs, or whose EP size does not deal the experts, keeps its
// reason beside the variants that ran, rather than ending the command (as
// plan's rows keep theirs, caught as each variant is served); where none can
// run, the command ends at the first one's line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/common/catalog.h"
#include "sim/model/model_analysis.h"
#include "sim/serving/deployment_spec.h"

namespace v41sim {

// For each of `deployments`, in order, why the model cannot run it
// (servable_kv_room: each pool's memory fit and expert slots, the
// prompt chunk, the host pool), its file named inside the data folder
// (message_in_data_dir); none where it can. Throws the first one's
// InputError where none can run.
std::vector<std::optional<std::string>> layout_refusals(const Catalog& catalog, const ModelAnalysis& model,
                                                        const std::vector<DeploymentSpec>& deployments);

}  // namespace v41sim
