#include "sim/costing/load_capacity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <utility>

#include "sim/common/input_error.h"
#include "sim/common/parallel_for.h"
#include "sim/costing/shared_step_times.h"

namespace v41sim {
namespace {

void require_valid(const WorkloadSpec& workload, const LoadOptions& o) {
  if (workload.arrival == WorkloadSpec::Arrival::kClosedLoop) {
    throw InputError(
        workload.concurrency_where,
        fmt::format("capacity scales an arrival rate, which the closed loop '{}' does not have: its "
                    "load is its {} sessions at a time (run or plan it with --concurrency)",
                    workload.name, workload.concurrency));
  }
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
// times are shared) and adds the points, slowest first.
void add_points(std::vector<LoadPoint>& points, const std::vector<double>& rates, const ServeRate& serve) {
  std::vector<LoadPoint> added(rates.size());
  parallel_for(rates.size(), [&](std::size_t i) { added[i] = serve(rates[i]); });
  for (LoadPoint& p : added) points.push_back(std::move(p));
  std::stable_sort(points.begin(), points.end(), [](const LoadPoint& a, const LoadPoint& b) {
    return a.sessions_per_s < b.sessions_per_s;
  });
}

// The largest rate where `ok` holds and the smallest above it where it does
// not: the limit lies between them.
struct Bracket {
  std::optional<std::size_t> lo, hi;
};

Bracket bracket_by(const std::vector<LoadPoint>& points, const std::function<bool(const LoadPoint&)>& ok) {
  Bracket b;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (ok(points[i])) b.lo = i;
  }
  for (std::size_t i = b.lo ? *b.lo + 1 : 0; i < points.size(); ++i) {
    if (!ok(points[i])) {
      b.hi = i;
      break;
    }
  }
  return b;
}

// Cuts the bracket of `ok` in three (in log space, two rates at a time: a
// fixed schedule, so the answer does not depend on the cores) until its ends
// are within `precision` of each other.
Bracket narrow(std::vector<LoadPoint>& points, double precision,
               const std::function<bool(const LoadPoint&)>& ok, const ServeRate& serve) {
  Bracket b = bracket_by(points, ok);
  while (b.lo && b.hi) {
    const double lo = points[*b.lo].sessions_per_s;
    const double hi = points[*b.hi].sessions_per_s;
    if (hi / lo <= 1.0 + precision) break;
    const double third = std::cbrt(hi / lo);
    add_points(points, {lo * third, lo * third * third}, serve);
    b = bracket_by(points, ok);
  }
  return b;
}

bool meets(const LoadPoint& p) { return p.meets_sla; }
bool holds(const LoadPoint& p) { return p.confirmation_holds; }

}  // namespace

LoadCapacity find_load_capacity(const Catalog& catalog, const ModelAnalysis& model,
                                const DeploymentSpec& deployment, const WorkloadSpec& workload,
                                const LoadOptions& options, SharedStepTimes* shared) {
  require_valid(workload, options);
  SharedStepTimes own(catalog, model);
  const DeploymentSteps& steps = (shared != nullptr ? *shared : own).of(deployment);
  ServeOptions drained = options.serve;
  drained.drain = true;
  const auto serve_over = [&](double sessions_per_s, const ServeOptions& window) {
    const WorkloadSpec scaled = at_rate(workload, sessions_per_s, {"", 0, "--rate-factors"});
    return serve_deployment(steps.gpus, steps.steps, model, deployment, scaled, window);
  };
  const ServeRate serve = [&](double sessions_per_s) {
    LoadPoint p;
    p.sessions_per_s = sessions_per_s;
    p.run = serve_over(sessions_per_s, drained);
    p.meets_sla = p.run.meets_sla(options.min_within_sla);
    return p;
  };
  LoadCapacity c;
  std::vector<double> sweep;
  for (const double f : options.rate_factors) sweep.push_back(workload.sessions_per_s * f);
  add_points(c.points, sweep, serve);
  const Bracket met = narrow(c.points, options.precision, meets, serve);
  c.largest_meeting = met.lo;
  c.smallest_failing_above = met.hi;
  if (const std::optional<ServeOptions> longer = confirmation_window(drained, options.confirm_s)) {
    confirm_largest(c, options.min_within_sla,
                    [&](const LoadPoint& p) { return serve_over(p.sessions_per_s, *longer); });
    narrow_holding(c, options.precision, [&](double sessions_per_s) {
      LoadPoint p = serve(sessions_per_s);
      if (p.meets_sla) confirm(p, options.min_within_sla, serve_over(sessions_per_s, *longer));
      return p;
    });
  }
  return c;
}

std::vector<LoadCapacity> find_load_capacities(const Catalog& catalog, const ModelAnalysis& model,
                                               const std::vector<DeploymentSpec>& deployments,
                                               const WorkloadSpec& workload, const LoadOptions& options,
                                               SharedStepTimes* shared) {
  SharedStepTimes own(catalog, model);
  std::vector<LoadCapacity> capacities(deployments.size());
  parallel_for(deployments.size(), [&](std::size_t i) {
    capacities[i] = find_load_capacity(catalog, model, deployments[i], workload, options,
                                       shared != nullptr ? shared : &own);
  });
  return capacities;
}

void narrow_holding(LoadCapacity& capacity, double precision, const ServeRate& serve_both) {
  const Bracket held = narrow(capacity.points, precision, holds, serve_both);
  capacity.largest_holding = held.lo;
  capacity.smallest_not_holding_above = held.hi;
  const Bracket met = bracket_by(capacity.points, meets);  // the new points moved the indices
  capacity.largest_meeting = met.lo;
  capacity.smallest_failing_above = met.hi;
}

void confirm_largest(LoadCapacity& capacity, double min_within_sla,
                     const std::function<ServedRun(const LoadPoint&)>& serve_again) {
  std::vector<LoadPoint*> meeting;  // largest first
  for (auto p = capacity.points.rbegin(); p != capacity.points.rend(); ++p) {
    if (p->meets_sla) meeting.push_back(&*p);
  }
  if (const auto held = confirm_two_at_a_time(meeting, min_within_sla, serve_again))
    capacity.largest_holding = static_cast<std::size_t>(meeting[*held] - capacity.points.data());
}

}  // namespace v41sim
