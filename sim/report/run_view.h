// Views of a serving run for `v41sim run`: tables and one JSON object.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "sim/costing/served_run.h"
#include "sim/costing/serving_cost.h"
#include "sim/report/table.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/serving_result.h"
#include "sim/serving/workload_spec.h"

namespace v41sim {

struct RunReport {
  const std::string& model;
  const DeploymentSpec& deployment;
  const WorkloadSpec& workload;
  const std::string& kernel_model;  // calibration label
  uint64_t seed;
  const ServingResult& result;
  const ServingCost& cost;
};

std::vector<Table> run_tables(const RunReport& r);
nlohmann::json run_json(const RunReport& r);

// For tables that compare served runs (the report's serving sections, plan):
// the $ per 1M output tokens cell ("unknown" without a public GPU price); the
// run's kernel-model labels added to `labels` unless already there; and the
// notes naming those kernel models and how the $ figure is charged.
std::string output_token_price(const ServingCost& cost);
void collect_kernel_models(const ServedRun& run, std::vector<std::string>& labels);
void add_served_run_notes(Table& table, const std::vector<std::string>& kernel_models);
// What the KV tiers found over a run (hits, misses, window-state evictions).
nlohmann::json kv_tiers_json(const KvTierCounters& counters);

}  // namespace v41sim
