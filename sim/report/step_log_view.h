// Views of `v41sim step-log`: an engine's logged steps against the kernel
// model, by phase, and the steps it is furthest from (or, where the log gives
// no times, the first steps as timed); and as JSON, every step.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/hw/gpu_profile.h"
#include "sim/report/table.h"
#include "sim/validation/step_log_comparison.h"

namespace v41sim {

struct StepLogReport {
  const StepLog& log;
  const StepLogComparison& comparison;
  const GpuProfile& gpu;
  std::string cost_label;  // the kernel model's provenance (KernelCostParams::label)
  std::string settings;    // the deployment every row runs on, in words
};

std::vector<Table> step_log_tables(const StepLogReport& r);
nlohmann::json step_log_json(const StepLogReport& r);

}  // namespace v41sim
