#include "sim/costing/load_capacity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "sim/common/input_error.h"
#include "sim/common/parallel_for.h"
#include "sim/costing/shared_step_times.h"

namespace v41sim {
namespace {

void require_valid(const WorkloadSpec& workload, const LoadOptions& o) {
  if (workload.arrival == WorkloadSpec::Arrival::kTrace && !(workload.sessions_per_s > 0)) {
    throw InputError({workload.file, 0, "arrival"},
                     "the trace's rows all come at time 0: it has no rate to scale");
  }
  if (!(o.min_within_sla > 0 && o.min_within_sla <= 1)) {
    throw InputError({"", 0, "--min-within-sla"},
                     fmt::format("expected a share in (0, 1], got {}", o.min_within_sla));
  }
  if (!(o.precision > 0 && std::isfinite(o.precision))) {
    throw InputError({"", 0, "--precision"}, fmt::format("expected a ratio above 0, got {}", o.precision));
  }
  if (o.rate_factors.empty()) throw InputError({"", 0, "--rate-factors"}, "expected at least one factor");
  for (const double f : o.rate_factors) {
    if (!(f > 0 && std::isfinite(f)))
      throw InputError({"", 0, "--rate-factors"}, fmt::format("expected finite factors above 0, got {}", f));
  }
}

// Serves each rate (in parallel: each run has its own simulation, the step
// times are shared) and adds the points.
void serve_rates(const DeploymentSteps& steps, const ModelAnalysis& model, const DeploymentSpec& deployment,
                 const WorkloadSpec& workload, const LoadOptions& o, const std::vector<double>& rates,
                 std::vector<LoadPoint>& points) {
  std::vector<LoadPoint> added(rates.size());
  ServeOptions drained = o.serve;
  drained.drain = true;
  parallel_for(rates.size(), [&](std::size_t i) {
    const WorkloadSpec scaled = at_rate(workload, rates[i], {"", 0, "--rate-factors"});
    LoadPoint& p = added[i];
    p.sessions_per_s = rates[i];
    p.run = serve_deployment(steps.gpus, steps.steps, model, deployment, scaled, drained);
    p.meets_sla = p.run.meets_sla(o.min_within_sla);
  });
  for (LoadPoint& p : added) points.push_back(std::move(p));
  std::stable_sort(points.begin(), points.end(), [](const LoadPoint& a, const LoadPoint& b) {
    return a.sessions_per_s < b.sessions_per_s;
  });
}

// The largest meeting rate and the smallest failing one above it.
void bracket(LoadCapacity& c) {
  c.largest_meeting.reset();
  c.smallest_failing_above.reset();
  for (std::size_t i = 0; i < c.points.size(); ++i) {
    if (c.points[i].meets_sla) c.largest_meeting = i;
  }
  const std::size_t from = c.largest_meeting ? *c.largest_meeting + 1 : 0;
  for (std::size_t i = from; i < c.points.size(); ++i) {
    if (!c.points[i].meets_sla) {
      c.smallest_failing_above = i;
      return;
    }
  }
}

}  // namespace

LoadCapacity find_load_capacity(const Catalog& catalog, const ModelAnalysis& model,
                                const DeploymentSpec& deployment, const WorkloadSpec& workload,
                                const LoadOptions& options, SharedStepTimes* shared) {
  require_valid(workload, options);
  SharedStepTimes own(catalog, model);
  const DeploymentSteps& steps = (shared != nullptr ? *shared : own).of(deployment);
  LoadCapacity c;
  std::vector<double> sweep;
  for (const double f : options.rate_factors) sweep.push_back(workload.sessions_per_s * f);
  serve_rates(steps, model, deployment, workload, options, sweep, c.points);
  bracket(c);
  while (c.largest_meeting && c.smallest_failing_above) {
    const double lo = c.points[*c.largest_meeting].sessions_per_s;
    const double hi = c.points[*c.smallest_failing_above].sessions_per_s;
    if (hi / lo <= 1.0 + options.precision) break;
    const double third = std::cbrt(hi / lo);
    serve_rates(steps, model, deployment, workload, options, {lo * third, lo * third * third}, c.points);
    bracket(c);
  }
  if (options.confirm_s > options.serve.duration_s) {
    ServeOptions longer = options.serve;
    longer.drain = true;
    longer.duration_s = options.confirm_s;
    confirm_largest(c, options.min_within_sla, [&](const LoadPoint& p) {
      const WorkloadSpec scaled = at_rate(workload, p.sessions_per_s, {"", 0, "--rate-factors"});
      return serve_deployment(steps.gpus, steps.steps, model, deployment, scaled, longer);
    });
  }
  return c;
}

void confirm_largest(LoadCapacity& capacity, double min_within_sla,
                     const std::function<ServedRun(const LoadPoint&)>& serve_again) {
  for (std::size_t i = capacity.points.size(); i-- > 0;) {
    LoadPoint& p = capacity.points[i];
    if (!p.meets_sla) continue;
    p.confirmation = serve_again(p);
    p.confirmation_holds = p.confirmation->holds_sla(min_within_sla);
    if (p.confirmation_holds) {
      capacity.largest_holding = i;
      return;
    }
  }
}

}  // namespace v41sim
