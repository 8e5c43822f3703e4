#include "sim/costing/served_run.h"

#include "sim/serving/pool_setup.h"
#include "sim/serving/serving_simulation.h"

namespace v41sim {

double share_within_sla(const ServingResult& r) {
  if (r.arrived == 0) return 0.0;
  return r.goodput_fraction * static_cast<double>(r.finished) / static_cast<double>(r.arrived);
}

ServedRun serve_deployment(const Catalog& catalog, const ModelAnalysis& model,
                           const DeploymentSpec& deployment, const WorkloadSpec& workload,
                           const ServeOptions& options) {
  const DeploymentCostModels gpus(catalog, deployment);
  const auto steps = std::make_shared<StepTimeCache>(
      deployment_step_times(model, gpus.prefill.cost(), gpus.decode.cost(), deployment));
  return serve_deployment(gpus, steps, model, deployment, workload, options);
}

ServedRun serve_deployment(const DeploymentCostModels& gpus, const std::shared_ptr<StepTimeCache>& steps,
                           const ModelAnalysis& model, const DeploymentSpec& deployment,
                           const WorkloadSpec& workload, const ServeOptions& options) {
  const GpuCostModel& prefill = gpus.prefill;
  const GpuCostModel& decode = gpus.decode;
  ServingSimulation simulation(model, prefill.cost(), decode.cost(), deployment, workload, options.seed,
                               steps);
  if (options.trace_until_s > 0) simulation.enable_trace(options.trace_until_s);
  ServedRun run;
  run.result = simulation.run(options.duration_s, options.drain);
  run.cost = serving_cost(run.result, deployment, prefill.gpu(), decode.gpu());
  run.prefill_kernel_model = prefill.cost().params().label();
  run.decode_kernel_model = decode.cost().params().label();
  return run;
}

}  // namespace v41sim
