// Views of one ModelAnalysis for the `kv` and `params` commands and the report:
// the same figures as tables (text / Markdown) and as JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/model/model_analysis.h"
#include "sim/report/table.h"

namespace v41sim {

// Per-layer KV table and the totals at `context_tokens`.
std::vector<Table> kv_tables(const ModelAnalysis& model, int64_t context_tokens);
nlohmann::json kv_json(const ModelAnalysis& model, int64_t context_tokens);

// One of the model's other index-key formats (other_index_key_formats), as
// every output names it: "index_key_fp8 (132 B a key, where the model's are
// 68 B)", the file's source for it inside the brackets where `with_source`.
std::string index_key_format_text(const ModelSpec& spec, const std::string& format, bool with_source);

// Total and active parameters, weight bytes by precision, GPU vs host.
std::vector<Table> params_tables(const ModelAnalysis& model);
nlohmann::json params_json(const ModelAnalysis& model);

}  // namespace v41sim
