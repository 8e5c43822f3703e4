// Views of one ModelAnalysis for the `kv` and `params` commands and the report:
// the same figures as tables (text / Markdown) and as JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "sim/model/model_analysis.h"
#include "sim/report/table.h"

namespace v41sim {

// Per-layer KV table and the totals at `context_tokens`.
std::vector<Table> kv_tables(const ModelAnalysis& model, int64_t context_tokens);
nlohmann::json kv_json(const ModelAnalysis& model, int64_t context_tokens);

// Total and active parameters, weight bytes by precision, GPU vs host.
std::vector<Table> params_tables(const ModelAnalysis& model);
nlohmann::json params_json(const ModelAnalysis& model);

}  // namespace v41sim
