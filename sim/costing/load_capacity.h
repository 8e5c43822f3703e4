// LoadCapacity: how much traffic one deployment serves within its SLA, the
// capacity engineer's question ("how many sessions per second do 8 x H200
// take before TTFT or TPOT break?", or for a closed loop "how many requests
// in flight?"). The workload's load (its arrival rate, or a closed loop's
// sessions at a time) is scaled (its sessions, turns and think times stay as
// the file draws them, with the same seed at every load), each load is served
// and drained, and it meets the SLA when at least `min_within_sla` of the
// requests that arrived finished within its TTFT and TPOT limits. A geometric
// sweep brackets the largest such load; the bracket is then cut in three (in
// log space, two runs at a time: a fixed schedule, so the answer does not
// depend on the cores; a closed loop's to whole sessions) until its ends are
// within `precision` of each other (or, whole, next to each other). With a
// longer confirmation window the meeting loads are served again over it,
// largest first, until one holds; the bracket between that load and the next
// above it is then cut the same way, each new load served over both windows.
// The code says "rate" for either.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "sim/common/catalog.h"
#include "sim/costing/confirmation.h"
#include "sim/costing/served_run.h"
#include "sim/costing/shared_step_times.h"
#include "sim/model/model_analysis.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/workload_spec.h"

namespace v41sim {

struct LoadOptions {
  ServeOptions serve;  // duration and seed of each rate's run (drained)
  double min_within_sla = 0.99;
  // The sweep: these multiples of the workload's own rate, then the search
  // until the bracket's ends are within this ratio less one.
  std::vector<double> rate_factors{0.25, 0.5, 1, 2, 4, 8};
  double precision = 0.05;
  // Longer than serve.duration_s: the rates that met the SLA are served again
  // over this window, largest first, until one meets it there with its window
  // settled (confirm_largest), then the rates between it and the next that
  // did not, to the same precision. Near its capacity a deployment can meet
  // the SLA for minutes while its queue creeps.
  double confirm_s = 0;
};

struct LoadPoint {
  double load = 0;  // sessions/s, or a closed loop's sessions at a time (load_of)
  ServedRun run;
  bool meets_sla = false;
  std::optional<ServedRun> confirmation;  // where confirm_largest asked
  bool confirmation_holds = false;        // met the SLA over it, its window's second half settled
};

struct LoadCapacity {
  // Why a variant of a grid the model cannot run (it does not fit, its EP
  // size does not deal the experts) was not served; empty where it ran. Its
  // points are empty then.
  std::string not_run;
  bool whole_loads = false;       // a closed loop's: the search takes whole sessions at a time
  std::vector<LoadPoint> points;  // every rate served, slowest first
  // The largest rate that met the SLA and the smallest above it that did
  // not: the capacity lies between them. Empty where no rate met it (below
  // the sweep) or every rate did (above it).
  std::optional<std::size_t> largest_meeting;
  std::optional<std::size_t> smallest_failing_above;
  // Of the meeting rates, the largest that held the SLA over the longer
  // window (confirm_largest); empty where none was asked or none held. The
  // smallest rate above it that did not (missed the SLA over either window):
  // the sustained capacity lies between them.
  std::optional<std::size_t> largest_holding;
  std::optional<std::size_t> smallest_not_holding_above;
};

// Serves the rates that met the SLA again with `serve_again`, largest first,
// two at a time (confirm_two_at_a_time), until one meets it over that run
// with its second half settled (its first may still fill up:
// SteadyState::tail_steady).
void confirm_largest(LoadCapacity& capacity, double min_within_sla,
                     const std::function<ServedRun(const LoadPoint&)>& serve_again);

// Serves one rate: its LoadPoint.
using ServeRate = std::function<LoadPoint(double load)>;

// After confirm_largest: cuts the bracket between the largest rate that
// held and the smallest above it that did not in three (in log space, two
// rates at a time) until its ends are within `precision` of each other.
// `serve_both` serves each new rate over the shorter window and, where it
// meets the SLA there, over the longer one (confirm), so every point reads
// alike. The indices are set again: the new points move them.
void narrow_holding(LoadCapacity& capacity, double precision, const ServeRate& serve_both);

// Throws InputError for a share outside (0, 1], a precision not above 0 or
// factors that are not positive (a trace's rows come at their times scaled
// to each rate: at_rate in workload_spec.h).
// Every rate shares the deployment's step times: in `shared` where given (a
// caller asking about several deployments that time steps alike), else in
// the search's own.
LoadCapacity find_load_capacity(const Catalog& catalog, const ModelAnalysis& model,
                                const DeploymentSpec& deployment, const WorkloadSpec& workload,
                                const LoadOptions& options, SharedStepTimes* shared = nullptr);
// Each deployment's, searched side by side (a search spends much of its time
// on runs one after another: the confirmation walk), in the deployments' order.
// A deployment whose layout the model cannot run (layout_refusals) keeps the
// reason in not_run, as plan keeps it in its row; where none can run, the
// first one's InputError is thrown.
std::vector<LoadCapacity> find_load_capacities(const Catalog& catalog, const ModelAnalysis& model,
                                               const std::vector<DeploymentSpec>& deployments,
                                               const WorkloadSpec& workload, const LoadOptions& options,
                                               SharedStepTimes* shared = nullptr);

}  // namespace v41sim
