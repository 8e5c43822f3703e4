// Views of `v41sim capacity`: every arrival rate served, slowest first, and
// the largest one within the SLA (bracketed), as a table, one JSON object or
// a chart of the latencies against the rate.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/costing/load_capacity.h"
#include "sim/report/table.h"

namespace v41sim {

struct CapacityReport {
  const std::string& model;
  const DeploymentSpec& deployment;
  const WorkloadSpec& workload;
  const LoadOptions& options;
  const LoadCapacity& capacity;
};

// One report per deployment, on the capacity found for it (same order); the
// reports refer to the arguments, which must outlive them.
std::vector<CapacityReport> capacity_reports(const std::string& model,
                                             const std::vector<DeploymentSpec>& deployments,
                                             const WorkloadSpec& workload, const LoadOptions& options,
                                             const std::vector<LoadCapacity>& capacities);

// Every rate one deployment ran (not for one that could not run: the
// summary and the verdict say why).
Table capacity_table(const CapacityReport& r);
nlohmann::json capacity_json(const CapacityReport& r);
// The answer in one line ("... sessions/s: between X and Y ...").
std::string capacity_verdict(const CapacityReport& r);
// Several deployments side by side: each one's largest rate within its SLA
// and what it delivers there (throughput per GPU, $ per output token).
Table capacity_summary_table(const std::vector<CapacityReport>& reports);
// A chart of every rate each deployment ran: its TTFT and TPOT p99 (the mean
// over its seeds) over the SLA's limit for each, against sessions/s, with
// the limit drawn at 1: where each deployment's latency breaks, side by side.
std::string capacity_svg(const std::vector<CapacityReport>& reports);

}  // namespace v41sim
