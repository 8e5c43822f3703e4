#include "sim/costing/load_capacity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/common/input_error.h"
#include "sim/common/parallel_for.h"
#include "sim/costing/layout_refusal.h"
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
  // A trace swept faster ends sooner: at the largest factor its last row must
  // still come after the warm-up (the run would refuse it, naming no rate).
  if (workload.arrival == WorkloadSpec::Arrival::kTrace && !workload.trace.empty()) {
    const double fastest = *std::max_element(o.rate_factors.begin(), o.rate_factors.end());
    const WorkloadSpec scaled = at_load(workload, load_of(workload) * fastest, {"", 0, "--rate-factors"});
    const double last_s = scaled.trace.back().time_s;
    const double warm_up_s = warm_up_of(o.serve, workload);
    if (warm_up_s > 0 && last_s <= warm_up_s) {
      throw InputError(
          {"", 0, "--warm-up"},
          fmt::format("at {} ({:g} x the trace's rate, the largest --rate-factors) the trace's "
                      "last row comes at {:g} s: a warm-up of {:g} s leaves no arrival to measure "
                      "(expected a warm-up under {:g} s, or smaller --rate-factors)",
                      load_text(workload, load_of(workload) * fastest), fastest, last_s, warm_up_s, last_s));
    }
  }
}

// Serves each rate (in parallel: each run has its own simulation, the step
// times are shared) and adds the points, slowest first.
void add_points(std::vector<LoadPoint>& points, const std::vector<double>& rates, const ServeRate& serve) {
  std::vector<LoadPoint> added(rates.size());
  parallel_for(rates.size(), [&](std::size_t i) { added[i] = serve(rates[i]); });
  for (LoadPoint& p : added) points.push_back(std::move(p));
  std::stable_sort(points.begin(), points.end(),
                   [](const LoadPoint& a, const LoadPoint& b) { return a.load < b.load; });
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

// The loads that cut (lo, hi) in three in log space; whole, rounded, and only
// those strictly between (none once lo and hi are next to each other).
std::vector<double> thirds(double lo, double hi, bool whole) {
  const double third = std::cbrt(hi / lo);
  std::vector<double> cuts{lo * third, lo * third * third};
  if (!whole) return cuts;
  std::vector<double> out;
  for (const double cut : cuts) {
    const double n = std::round(cut);
    if (n > lo && n < hi && (out.empty() || n != out.back())) out.push_back(n);
  }
  if (out.empty() && hi - lo > 1) out.push_back(lo + 1);  // close together: the next above lo
  return out;
}

// Cuts the bracket of `ok` in three (in log space, two rates at a time: a
// fixed schedule, so the answer does not depend on the cores) until its ends
// are within `precision` of each other, or whole and next to each other.
Bracket narrow(std::vector<LoadPoint>& points, double precision, bool whole,
               const std::function<bool(const LoadPoint&)>& ok, const ServeRate& serve) {
  Bracket b = bracket_by(points, ok);
  while (b.lo && b.hi) {
    const double lo = points[*b.lo].load;
    const double hi = points[*b.hi].load;
    if (hi / lo <= 1.0 + precision) break;
    const std::vector<double> cuts = thirds(lo, hi, whole);
    if (cuts.empty()) break;
    add_points(points, cuts, serve);
    b = bracket_by(points, ok);
  }
  return b;
}

// The sweep: the workload's own load times each factor; whole loads rounded
// (at least one session at a time), each once.
std::vector<double> sweep_of(const WorkloadSpec& workload, const std::vector<double>& factors) {
  std::vector<double> sweep;
  for (const double f : factors) {
    const double load = load_of(workload) * f;
    sweep.push_back(whole_loads(workload) ? std::max(1.0, std::round(load)) : load);
  }
  if (whole_loads(workload)) {
    std::sort(sweep.begin(), sweep.end());
    sweep.erase(std::unique(sweep.begin(), sweep.end()), sweep.end());
  }
  return sweep;
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
  const auto serve_over = [&](double load, const ServeOptions& window) {
    const WorkloadSpec scaled = at_load(workload, load, {"", 0, "--rate-factors"});
    return serve_deployment(steps.gpus, steps.steps, model, deployment, scaled, window);
  };
  const ServeRate serve = [&](double load) {
    LoadPoint p;
    p.load = load;
    p.run = serve_over(load, drained);
    p.meets_sla = p.run.meets_sla(options.min_within_sla);
    return p;
  };
  LoadCapacity c;
  c.whole_loads = whole_loads(workload);
  add_points(c.points, sweep_of(workload, options.rate_factors), serve);
  const Bracket met = narrow(c.points, options.precision, c.whole_loads, meets, serve);
  c.largest_meeting = met.lo;
  c.smallest_failing_above = met.hi;
  if (const std::optional<ServeOptions> longer = confirmation_window(drained, options.confirm_s)) {
    const std::function<ServedRun(const LoadPoint&)> serve_longer = [&](const LoadPoint& p) {
      return serve_over(p.load, *longer);
    };
    confirm_largest(c, options.min_within_sla, serve_longer);
    narrow_holding(c, options.precision, [&](double load) {
      LoadPoint p = serve(load);
      if (p.meets_sla) confirm_served_again(p, options.min_within_sla, serve_longer);
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
  SharedStepTimes& sharing = shared != nullptr ? *shared : own;
  const std::vector<std::optional<std::string>> refusals = layout_refusals(catalog, model, deployments);
  std::vector<LoadCapacity> capacities(deployments.size());
  for (std::size_t i = 0; i < deployments.size(); ++i) capacities[i].not_run = refusals[i].value_or("");
  parallel_for(deployments.size(), [&](std::size_t i) {
    if (capacities[i].not_run.empty())
      capacities[i] = find_load_capacity(catalog, model, deployments[i], workload, options, &sharing);
  });
  return capacities;
}

void narrow_holding(LoadCapacity& capacity, double precision, const ServeRate& serve_both) {
  const Bracket held = narrow(capacity.points, precision, capacity.whole_loads, holds, serve_both);
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
