// v41sim run: a deployment serving a workload over time.
#include <fmt/format.h>

#include <fstream>

#include "sim/cli/flags.h"
#include "sim/common/catalog.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/costing/serving_cost.h"
#include "sim/report/run_trace.h"
#include "sim/report/run_view.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/serving_simulation.h"
#include "sim/serving/workload_spec.h"

namespace v41sim::cli {

void run_serving(const Catalog& catalog, const Flags& f, std::ostream& out) {
  if (f.duration_s <= 0) {
    throw InputError({"", 0, "--duration"},
                     fmt::format("expected a positive number of seconds, got {}", f.duration_s));
  }
  const ModelAnalysis m = load_model_named(catalog, f.model);
  const DeploymentSpec deployment = load_deployment_file(catalog.resolve_deployment(f.deployment));
  const WorkloadSpec workload = load_workload_file(catalog.resolve_workload(f.workload));
  const GpuCostModel prefill(catalog.data_dir(), catalog.resolve_gpu(deployment.prefill.gpu), false);
  const GpuCostModel decode(catalog.data_dir(), catalog.resolve_gpu(deployment.decode.gpu), true);
  ServingSimulation simulation(m, prefill.cost(), decode.cost(), deployment, workload, f.seed);
  if (!f.trace.empty()) simulation.enable_trace(f.trace_seconds);
  const ServingResult result = simulation.run(f.duration_s);
  if (!f.trace.empty()) {
    std::ofstream trace(f.trace);
    if (!trace) throw InputError({f.trace, 0, "--trace"}, "cannot write the trace file");
    trace << run_trace(result, deployment).dump() << "\n";
  }
  const std::string kernel_model = decode.cost().params().label();
  const ServingCost cost = serving_cost(result, deployment, prefill.gpu(), decode.gpu());
  const RunReport report{m.spec.name, deployment, workload, kernel_model, f.seed, result, cost};
  if (f.json) {
    out << run_json(report).dump(2) << "\n";
  } else {
    print_tables(out, run_tables(report));
  }
}

}  // namespace v41sim::cli
