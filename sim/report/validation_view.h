// The `validate` table and JSON: predicted vs published, error, tolerance.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "sim/report/table.h"
#include "sim/validation/error_stats.h"
#include "sim/validation/published_reference.h"

namespace v41sim {

Table validation_table(const std::vector<ValidationRow>& rows);
// Per probe kind (what the reference exercises: gemm, attention, all_to_all,
// ...): MAPE, worst error, bias and the 90th percentile of |error|, over all
// and over the out-of-sample references alone.
Table validation_summary_table(const std::vector<ValidationRow>& rows);
nlohmann::json validation_json(const std::vector<ValidationRow>& rows);
// An ErrorStats as JSON: count, mape_pct, worst_pct, bias_pct, band_90_pct.
nlohmann::json stats_json(const ErrorStats& s);

}  // namespace v41sim
