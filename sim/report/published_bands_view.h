// The bands the published priors carry (published_band_derivation.h): per
// kernel class, how wrong the priors are on the published figures of their
// architecture, and whether figures on other architectures fall inside the
// band carried to them.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/report/table.h"
#include "sim/validation/published_band_derivation.h"

namespace v41sim {

Table published_bands_table(const PublishedBandDerivation& derivation);
nlohmann::json published_bands_json(const PublishedBandDerivation& derivation);

}  // namespace v41sim
