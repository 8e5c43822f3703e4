// Views of `v41sim context`: one deployment's sessions from 8K to 1M tokens,
// as a table (CLI and report) or one JSON object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/costing/context_sweep.h"
#include "sim/report/table.h"

namespace v41sim {

Table context_table(const std::string& model, const ContextSweep& sweep);
nlohmann::json context_json(const std::string& model, const ContextSweep& sweep);

}  // namespace v41sim
