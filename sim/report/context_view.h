// Views of `v41sim context`: one deployment's sessions from 8K to 1M tokens,
// as a table (CLI and report) or one JSON object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/costing/context_sweep.h"
#include "sim/report/table.h"

namespace v41sim {

Table context_table(const std::string& model, const ContextSweep& sweep);
nlohmann::json context_json(const std::string& model, const ContextSweep& sweep);

// Charts (SVG) of several sweeps, one colour per sweep against session length:
// $ per 1M output tokens (prompt included solid, decode only dashed), and
// sessions per decode GPU (solid) with the decode batch within TPOT (dashed).
std::string context_cost_svg(const std::string& model, const std::vector<ContextSweep>& sweeps);
std::string context_capacity_svg(const std::string& model, const std::vector<ContextSweep>& sweeps);

}  // namespace v41sim
